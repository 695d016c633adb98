"""What exploration found, said by node and request: one line per group of boundaries that
behave the same, its shortest reproduction, and the workflow's nodes as a strip with the
failing boundaries marked."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from harness.engine.crashpoints.explore_boundary import STRIKE_KINDS
from harness.explore.boundary import Boundary
from harness.explore.explorer import Exploration, Outcome
from harness.explore.plan import Probe
from harness.matrix.cases import scenario_id


def boundary_sentence(probe: Probe) -> str:
    """E.g. "killing the worker after the provider committed request 1 POST
    api.stripe.com/v1/payment_intents of node 'Create PaymentIntent' and before 'Update
    milestone' ran"."""
    b = probe.boundary
    r = b.request
    assert r is not None
    what = f"request {r.effect_index} {r.route} of node {r.node!r}"
    head = f"{STRIKE_KINDS[probe.strike].words} {what}"
    if probe.strike == "after_response":
        head += " reached it"
    after = f" and before {b.before_node!r} ran" if b.before_node else " (its last node)"
    return head + after


def consequence(explanation: str) -> str:
    """The oracle's reason, without its per-key details."""
    return explanation.split("; key ", 1)[0]


@dataclass(frozen=True)
class Group:
    """Boundaries whose probes ended alike: same strike, same verdict."""

    strike: str
    verdict: str
    outcomes: list[Outcome]

    @property
    def shortest(self) -> Outcome:
        return min(self.outcomes, key=lambda o: _index(o.probe.boundary))


def _index(b: Boundary) -> int:
    return (b.request.effect_index or 0) if b.request is not None else 0


def groups(outcomes: Iterable[Outcome]) -> list[Group]:
    """Broken windows (violations first, then the ones the promise allows), grouped."""
    found: dict[tuple[str, str], list[Outcome]] = {}
    for o in outcomes:
        if o.verdict is not None and o.verdict.violation:
            found.setdefault((o.probe.strike, o.verdict.value), []).append(o)
    made = [Group(s, v, os) for (s, v), os in found.items()]
    return sorted(made, key=lambda g: (not g.shortest.violation, _index(g.shortest.probe.boundary)))


def reproduction(outcome: Outcome, matrix_ids: Iterable[str], workflows_arg: str, key: str) -> str:
    """A command that runs this window again: the matrix case when it strikes the same
    window, else exploration of that one probe."""
    b = outcome.probe.boundary
    if b.request is not None and b.request.effect_index == 1:
        same = STRIKE_KINDS[outcome.probe.strike].matrix
        case_id = f"{outcome.probe.workflow}-{scenario_id(*same)}" if same else None
        if case_id in set(matrix_ids):
            return f"n8n-chaos run {workflows_arg}-k {case_id}".replace("  ", " ")
    return f"n8n-chaos explore {workflows_arg}--only {outcome.probe.selector}".replace("  ", " ")


# Marks on the strip: a window that breaks the workflow's promise, and one the promise allows.
VIOLATION_MARK = "✗"
WINDOW_MARK = "!"
STRIP_LINE = "  nodes: "


def broken_at(found: Exploration) -> dict[str, list[Outcome]]:
    """Each node that sent a request whose strike broke the effect, with those outcomes."""
    marks: dict[str, list[Outcome]] = {}
    for o in found.outcomes:
        r = o.probe.boundary.request
        if o.verdict is not None and o.verdict.violation and r is not None and r.node:
            marks.setdefault(r.node, []).append(o)
    return marks


def node_mark(outcomes: Iterable[Outcome]) -> str:
    return VIOLATION_MARK if any(o.violation for o in outcomes) else WINDOW_MARK


def strip(found: Exploration) -> str:
    """The nodes in run order, each node whose request opens a broken window marked:
    ``Webhook ─ Charge ✗ ─ Ledger ─ Respond`` (``!``: a window the promise allows)."""
    marks = broken_at(found)
    return " ─ ".join(
        f"{name} {node_mark(marks[name])}" if name in marks else name
        for name in found.trace.node_names()
    )


