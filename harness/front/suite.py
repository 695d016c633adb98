"""Internal: The crash matrix as a pytest test. The plugin parametrizes ``chaos_case`` with every
case of the workflows found (bundled, or ``--chaos-workflows DIR``); ids read
``<workflow>-<delivery>-<fault>-<crash point>[-r<run>]``, so one case reruns with its node id or
``-k``."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from harness.engine.batch import SharedRuns
from harness.engine.runner import CaseResult, PhaseObserver, run_case, set_aside
from harness.errors import CaseAborted, HarnessCaseError, ToxiproxyUnavailable
from harness.front.plugin import ChaosDeployments
from harness.judge.oracle import Verdict
from harness.matrix.cases import Case
from harness.report.allure_report import attach_evidence, attach_result, label_case
from harness.stack.stack import Stack
from harness.terminal.reporter import VERDICT_PROPERTY


@pytest.mark.chaos
def test_exactly_once(
    chaos_case: Case,
    request: pytest.FixtureRequest,
    chaos_phase_observers: list[PhaseObserver],
    chaos_harness_retries: int,
    record_property: Callable[[str, object], None],
) -> None:
    label_case(chaos_case)
    # A case that needs a webhook processor runs on the stack that has one (brought up when
    # the first such case runs); every other case on the session's stack.
    webhook = chaos_case.needs_webhook_processor
    n8n_stack: Stack = request.getfixturevalue("n8n_webhook_stack" if webhook else "n8n_stack")
    deployments: ChaosDeployments = request.getfixturevalue(
        "chaos_webhook_deployments" if webhook else "chaos_deployments"
    )
    # A case that touches no process or link runs in its batch, beside others
    # (harness.engine.batch).
    shared: SharedRuns = request.getfixturevalue("chaos_shared_runs")
    workflow, deployment = deployments[chaos_case.workflow]
    case_dir = n8n_stack.run.run_dir / "cases" / chaos_case.id
    earlier: list[str] = []  # tries the harness failed (missed fault, Toxiproxy down), kept
    for try_no in range(1, chaos_harness_retries + 2):
        started = time.time()  # the report's "reset" step runs from here to the case's start
        try:
            taken = (  # a retry after a missed fault runs alone
                shared.take(chaos_case, n8n_stack, deployments.__getitem__) if try_no == 1 else None
            )
            result = taken or run_case(
                chaos_case, n8n_stack, workflow, deployment, chaos_phase_observers
            )
        except CaseAborted as aborted:  # what the evidence holds goes into the report all the same
            attach_evidence(case_dir / "evidence.json", started)
            # A Toxiproxy that stopped answering is the harness's part failing: the next try
            # starts it again (Stack.reset_links) and runs the case from the start.
            if (
                not isinstance(aborted.__cause__, ToxiproxyUnavailable)
                or try_no > chaos_harness_retries
            ):
                raise
            kept = set_aside(case_dir, try_no)
            earlier.append(f"try {try_no} harness error ({aborted.__cause__}; kept in {kept})")
            continue
        attach_result(result, reset_from=started)
        if not _fault_missed(chaos_case, result) or try_no > chaos_harness_retries:
            break
        # The harness, not the workflow, failed this try: run the case again, keep this one.
        kept = set_aside(case_dir, try_no)
        earlier.append(f"try {try_no} NO-EVIDENCE ({result.judgement.explanation}; kept in {kept})")
    verdict = result.judgement.verdict
    explanation = result.judgement.explanation
    if earlier:
        explanation += f" [after {len(earlier)} harness retry: {'; '.join(earlier)}]"
    # The terminal reads it from the test report (also on the controller of xdist workers).
    record_property(
        VERDICT_PROPERTY,
        {
            "verdict": verdict.value,
            "explanation": explanation,
            "evidence": str(result.evidence_path),
        },
    )
    where = f"evidence: {result.evidence_path}"
    if _fault_missed(chaos_case, result):
        raise HarnessCaseError(f"NO-EVIDENCE (harness error): {explanation}; {where}")
    if verdict not in chaos_case.expected:
        # The verdict is the message: no traceback of this function, no assert introspection
        # (a workflow's violation is no bug of the harness).
        pytest.fail(
            f"{verdict.value} where {'/'.join(sorted(v.value for v in chaos_case.expected))} "
            f"was expected: {explanation}; {where}",
            pytrace=False,
        )


def _fault_missed(case: Case, result: CaseResult) -> bool:
    verdict = result.judgement.verdict
    return verdict is Verdict.NO_EVIDENCE and verdict not in case.expected
