"""Run the probes of a trace through the matrix's engine (``harness.engine.runner.run_case``), on a
fresh key each, judged by the same oracle, within a budget."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.engine.crashpoints.base import CRASHPOINTS
from harness.engine.crashpoints.explore_boundary import explore_crashpoint
from harness.engine.runner import CaseResult
from harness.errors import HarnessError
from harness.explore.boundary import Trace
from harness.explore.plan import Budget, GapCover, Probe, gap_covers, probes_of
from harness.judge.oracle import Verdict
from harness.matrix.cases import AT_MOST_ONCE, CAUGHT, PASS, Case, Scenario

# What a promise allows under a fault (as the matrix expects it).
ALLOWED: dict[str, frozenset[Verdict]] = {
    "exactly_once": PASS,
    "at_most_once": AT_MOST_ONCE,
    "none": PASS | CAUGHT,
}


@dataclass(frozen=True)
class Outcome:
    """What one probe found."""

    probe: Probe
    case_id: str
    verdict: Verdict | None  # None: the case did not complete (a harness error)
    explanation: str
    evidence: Path | None
    allowed: bool  # the workflow's promise allows this verdict under a fault
    key: str = ""  # the case's business key

    @property
    def violation(self) -> bool:
        return self.verdict is not None and self.verdict.violation and not self.allowed

    @property
    def window(self) -> bool:
        """A broken effect the promise allows (e.g. a duplicate of a promise-none workflow)."""
        return self.verdict is not None and self.verdict.violation and self.allowed


@dataclass
class Exploration:
    trace: Trace
    promise: str
    outcomes: list[Outcome] = field(default_factory=list)
    not_run: list[Probe] = field(default_factory=list)
    gaps: list[GapCover] = field(default_factory=list)

    @property
    def control_violation(self) -> Verdict | None:
        """The trace's control case (nothing broken) already broke the promise: the workflow
        never charges, or charges another reference (found without any strike)."""
        try:
            verdict = Verdict(self.trace.control_verdict)
        except ValueError:
            return None
        allowed = ALLOWED.get(self.promise, PASS)
        return verdict if verdict.violation and verdict not in allowed else None

    @property
    def violation(self) -> bool:
        return self.control_violation is not None or any(o.violation for o in self.outcomes)


def probe_case(probe: Probe, promise: str) -> Case:
    request = probe.boundary.request
    assert request is not None and request.effect_index is not None
    name = explore_crashpoint(probe.strike, request.effect_index, request.effect)
    scenario = Scenario(
        delivery="retry",
        fault=probe.fault,
        crashpoint=name,
        needs=frozenset(),
        repeat=1,
        catches_naive=probe.strike != "before_send",
    )
    return Case(probe.workflow, scenario, ALLOWED.get(promise, PASS))


def explore(
    trace: Trace,
    promise: str,
    run: Callable[[Case], CaseResult],
    budget: Budget,
    only: Sequence[str] = (),
    on_outcome: Callable[[Outcome], None] | None = None,
) -> Exploration:
    """Every probe of the trace the budget allows, in plan order; the rest are ``not_run``."""
    probes = probes_of(trace, only)
    found = Exploration(trace, promise, gaps=gap_covers(trace, probes))
    allowed = ALLOWED.get(promise, PASS)
    for probe in probes:
        if not budget.allows_another():
            found.not_run.append(probe)
            continue
        budget.spend()
        case = probe_case(probe, promise)
        try:
            result = run(case)
        except HarnessError as exc:
            outcome = Outcome(probe, case.id, None, str(exc), None, allowed=False)
        else:
            verdict = result.judgement.verdict
            outcome = Outcome(
                probe,
                case.id,
                verdict,
                result.judgement.explanation,
                result.evidence_path,
                allowed=verdict in allowed,
                key=result.evidence.key,
            )
        finally:
            # The crash point lives for its case only: the registry is the process's, and
            # what later builds the matrix in this process must not meet it.
            CRASHPOINTS.unregister(case.crashpoint)
        found.outcomes.append(outcome)
        if on_outcome is not None:
            on_outcome(outcome)
    return found
