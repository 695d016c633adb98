"""Verdicts per business key, from the ground truth only (Jepsen's checker, kept apart).

Inputs are plain data (``Evidence``): the provider's commits for the key, the sender's
history, the workflow ledger's state, and the fault journal's proof that the fault landed.
The oracle starts nothing and reaches into nothing; a saved evidence file can be re-judged.

Verdicts, in order of precedence:
- NO_EVIDENCE: the fault never landed in its window. A harness error, never a pass.
- DUPLICATE:   commits >= 2. Always fatal for an exactly-once or at-most-once promise.
- LOST:        the sender got a 2xx (ok) and there are 0 commits.
- UNRECONCILED: the workflow's ledger still says the outcome is unknown / in flight.
- PASS:        none of the above.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

# Ledger states that mean "nobody knows yet whether the effect happened", unless the
# workflow's manifest names its own (ledger.unknown_states).
UNRESOLVED_LEDGER_STATES = frozenset({"unknown", "claimed", "sending", "pending", "processing"})


class Verdict(StrEnum):
    PASS = "PASS"
    DUPLICATE = "DUPLICATE"
    LOST = "LOST"
    UNRECONCILED = "UNRECONCILED"
    NO_EVIDENCE = "NO-EVIDENCE"

    @property
    def caught(self) -> bool:
        """A verdict that shows a broken effect (what the naive workflow must produce)."""
        return self in (Verdict.DUPLICATE, Verdict.LOST)


@dataclass(frozen=True)
class CommitRow:
    effect_id: str
    attempt_no: int
    committed_at: float
    idempotency_key: str | None


@dataclass(frozen=True)
class Evidence:
    key: str
    commits: list[CommitRow]
    acknowledged: bool  # at least one ok attempt in the history
    attempts_ok: int
    attempts_info: int
    attempts_fail: int
    ledger_state: str | None
    ledger_unresolved_states: list[str]  # states of the workflow's ledger that mean "unknown"
    fault_landed: bool
    landing_proof: str
    execution_ids: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Evidence:
        return cls(**{**doc, "commits": [CommitRow(**c) for c in doc["commits"]]})


@dataclass(frozen=True)
class Judgement:
    verdict: Verdict
    explanation: str


def judge(evidence: Evidence) -> Judgement:
    e = evidence
    n = len(e.commits)
    commits = (
        ", ".join(
            f"{c.effect_id} (provider attempt {c.attempt_no}, at {c.committed_at:.3f})"
            for c in e.commits
        )
        or "none"
    )
    where = f"key {e.key}: commits [{commits}]; executions {e.execution_ids or 'none'}"
    if not e.fault_landed:
        return Judgement(Verdict.NO_EVIDENCE, f"the fault did not land: {e.landing_proof}; {where}")
    if n >= 2:
        return Judgement(Verdict.DUPLICATE, f"{n} commits for one business event; {where}")
    if n == 0 and e.acknowledged:
        return Judgement(Verdict.LOST, f"the sender got a 2xx but nothing was committed; {where}")
    if e.ledger_state is not None and e.ledger_state in e.ledger_unresolved_states:
        return Judgement(
            Verdict.UNRECONCILED,
            f"the workflow ledger still says {e.ledger_state!r} and nothing resolved it; {where}",
        )
    ack = "acknowledged" if e.acknowledged else "never acknowledged to the sender"
    return Judgement(Verdict.PASS, f"{n} commit(s), {ack}; {where}")
