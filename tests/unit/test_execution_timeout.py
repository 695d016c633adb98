"""The execution-timeout fault: only workflows that set settings.executionTimeout run it, it
holds past the timeout, and its proof is n8n's own row: canceled at least the timeout after
it started (a row that ended sooner, or another status, proves nothing)."""

from __future__ import annotations

import dataclasses
from typing import Any, cast

import pytest

from harness.engine.faults import get_fault
from harness.engine.faults.base import FaultContext
from harness.engine.journal import Journal
from harness.matrix.cases import capabilities, matrix
from harness.stack.stack import Stack
from harness.workflow.manifest import BUNDLED_WORKFLOWS, discover
from harness.workflow.workflow_json import execution_timeout_s


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({"executionTimeout": 5}, 5.0),
        ({"executionTimeout": -1}, None),  # the editor's "off"
        ({"executionTimeout": True}, None),
        ({}, None),
        (None, None),
    ],
)
def test_the_timeout_is_read_from_the_workflow_settings(
    settings: dict[str, Any] | None, expected: float | None
) -> None:
    assert execution_timeout_s({"nodes": [], "settings": settings}) == expected


def test_without_its_own_the_instance_default_from_the_manifest_env_counts() -> None:
    [bundled] = [w for w in discover(BUNDLED_WORKFLOWS) if w.name == "stripe_timeout"]
    workflow = {**bundled.workflow, "settings": {"executionTimeout": -1}}
    instance = dataclasses.replace(bundled, workflow=workflow, env={"EXECUTIONS_TIMEOUT": "5"})
    assert instance.execution_timeout_s == 5.0
    assert "execution_timeout" in capabilities(instance)
    assert (
        dataclasses.replace(instance, env={"EXECUTIONS_TIMEOUT": "-1"}).execution_timeout_s is None
    )
    assert dataclasses.replace(bundled, env={"EXECUTIONS_TIMEOUT": "3"}).execution_timeout_s == 5.0


class RowsStack:
    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows = rows
        self.asked: list[tuple[str, str | None]] = []

    def executions(self, workflow_id: str, containing: str | None = None) -> list[dict[str, Any]]:
        self.asked.append((workflow_id, containing))
        return self.rows


def _proof(rows: list[dict[str, Any]], timeout: float | None = 5.0) -> tuple[str | None, Any]:
    stack = RowsStack(rows)
    ctx = FaultContext(
        cast(Stack, stack), Journal(), "k1", workflow_id="w1", execution_timeout_s=timeout
    )
    fault = get_fault("execution_timeout")
    fault.inject(ctx)
    return fault.proof(ctx), (fault.duration_s, stack.asked)


def test_canceled_after_the_timeout_is_the_proof_and_the_hold_spans_it() -> None:
    row = {"id": "7", "status": "canceled", "started_at": 100.0, "stopped_at": 105.02}
    proof, (hold, asked) = _proof([row])
    assert proof == (
        "n8n's execution 7 ended 'canceled' 5.0 s after it started (executionTimeout 5 s)"
    )
    assert hold is not None and hold > 5.0 and asked == [("w1", "k1")]


@pytest.mark.parametrize(
    "row",
    [
        {"id": "7", "status": "success", "started_at": 100.0, "stopped_at": 106.0},
        {"id": "7", "status": "canceled", "started_at": 100.0, "stopped_at": 101.0},
        {"id": "7", "status": "canceled", "started_at": 100.0, "stopped_at": None},
    ],
)
def test_no_cancel_past_the_timeout_is_no_proof(row: dict[str, Any]) -> None:
    assert _proof([row])[0] is None


def test_only_workflows_with_a_timeout_run_it() -> None:
    workflows = {w.name: w for w in discover(BUNDLED_WORKFLOWS)}
    assert "execution_timeout" in capabilities(workflows["stripe_timeout"])
    assert "execution_timeout" not in capabilities(workflows["stripe_idempotent"])
    # A timeout of minutes cannot strike while the committed answer is held: no case.
    settings = {**workflows["stripe_timeout"].workflow["settings"], "executionTimeout": 300}
    minutes = dataclasses.replace(
        workflows["stripe_timeout"],
        workflow={**workflows["stripe_timeout"].workflow, "settings": settings},
    )
    assert "execution_timeout" not in capabilities(minutes)
    timed = {c.workflow for c in matrix(list(workflows.values())) if "execution_timeout" in c.id}
    assert timed == {"stripe_timeout", "stripe_timeout_naive"}
