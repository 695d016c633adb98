"""Put one workflow under test on a running stack, with its companions.

Order matters:
1. the ledger schema (the workflows' Postgres nodes need their tables);
2. the Error Workflow, published: n8n 2.40 runs an Error Workflow only from its published
   version (``WorkflowExecutionService.loadErrorWorkflowData`` refuses one without an active
   version: "is not active and cannot be executed"); an Error Trigger counts as a trigger, so
   publishing it is accepted;
3. the main workflow, whose ``settings.errorWorkflow`` names the Error Workflow's id (the
   public API takes it as a workflow setting on create);
4. the reconciler, published like the main one (its webhook must be live).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from harness.manifest import WorkflowUnderTest
from harness.stack.deploy import DeployedWorkflow
from harness.stack.stack import Stack


@dataclass(frozen=True)
class Deployment:
    """What ``deploy_under_test`` put on the stack for one workflow under test."""

    main: DeployedWorkflow
    reconciler: DeployedWorkflow | None = None
    error_workflow_id: str | None = None

    @property
    def workflow_ids(self) -> list[str]:
        """Every n8n workflow of this deployment (the engine waits for their executions)."""
        ids = [self.main.id]
        if self.reconciler is not None:
            ids.append(self.reconciler.id)
        if self.error_workflow_id is not None:
            ids.append(self.error_workflow_id)
        return ids


def with_error_workflow(workflow: dict[str, Any], error_workflow_id: str) -> dict[str, Any]:
    """A copy of the workflow whose failed executions start the Error Workflow."""
    bound = copy.deepcopy(workflow)
    settings = bound.get("settings")
    bound["settings"] = {
        **({"executionOrder": "v1"} if not isinstance(settings, dict) else settings),
        "errorWorkflow": error_workflow_id,
    }
    return bound


def deploy_under_test(stack: Stack, wut: WorkflowUnderTest) -> Deployment:
    """Apply the ledger schema, then deploy the Error Workflow, the main workflow and the
    reconciler (each published and, where it has a webhook, live)."""
    stack.apply_ledger_schema(wut.ledger_schema_sql)
    error_workflow_id = None
    main_workflow = wut.workflow
    if wut.error_workflow is not None:
        error_workflow_id = stack.deploy(wut.error_workflow.workflow).id
        main_workflow = with_error_workflow(main_workflow, error_workflow_id)
    main = stack.deploy(main_workflow)
    reconciler = stack.deploy(wut.reconciler.workflow) if wut.reconciler is not None else None
    return Deployment(main=main, reconciler=reconciler, error_workflow_id=error_workflow_id)