def strip_legend(found: Exploration) -> list[str]:
    """One line per marked node: which boundaries and strikes, with their verdicts."""
    return [
        f"{node_mark(outcomes)} {node}: "
        + ", ".join(f"{o.probe.boundary.id} {o.probe.strike} {_value(o)}" for o in outcomes)
        for node, outcomes in broken_at(found).items()
    ]


def _value(o: Outcome) -> str:
    return o.verdict.value if o.verdict is not None else "HARNESS-ERROR"


def report_lines(
    found: Exploration, matrix_ids: Iterable[str], workflows_arg: str = ""
) -> list[str]:
    trace = found.trace
    ids = list(matrix_ids)
    lines = [
        f"{trace.workflow}: {len(trace.nodes)} node runs, {len(trace.effect_requests)} effect "
        f"request(s), {len(trace.boundaries)} boundaries; control case {trace.control_verdict}",
    ]
    if (control := found.control_violation) is not None:
        lines.append(
            f"  VIOLATION {control.value} with nothing broken (the trace's control case): "
            f"{control.info.meaning}"
        )
    for group in groups(found.outcomes):
        best = group.shortest
        kind = "VIOLATION" if best.violation else f"window (allowed by promise {found.promise!r})"
        lines.append(
            f"  {kind} {group.verdict}: {boundary_sentence(best.probe)}: "
            f"{consequence(best.explanation)} (key {best.key})"
        )
        if len(group.outcomes) > 1:
            same = ", ".join(o.probe.boundary.id for o in group.outcomes)
            lines.append(f"    same at boundaries {same}")
        lines.append(f"    evidence {best.evidence}")
        lines.append(f"    reproduce: {reproduction(best, ids, workflows_arg, trace.key)}")
    held = [o for o in found.outcomes if o.verdict is not None and not o.verdict.violation]
    summary: dict[str, int] = {}
    for o in held:
        assert o.verdict is not None
        summary[o.verdict.value] = summary.get(o.verdict.value, 0) + 1
    errors = [o for o in found.outcomes if o.verdict is None]
    lines.append(
        "  covered: "
        + (", ".join(f"{n} {v}" for v, n in sorted(summary.items())) or "no clean probe")
        + (f", {len(errors)} harness error(s)" if errors else "")
        + f"; not run (budget): {len(found.not_run)}"
        + (f" ({', '.join(p.selector for p in found.not_run[:6])}...)" if found.not_run else "")
    )
    unstruck = [c.gap for c in found.gaps if not c.probes]
    if unstruck:
        names = "; ".join(f"{g.after_node!r}→{g.before_node!r}" for g in unstruck)
        lines.append(f"  NO-EVIDENCE (no outside part holds the worker there): gaps {names}")
    lines.append(STRIP_LINE + strip(found))
    lines += [f"         {line}" for line in strip_legend(found)]
    return lines


def to_json(
    found: Exploration, matrix_ids: Iterable[str], workflows_arg: str = ""
) -> dict[str, Any]:
    ids = list(matrix_ids)
    return {
        "workflow": found.trace.workflow,
        "promise": found.promise,
        "control_violation": None if (c := found.control_violation) is None else c.value,
        "trace": found.trace.to_json(),
        "outcomes": [
            {
                "boundary": o.probe.boundary.id,
                "strike": o.probe.strike,
                "case": o.case_id,
                "verdict": o.verdict.value if o.verdict is not None else None,
                "violation": o.violation,
                "allowed_by_promise": o.allowed,
                "boundary_named": boundary_sentence(o.probe),
                "explanation": o.explanation,
                "evidence": str(o.evidence) if o.evidence else None,
                "reproduce": reproduction(o, ids, workflows_arg, found.trace.key),
            }
            for o in found.outcomes
        ],
        "not_run": [p.selector for p in found.not_run],
        "gaps": [
            {
                "after": c.gap.after_node,
                "before": c.gap.before_node,
                "struck_by": [p.selector for p in c.probes],
            }
            for c in found.gaps
        ],
        "strip": strip(found),
        "strip_legend": strip_legend(found),
        "nodes": found.trace.node_names(),
    }
