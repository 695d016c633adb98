"""The trace of one workflow: its control case (no fault, the plain sender, through
``harness.engine.runner.run_case`` like any case), then what outside parts recorded meanwhile:
n8n's execution data, the intercepting proxy's journal, the provider's attempt log."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.engine.runner import CaseResult, run_case, set_aside
from harness.explore.boundary import ProviderAttempt, Seen, Trace, assemble
from harness.judge.oracle import Verdict
from harness.matrix.cases import Case, Scenario, expected_for

if TYPE_CHECKING:
    from harness.stack.stack import Stack
    from harness.workflow.deployment import Deployment
    from harness.workflow.manifest import WorkflowUnderTest

CONTROL = Scenario(
    delivery="retry",
    fault="no_fault",
    crashpoint="none",
    needs=frozenset(),
    repeat=1,
    catches_naive=False,
    quiet=True,
    baseline=True,
)


# Tries of one explore case while the harness fails it (NO-EVIDENCE: a stall on a starved
# stack, a window not hit), as the matrix's default (`--chaos-harness-retries 2`).
TRIES = 3


def run_tried(
    case: Case, stack: Stack, workflow: WorkflowUnderTest, deployment: Deployment
) -> tuple[CaseResult, float]:
    """``run_case``, tried again while the harness failed it; each earlier try's evidence is
    kept beside the case's (``<case>.try<n>``), as the matrix keeps it. With the last try's
    start (epoch seconds): what outside parts recorded since then is that try's."""
    started = time.time()
    result = run_case(case, stack, workflow, deployment)
    for try_no in range(1, TRIES):
        if result.judgement.verdict is not Verdict.NO_EVIDENCE:
            break
        set_aside(result.evidence_path.parent, try_no)
        started = time.time()
        result = run_case(case, stack, workflow, deployment)
    return result, started


def control_case(workflow: WorkflowUnderTest) -> Case:
    expected = expected_for(workflow, CONTROL)
    return Case(workflow.name, CONTROL, expected or frozenset())


def trace_workflow(
    stack: Stack, workflow: WorkflowUnderTest, deployment: Deployment, out: Path
) -> Trace:
    """Run the workflow once with nothing broken and write its trace to ``out``."""
    result, started = run_tried(control_case(workflow), stack, workflow, deployment)
    ended = time.time()
    api = stack.api
    assert api is not None, "a stack under test has n8n's public API"
    executions = [api.execution(i, include_data=True) for i in result.evidence.execution_ids]
    seen = [
        Seen(e.time, e.method, e.host, e.path, e.status, e.outcome)
        for e in (stack.intercept.journal() if stack.intercept is not None else [])
        if started <= e.time <= ended
    ]
    attempts = [
        ProviderAttempt(a.id, str(a.effect), a.reference, a.received_at, str(a.outcome))
        for a in stack.require_provider().control.attempts(since=started)
        if started <= a.received_at <= ended
    ]
    trace = assemble(
        workflow.name,
        result.evidence.key,
        executions,
        node_types(workflow.workflow),
        seen,
        attempts,
        control_verdict=result.judgement.verdict.value,
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(trace.to_json(), indent=2) + "\n")
    return trace


def node_types(workflow: dict[str, Any]) -> dict[str, str]:
    return {
        str(n.get("name")): str(n.get("type"))
        for n in workflow.get("nodes", [])
        if isinstance(n, dict)
    }
