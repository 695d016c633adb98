"""Exploration alone finds a negative control's window and names the node that opens it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.engine.crashpoints.explore_boundary import STRIKES
from harness.explore.plan import Budget
from harness.explore.session import explore_workflows
from harness.stack.stack import Stack
from harness.workflow.manifest import BUNDLED_WORKFLOWS, load_manifest

pytestmark = pytest.mark.integration


def test_explore_finds_the_window_of_a_workflow_without_idempotency_key(n8n_stack: Stack) -> None:
    workflow = load_manifest(Path(BUNDLED_WORKFLOWS) / "broken_no_idempotency_key")
    lines: list[str] = []
    [found] = explore_workflows(n8n_stack, [workflow], Budget(cases=1), say=lines.append)
    trace = found.trace
    assert trace.control_verdict == "PASS", lines
    assert [r.node for r in trace.effect_requests] == ["Charge"], trace.requests
    [outcome] = found.outcomes
    assert outcome.probe.selector == "broken_no_idempotency_key:r1:after_commit"
    assert outcome.violation and outcome.verdict is not None
    assert outcome.verdict.value == "DUPLICATE", outcome.explanation
    assert len(found.not_run) == len(STRIKES) - 1  # the budget: one case of all the strikes
    report = "\n".join(lines)
    assert "node 'Charge'" in report and "✗" in report, report
    assert "-k broken_no_idempotency_key-retry-worker_kill-after_commit" in report, report


def test_explore_finds_a_search_then_create_race_by_a_repeated_delivery(n8n_stack: Stack) -> None:
    workflow = load_manifest(Path(BUNDLED_WORKFLOWS) / "crm_search_then_create")
    selector = "crm_search_then_create:r1:repeat_before_commit"
    lines: list[str] = []
    [found] = explore_workflows(n8n_stack, [workflow], Budget(), [selector], say=lines.append)
    [outcome] = found.outcomes
    assert outcome.verdict is not None and outcome.verdict.value == "DUPLICATE", lines
    assert outcome.evidence is not None
    proofs = json.loads(outcome.evidence.read_text())["evidence"]["proofs"]
    assert any("delivered again" in p["fact"] for p in proofs if p["held"]), proofs
    assert "node 'Create deal'" in "\n".join(lines), lines
