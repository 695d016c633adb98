"""Allure steps for a case's phases: live while the case runs, exact once its evidence is in.

``AllureSteps`` is a ``harness.engine.runner.PhaseObserver``: it opens one Allure step per phase as
the phase starts, so a case that hangs or dies shows the phase it was in. Once the case is
over, ``apply_evidence_steps`` rewrites the case's steps from its evidence: the phases with
the times the runner recorded (nested as they ran: ``strike`` inside ``deliver``), a
``reset`` step before them, and inside each phase what happened during it with its own
time: crash point reached, fault injected, healed, settled, the sender's attempts, the
provider's attempts and commits, the n8n executions, and last ``judged`` with the verdict.
The status a live phase step ended with (broken when the phase raised) is kept.

Allure's Python API stamps steps with "now", so steps with past times are built as
``allure_commons`` result objects and put on the running test's result directly.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

import allure
import allure_commons
from allure_commons.model2 import Parameter, StatusDetails, TestResult, TestStepResult

from harness.report.timeline import TimelineEvent, case_start, events

# Journal kinds a reader looks for first get a plain name (the rest keep their kind).
_NAMED = {
    "crashpoint.target": "crash point reached",
    "crashpoint.reached": "crash point reached",
    "crashpoint.landed": "crash point reached",
    "fault.inject": "fault injected",
    "fault.heal": "healed",
    "settled": "settled",
}


class AllureSteps:
    """One Allure step per phase, open while the phase runs (a PhaseObserver)."""

    def phase(self, case_id: str, name: str) -> AbstractContextManager[object]:
        del case_id  # the step belongs to the running test already
        return allure.step(name)


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


def current_test() -> TestResult | None:
    """The running test's Allure result, or None when Allure is not recording."""
    for plugin in allure_commons.plugin_manager.get_plugins():
        reporter = getattr(plugin, "allure_logger", None)
        if reporter is not None and hasattr(reporter, "get_test"):
            test = reporter.get_test(None)
            if isinstance(test, TestResult):
                return test
    return None


def _walk(steps: Sequence[TestStepResult]) -> Iterator[TestStepResult]:
    for step in steps:
        yield step
        yield from _walk(step.steps)


def _title(e: TimelineEvent) -> str:
    if e.lane == "journal":
        kind, _, rest = e.label.partition(" ")
        named = _NAMED.get(kind)
        return f"{named}: {rest}" if named else e.label
    if e.lane == "sender":
        return f"sender {e.label}" + (f" ({e.outcome})" if e.outcome else "")
    if e.lane in ("provider", "requests"):
        return f"{e.lane} {e.label}" + (f" ({e.outcome})" if e.outcome else "")
    return f"n8n {e.label}" + (f": {e.outcome}" if e.outcome else "")


def _phase_steps(doc: Mapping[str, Any]) -> list[tuple[TestStepResult, float, float]]:
    """The phases as steps, each with its (start, end) in seconds since the epoch."""
    found = []
    for phase in doc.get("phases") or []:
        start = float(phase["started_at"])
        end = float(phase["ended_at"]) if phase.get("ended_at") is not None else start
        step = TestStepResult(
            name=str(phase["name"]),
            status="passed" if phase.get("ended_at") is not None else "broken",
            start=_ms(start),
            stop=_ms(end),
        )
        found.append((step, start, end))
    return found


def _innermost(
    phases: Sequence[tuple[TestStepResult, float, float]], at: float
) -> TestStepResult | None:
    """The last-starting phase whose interval holds ``at`` (phases nest: strike in deliver)."""
    holding = [p for p in phases if p[1] <= at <= p[2]]
    return max(holding, key=lambda p: p[1])[0] if holding else None


def _judged(doc: Mapping[str, Any]) -> TestStepResult | None:
    verdict = doc.get("verdict")
    if verdict is None:
        return None
    expected = [str(v) for v in doc.get("expected") or []]
    as_expected = verdict in expected
    at = float(doc.get("ended_at") or doc.get("started_at") or 0.0)
    status = "passed" if as_expected else ("broken" if verdict == "NO-EVIDENCE" else "failed")
    explanation = str(doc.get("explanation") or "")
    return TestStepResult(
        name=f"judged: {verdict} "
        + ("(as expected)" if as_expected else f"(expected {'/'.join(expected)})"),
        status=status,
        statusDetails=None if as_expected else StatusDetails(message=explanation),
        parameters=[Parameter(name="why", value=explanation)],
        start=_ms(at),
        stop=_ms(at),
    )


def evidence_steps(doc: Mapping[str, Any], reset_from: float | None = None) -> list[TestStepResult]:
    """The case's steps from its evidence (see the module's docstring)."""
    zero = case_start(doc)
    phases = _phase_steps(doc)
    top: list[TestStepResult] = []
    if reset_from is not None and reset_from <= zero:
        top.append(
            TestStepResult(name="reset", status="passed", start=_ms(reset_from), stop=_ms(zero))
        )
    for step, start, _ in phases:  # nest each phase in the phase that held its start
        parent = _innermost([p for p in phases if p[0] is not step and p[1] < start], start)
        (parent.steps if parent is not None else top).append(step)
    for e in events(doc):
        if e.lane == "phase":
            continue
        start = zero + e.at
        stop = zero + e.until if e.until is not None else start
        step = TestStepResult(name=_title(e), status="passed", start=_ms(start), stop=_ms(stop))
        parent = _innermost(phases, start)
        (parent.steps if parent is not None else top).append(step)
    judged = _judged(doc)
    if judged is not None:
        collect = next((p[0] for p in phases if p[0].name == "collect"), None)
        (collect.steps if collect is not None else top).append(judged)
    for step in _walk(top):  # events joined their phase after its sub-phases: time order
        step.steps.sort(key=lambda s: s.start or 0)
    top.sort(key=lambda s: s.start or 0)
    return top


def apply_evidence_steps(doc: Mapping[str, Any], reset_from: float | None = None) -> None:
    """Replace the running test's live phase steps with the ones its evidence gives."""
    test = current_test()
    if test is None:
        return
    built = evidence_steps(doc, reset_from)
    names = {str(p.get("name")) for p in doc.get("phases") or []}
    # The live steps' end states, in the order the phases ran (a phase may repeat by name).
    live = [s for s in _walk(test.steps) if s.name in names]
    for step in _walk(built):
        if step.name not in names:
            continue
        match = next((s for s in live if s.name == step.name), None)
        if match is not None:
            live.remove(match)
            if match.status not in (None, "passed"):
                step.status, step.statusDetails = match.status, match.statusDetails
    others = [s for s in test.steps if s.name not in names]
    test.steps[:] = sorted([*built, *others], key=lambda s: s.start or 0)
