"""The crash matrix as a pytest test. The plugin parametrizes ``chaos_case`` with every case
of the workflows found (bundled, or ``--chaos-workflows DIR``); ids read
``<workflow>-<delivery>-<fault>-<crash point>[-r<run>]``, so one case reruns with its node id
or ``-k``."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from harness.cases import Case
from harness.oracle import Verdict
from harness.plugin import ChaosDeployments
from harness.report.allure_report import attach_evidence, attach_result, label_case
from harness.runner import CaseAborted, PhaseObserver, run_case
from harness.stack.stack import Stack
from harness.terminal.reporter import VERDICT_PROPERTY


@pytest.mark.chaos
def test_exactly_once(
    chaos_case: Case,
    n8n_stack: Stack,
    chaos_deployments: ChaosDeployments,
    chaos_phase_observers: list[PhaseObserver],
    record_property: Callable[[str, object], None],
) -> None:
    label_case(chaos_case)
    workflow, deployment = chaos_deployments[chaos_case.workflow]
    started = time.time()  # the report's "reset" step runs from here to the case's start
    try:
        result = run_case(chaos_case, n8n_stack, workflow, deployment, chaos_phase_observers)
    except CaseAborted:  # what the evidence holds goes into the report all the same
        attach_evidence(n8n_stack.run.run_dir / "cases" / chaos_case.id / "evidence.json", started)
        raise
    attach_result(result, reset_from=started)
    verdict = result.judgement.verdict
    # The terminal reads it from the test report (also on the controller of xdist workers).
    record_property(
        VERDICT_PROPERTY,
        {
            "verdict": verdict.value,
            "explanation": result.judgement.explanation,
            "evidence": str(result.evidence_path),
        },
    )
    where = f"evidence: {result.evidence_path}"
    if verdict is Verdict.NO_EVIDENCE and Verdict.NO_EVIDENCE not in chaos_case.expected:
        raise HarnessCaseError(
            f"NO-EVIDENCE (harness error): {result.judgement.explanation}; {where}"
        )
    assert verdict in chaos_case.expected, (
        f"{verdict.value} where {'/'.join(sorted(v.value for v in chaos_case.expected))} was "
        f"expected: {result.judgement.explanation}; {where}"
    )


class HarnessCaseError(Exception):
    """The case could not prove its fault landed: reported as broken, never as a pass."""
