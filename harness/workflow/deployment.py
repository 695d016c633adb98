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
Before them all, the workflows the main workflow calls (``WorkflowUnderTest.called``: its
Execute Workflow nodes' sub-workflows and the Error Workflow its settings name, recursively,
leaves first), each published under the id its caller names (``harness.stack.deploy``).

Before each is created, the credentials its nodes reference are created in the test n8n
(``harness.workflow.credentials``): the deployed copy differs from the file only in credential ids
(plus what n8n's public API needs: a name, and only the fields it accepts on create, see
``N8nApi.create_workflow``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.errors import ConfigError
from harness.stack.deploy import DeployedWorkflow
from harness.stack.stack import Stack
from harness.workflow import credentials as creds
from harness.workflow import service_triggers
from harness.workflow import workflow_json as wj
from harness.workflow.credential_fill import FillContext
from harness.workflow.manifest import TriggerAuth, WorkflowUnderTest


@dataclass(frozen=True)
class Deployment:
    """What ``deploy_under_test`` put on the stack for one workflow under test."""

    main: DeployedWorkflow
    reconciler: DeployedWorkflow | None = None
    error_workflow_id: str | None = None
    # The workflows it calls (sub-workflows, an Error Workflow by its settings): id -> name.
    called: dict[str, str] = field(default_factory=dict)
    # sha256 of the workflow file deployed (evidence of which export was judged).
    file_sha256: str = ""

    @property
    def workflow_ids(self) -> list[str]:
        """Every n8n workflow of this deployment (the engine waits for their executions)."""
        ids = [self.main.id]
        if self.reconciler is not None:
            ids.append(self.reconciler.id)
        if self.error_workflow_id is not None:
            ids.append(self.error_workflow_id)
        return ids + list(self.called)


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
    reconciler (each published and, where it has a webhook, live). Once per stack: a second
    call for the same file on the same webhook paths (explore after the matrix on one stack)
    gets the first deployment; a copy on paths of its own (``with_path_suffix``) is deployed."""
    key = (wut.name, wut.file_sha256, tuple(wut.routes()))
    if key not in stack.under_test:
        stack.under_test[key] = _deploy(stack, wut)
    deployment: Deployment = stack.under_test[key]
    return deployment


def _deploy(stack: Stack, wut: WorkflowUnderTest) -> Deployment:
    stack.apply_ledger_schema(wut.ledger_schema_sql)
    bind = _binder(stack, wut)
    called = {c.id: stack.deploy(bind(c.workflow, None), workflow_id=c.id).name for c in wut.called}
    error_workflow_id = None
    main_workflow = bind(wut.workflow, wut.trigger_auth)
    if wut.error_workflow is not None:
        error_workflow_id = stack.deploy(bind(wut.error_workflow.workflow, None)).id
        main_workflow = with_error_workflow(main_workflow, error_workflow_id)
    if wut.service_trigger is not None:  # n8n registers it with the fake as it activates
        route_upstreams(stack, wut)
    main = stack.deploy(main_workflow)
    if wut.service_trigger is not None:
        service_triggers.check_registered(stack, wut.service_trigger, main.webhook_url)
    reconciler = (
        stack.deploy(bind(wut.reconciler.workflow, wut.reconciler.trigger_auth))
        if wut.reconciler is not None
        else None
    )
    return Deployment(
        main=main,
        reconciler=reconciler,
        error_workflow_id=error_workflow_id,
        called=called,
        file_sha256=wut.file_sha256,
    )


def fill_context(stack: Stack, hosts: tuple[str, ...] = ()) -> FillContext:
    """This run's addresses for credential data: the SMTP sink behind the stack's "smtp"
    link, the stack's Redis, the hosts the manifest maps; a fresh secret (the generic OAuth2
    token URL is a token fake's)."""
    return FillContext(
        smtp_port=stack.listen_ports.get("smtp"), redis_port=stack.redis.port, hosts=hosts
    )


def _binder(
    stack: Stack, wut: WorkflowUnderTest
) -> Callable[[dict[str, Any], TriggerAuth | None], dict[str, Any]]:
    """Creates each workflow's credentials (one context per deployment) and binds them."""
    assert stack.api is not None and stack.ledger_credential_id is not None
    create, ctx = stack.api.create_credential, fill_context(stack, tuple(wut.upstreams))
    provided = {"postgres": stack.ledger_credential_id}

    def bind(workflow: dict[str, Any], auth: TriggerAuth | None) -> dict[str, Any]:
        fixed = {}
        if auth is not None:
            fixed[str(wj.webhook_node(workflow, str(workflow.get("name"))).get("name"))] = auth.data
        return creds.provision(workflow, create, ctx, wut.credentials, provided, fixed)

    return bind


def route_upstreams(stack: Stack, workflow: WorkflowUnderTest) -> None:
    """This workflow's hosts to their fakes: the provider answers as them, the intercepting
    proxy forwards them (every other host gets its 502). A stack runs one workflow's cases
    at a time (a batch of cases sharing it is of one workflow: harness.engine.batch)."""
    configs = workflow.upstream_configs()
    stack.require_provider().control.set_upstreams(configs)
    if stack.intercept is not None:
        stack.intercept.set_hosts([u.host for u in configs if u.fake != "mail"])
    elif configs:
        raise ConfigError(
            f"{workflow.name}: its upstreams need the intercepting proxy, which this stack "
            "does not run (StackConfig.intercept is off, or an `up` of an older harness "
            "version: restart it)"
        )
