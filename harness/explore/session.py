"""Exploration of several workflows on one stack: deploy, trace, explore, report; shared by
``n8n-chaos explore`` and the tests."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harness.engine.runner import CaseResult
from harness.explore.explorer import Exploration, Outcome, explore
from harness.explore.findings import report_lines, to_json
from harness.explore.plan import Budget
from harness.explore.trace import run_tried, trace_workflow
from harness.matrix.cases import Case, matrix
from harness.stack.stack import Stack
from harness.workflow.deployment import Deployment, deploy_under_test
from harness.workflow.manifest import WorkflowUnderTest

# Called once a workflow is explored: (workflow, exploration, report lines, report JSON).
OnReport = Callable[[WorkflowUnderTest, Exploration, list[str], dict[str, Any]], None]


def explore_workflows(
    stack: Stack,
    workflows: Sequence[WorkflowUnderTest],
    budget: Budget,
    only: Sequence[str] = (),
    workflows_arg: str = "",
    say: Callable[[str], None] = print,
    on_report: OnReport | None = None,
) -> list[Exploration]:
    """Each workflow in turn until the budget is spent; its report goes to ``say`` and to
    ``<run dir>/explore/<workflow>/explore.json``."""
    found: list[Exploration] = []
    selected = [w for w in workflows if not only or any(s.split(":")[0] == w.name for s in only)]
    for workflow in selected:
        if not budget.allows_another():
            say(f"{workflow.name}: not explored (budget spent: {budget.describe()})")
            continue
        if workflow.parks_for_resume:
            say(
                f"{workflow.name}: not explored: it parks at a Wait node (On Webhook Call) "
                "until its resume URL is called, and explore drives the plain sender only; "
                f"its matrix resumes it (plan wait_resume): n8n-chaos run -k {workflow.name}"
            )
            continue
        out = stack.run.run_dir / "explore" / workflow.name
        deployment = deploy_under_test(stack, workflow)
        trace = trace_workflow(stack, workflow, deployment, out / "trace.json")
        say(
            f"{workflow.name}: traced {len(trace.node_names())} nodes, "
            f"{len(trace.effect_requests)} effect request(s); control case "
            f"{trace.control_verdict}"
        )

        def progress(o: Outcome) -> None:
            verdict = o.verdict.value if o.verdict is not None else "HARNESS-ERROR"
            say(f"  {o.probe.selector}: {verdict}")

        exploration = explore(
            trace,
            str(workflow.promise),
            _runner(stack, workflow, deployment),
            budget,
            only=[s for s in only if s.count(":") > 0],
            on_outcome=progress,
        )
        ids = [c.id for c in matrix([workflow], workers=len(stack.workers))]
        lines = report_lines(exploration, ids, workflows_arg)
        for line in lines:
            say(line)
        doc = to_json(exploration, ids, workflows_arg)
        write_report(out / "explore.json", doc)
        if on_report is not None:
            on_report(workflow, exploration, lines, doc)
        found.append(exploration)
    return found


def complete(found: Exploration) -> bool:
    """Every probe ran to a verdict: nothing left by the budget, no harness error."""
    return not found.not_run and all(o.verdict is not None for o in found.outcomes)


def _runner(
    stack: Stack, workflow: WorkflowUnderTest, deployment: Deployment
) -> Callable[[Case], CaseResult]:
    return lambda case: run_tried(case, stack, workflow, deployment)[0]


def write_report(path: Path, doc: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2, default=str) + "\n")
