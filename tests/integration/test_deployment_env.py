"""The deployment's environment on the real stack: the bundled project's ``env`` reaches
every n8n process as ``$env.NAME``, its ``variables`` reach executions as ``$vars.NAME``
(written into n8n's variables table before any execution; the community edition reads them)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import httpx
import pytest

from harness.stack.stack import Stack
from harness.workflow.manifest import deployment_env, discover
from harness.workflow.minimal_workflow import webhook_then_http
from tests.support.upstream import UpstreamState

pytestmark = pytest.mark.integration

BUNDLED = Path(__file__).resolve().parents[2] / "workflows_under_test"


def test_workflows_read_the_projects_env_and_variables(
    n8n_stack: Stack, echo_upstream: tuple[str, UpstreamState]
) -> None:
    env, variables = deployment_env(discover(BUNDLED, lambda _: None))
    assert env and variables, "the bundled project names an env entry and a variable"
    names = {"env": sorted(env), "vars": sorted(variables)}
    reads = ", ".join(
        [f"{n}: $env.{n}" for n in names["env"]] + [f"{n}: $vars.{n}" for n in names["vars"]]
    )
    workflow = webhook_then_http(
        "deployment-env-" + uuid.uuid4().hex[:8],
        "Call upstream",
        {
            "method": "POST",
            "url": "={{ $env.N8N_CHAOS_UPSTREAM_ECHO }}/deployment-env",
            "sendBody": True,
            "contentType": "json",
            "specifyBody": "json",
            "jsonBody": "={{ JSON.stringify({ " + reads + " }) }}",
            "options": {},
        },
    )
    deployed = n8n_stack.deploy(workflow)
    assert deployed.webhook_url is not None
    response = httpx.post(deployed.webhook_url, json={}, timeout=60)
    assert response.status_code == 200, response.text
    _, upstream = echo_upstream
    assert json.loads(upstream.last("/deployment-env")["body"]) == {**env, **variables}
