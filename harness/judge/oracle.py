"""Verdicts per business key, from saved evidence only (Jepsen's checker, kept apart).

The oracle is pure: ``judge(Evidence)`` reads plain data (the provider's commits, the sender's
history, the workflow ledger, the proofs that the fault landed, whether the case settled) and
starts nothing. A saved ``evidence.json`` can be re-judged offline with the current oracle.

A definite violation that the ground truth shows outranks everything else, also a fault that
did not land (then the explanation says so), but for a stack that did not run the case's
scenario (a ``stack`` proof that failed: a stall no fault provoked), which makes the try
NO-EVIDENCE whatever it showed. The verdicts, in order of precedence, with their
meanings: ``harness.judge.verdicts`` (``n8n-chaos list --verdicts``); this module decides when each
is given.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields
from typing import Any

# Re-exported: `from harness.judge.oracle import Verdict` keeps working.
from harness.judge.verdicts import Verdict as Verdict

# Ledger states that mean "nobody knows yet whether the effect happened", unless the
# workflow's manifest names its own (ledger.unknown_states).
UNRESOLVED_LEDGER_STATES = ("unknown", "claimed", "sending", "pending", "processing")

VIOLATIONS = frozenset(v for v in Verdict if v.violation)


@dataclass(frozen=True)
class CommitRow:
    effect_id: str
    attempt_no: int
    committed_at: float
    idempotency_key: str | None
    reference: str = ""
    effect: str = "charge"


@dataclass(frozen=True)
class AttemptRow:
    """One attempt of the sender, as the oracle needs it."""

    delivery: str  # "d1", "dup3", "late", "changed", ...
    outcome: str  # ok | fail | info
    status: int | None
    effect_id: str | None = None  # from the 2xx body, when the manifest says where it is
    changed_payload: bool = False  # sent with another payload than the original event


@dataclass(frozen=True)
class Proof:
    """A fact outside the harness's own notes that a plug-in's window was hit (or not)."""

    role: str  # fault | crashpoint | delivery
    name: str
    held: bool
    fact: str


@dataclass(frozen=True)
class Evidence:
    key: str
    promise: str  # exactly_once | at_most_once | none
    effect: str  # the provider effect kind the workflow performs: charge | email
    commits: list[CommitRow]  # commits for the key and the effect
    attempts: list[AttemptRow]
    proofs: list[Proof]
    stray_commits: list[CommitRow] = field(default_factory=list)
    declined: bool = False  # the provider definitely refused the effect (a stored decline)
    # What the provider answered the effect requests it refused as bad (a 4xx, not a
    # decline): "404 No such payment_intent: 'pi_1'".
    rejections: list[str] = field(default_factory=list)
    # The workflow answers "accepted" before its work: a 2xx then promises the effect will
    # happen (LOST if it never does), not that a given payload was charged.
    acknowledges_early: bool = False
    effects_per_event: int = 1  # one event, this many effects of each kind (line items)
    # Effects the service changed in place after their commit (an upsert to the same record).
    updated_effects: list[str] = field(default_factory=list)
    effect_possible: bool = True  # False when the scenario makes the provider fail every try
    ledger_state: str | None = None
    ledger_done_state: str | None = None
    ledger_unknown_states: list[str] = field(default_factory=list)
    ledger_failed_states: list[str] = field(default_factory=list)
    error_workflow_runs: int | None = None  # None: the scenario does not check it
    settled: bool = True
    live_executions: list[str] = field(default_factory=list)
    execution_ids: list[str] = field(default_factory=list)
    # The control case: nothing was broken, so the effect must happen whatever the promise.
    control: bool = False
    # What n8n says stopped a failed execution ("node 'Charge' failed: ..."), one line each.
    node_failures: list[str] = field(default_factory=list)
    # Requests of the workflow that the intercepting proxy refused (no fake for their host).
    refused_requests: list[str] = field(default_factory=list)

    @property
    def acknowledged(self) -> bool:
        return any(a.outcome == "ok" and not a.changed_payload for a in self.attempts)

    @property
    def fault_landed(self) -> bool:
        return all(p.held for p in self.proofs)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Evidence:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in doc.items() if k in known}
        values["commits"] = [CommitRow(**c) for c in doc["commits"]]
        values["stray_commits"] = [CommitRow(**c) for c in doc.get("stray_commits", [])]
        values["attempts"] = [AttemptRow(**a) for a in doc["attempts"]]
        values["proofs"] = [Proof(**p) for p in doc["proofs"]]
        return cls(**values)


@dataclass(frozen=True)
class Judgement:
    verdict: Verdict
    explanation: str


def judge(evidence: Evidence) -> Judgement:
    e = evidence
    where = _where(e)
    unproven = [p for p in e.proofs if not p.held]
    caveat = (
        "; and the intended fault was not proven to land (" + _facts(unproven) + ")"
        if unproven
        else ""
    )
    starved = [p for p in e.proofs if p.role == "stack" and not p.held]
    if starved:  # not the case's scenario: even a violation it shows is not the case's
        seen = _definite(e)
        also = f"; it showed {seen[0].value} ({seen[1]})" if seen else ""
        return Judgement(
            Verdict.NO_EVIDENCE,
            f"the stack did not run the case's scenario: {_facts(starved)}{also}; {where}",
        )
    found = _definite(e)
    if found is None and not e.settled:
        live = ", ".join(e.live_executions) or "?"
        return Judgement(
            Verdict.STUCK,
            f"the case never settled: executions {live} still live at the deadline "
            f"(an n8n finding); {where}{caveat}",
        )
    found = found or _settled_only(e)
    if found is not None:
        verdict, why = found
        return Judgement(verdict, f"{why}; {where}{caveat}")
    if unproven:
        return Judgement(
            Verdict.NO_EVIDENCE,
            f"the case's window was not proven: {_facts(unproven)}; {where}",
        )
    ack = "acknowledged" if e.acknowledged else "never acknowledged to the sender"
    landed = _facts(e.proofs)
    return Judgement(Verdict.PASS, f"{len(e.commits)} commit(s), {ack}; proven: {landed}; {where}")


def _definite(e: Evidence) -> tuple[Verdict, str] | None:
    """Violations that no later work can undo: commits never disappear, answers were given."""
    # Per effect kind: a workflow that creates a customer and then a payment for one order
    # made two effects once each, not one effect twice.
    kind, n = Counter(c.effect for c in e.commits).most_common(1)[0] if e.commits else ("", 0)
    if n > e.effects_per_event:
        return Verdict.DUPLICATE, f"{n} {kind} commits for one business event{_items(e, n)}"
    if e.stray_commits:
        stray = ", ".join(f"{c.effect_id} ({c.effect}, ref {c.reference})" for c in e.stray_commits)
        hint = ""
        if any(e.key in str(c.reference) for c in e.stray_commits):
            # The workflow's own effect, read with the wrong boundaries: say how to read it.
            hint = (
                f" (a reference holds the case's key {e.key} inside a longer value: give the"
                " upstream's reference a regex with one group around the key)"
            )
        return Verdict.STRAY, f"commits nobody accounts for during the case: {stray}{hint}"
    original = [a for a in e.attempts if not a.changed_payload]
    if n >= 1 and not e.acknowledged and any(a.outcome == "fail" for a in original):
        failed = _statuses(a for a in original if a.outcome == "fail")
        return Verdict.CONTRADICTED, f"the sender was told 'failed' ({failed}) but it committed"
    committed_ids = {c.effect_id for c in e.commits}
    for a in original:
        if a.outcome == "ok" and a.effect_id is not None and a.effect_id not in committed_ids:
            return (
                Verdict.CONTRADICTED,
                f"a 2xx named effect {a.effect_id}, but the provider committed "
                f"{sorted(committed_ids) or 'nothing'}",
            )
    changed_ok = any(a.outcome == "ok" for a in e.attempts if a.changed_payload)
    # An upsert applied the changed payload to the record the original made: no lie.
    if n <= e.effects_per_event and changed_ok and not (e.acknowledges_early or e.updated_effects):
        return (
            Verdict.CONTRADICTED,
            "the changed payload was answered 2xx, but the provider committed only the original"
            " (a reused key with another request must get a definite rejection, a 4xx)",
        )
    return None


def _items(e: Evidence, n: int) -> str:
    """Why n effects are more than the event makes, or a hint when they look like items."""
    if e.effects_per_event > 1:
        return f" that makes {e.effects_per_event}"
    keys = {c.idempotency_key for c in e.commits}
    if None not in keys and len(keys) == n:  # each its own key: items, or keys made anew
        return (
            f" (each with its own idempotency key; if one event makes {n} effects, e.g. one "
            "per line item, say so in the manifest's effects_per_event)"
        )
    return ""


def _settled_only(e: Evidence) -> tuple[Verdict, str] | None:
    """Verdicts that only hold once nothing is running any more."""
    n = len(e.commits)
    if n == 0 and e.acknowledged:
        # The ledger's word is a second lie here, not a second verdict: say it with the first.
        agrees = e.ledger_state is not None and e.ledger_state == e.ledger_done_state
        also = f" (and the ledger says {e.ledger_state!r})" if agrees else ""
        return Verdict.LOST, f"the sender got a 2xx but nothing was committed{also}"
    short = min(Counter(c.effect for c in e.commits).values(), default=0)
    if 0 < short < e.effects_per_event and (e.promise == "exactly_once" or e.control):
        told = "the sender got a 2xx" if e.acknowledged else "the sender was never told"
        verdict = Verdict.LOST if e.acknowledged else Verdict.NOT_DONE
        return (
            verdict,
            f"{told} but only {short} of the event's {e.effects_per_event} effects happened",
        )
    if e.ledger_state is not None:
        if e.ledger_state == e.ledger_done_state and n == 0:
            return Verdict.CONTRADICTED, f"the ledger says {e.ledger_state!r} with no commit"
        if e.ledger_state in e.ledger_failed_states and n >= 1:
            return Verdict.CONTRADICTED, f"the ledger says {e.ledger_state!r} but it committed"
    if n == 0 and e.node_failures and not e.fault_landed and e.effect_possible:
        # The workflow fails on its own before its effect (the window never opened): n8n
        # names the node, and that outranks the fault that found nothing to strike.
        return Verdict.NOT_DONE, "the workflow failed on its own before its effect"
    # Whatever a workflow promises under faults, with nothing broken it must do its work.
    promised = e.promise == "exactly_once" or e.control
    if n == 0 and promised and e.effect_possible and not e.declined:
        if e.rejections:
            refused = "; ".join(e.rejections)
            return Verdict.NOT_DONE, (
                f"the effect never happened: the provider refused its requests as bad ({refused})"
                ", which is no decline of the operation"
            )
        return Verdict.NOT_DONE, "the effect never happened and the provider never declined it"
    if e.error_workflow_runs is not None and e.error_workflow_runs != 1:
        return (
            Verdict.UNHANDLED,
            f"the Error Workflow ran {e.error_workflow_runs} time(s), not once",
        )
    if e.error_workflow_runs is not None and e.ledger_state not in e.ledger_failed_states:
        return (
            Verdict.UNHANDLED,
            f"after the Error Workflow the ledger says {e.ledger_state!r}, not one of the "
            f"failed (actionable) states {e.ledger_failed_states}",
        )
    if e.ledger_state is not None and e.ledger_state in e.ledger_unknown_states:
        return (
            Verdict.UNRECONCILED,
            f"the workflow ledger still says {e.ledger_state!r} and nothing resolved it",
        )
    original = [a for a in e.attempts if not a.changed_payload]
    if n >= 1 and e.promise == "exactly_once" and e.ledger_state is None and not e.acknowledged:
        # Its only record of the outcome is what the sender heard: "unknown, retry" to the
        # end leaves the operation as unresolved as a ledger that says unknown.
        heard = _statuses(original) or "no answer"
        refused = f"; the provider refused its later requests ({'; '.join(e.rejections)})"
        return (
            Verdict.UNRECONCILED,
            f"it committed, but the sender was never told so ({heard}) and no ledger row "
            f"records it: nothing resolves the operation{refused if e.rejections else ''}",
        )
    return None


def _statuses(attempts: Iterable[AttemptRow]) -> str:
    return ", ".join(f"{a.delivery}: {a.status}" for a in attempts)


def _facts(proofs: Iterable[Proof]) -> str:
    return "; ".join(f"{p.role} {p.name}: {p.fact}" for p in proofs) or "nothing to prove"


def _where(e: Evidence) -> str:
    commits = (
        ", ".join(f"{c.effect_id} (provider attempt {c.attempt_no})" for c in e.commits) or "none"
    )
    # None: the manifest names no state query, or the query found no row for the key.
    ledger = "no ledger row read" if e.ledger_state is None else f"ledger {e.ledger_state!r}"
    where = f"key {e.key}: commits [{commits}]; {ledger}; executions {e.execution_ids or 'none'}"
    if e.node_failures:
        where += f"; n8n: {'; '.join(e.node_failures)}"
    if e.refused_requests:
        where += f"; refused (no fake for the host): {', '.join(e.refused_requests)}"
    return where
