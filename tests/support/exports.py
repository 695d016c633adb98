"""Editor exports of tests/unit/fixtures/exports, deployed and triggered on a live stack (the
integration tests of n8n's own service nodes against the fakes)."""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx

from harness.stack.stack import Stack
from harness.workflow.deployment import Deployment, deploy_under_test, route_upstreams
from harness.workflow.manifest import WorkflowUnderTest, load_manifest

EXPORTS = Path(__file__).resolve().parents[1] / "unit" / "fixtures" / "exports"
TIMEOUT_S = 60.0


def deployed(stack: Stack, name: str) -> tuple[WorkflowUnderTest, Deployment]:
    """The export ``name``, its hosts routed to their fakes, deployed under a fresh path."""
    wut = load_manifest(EXPORTS / name).with_path_suffix(uuid.uuid4().hex[:6])
    route_upstreams(stack, wut)
    return wut, deploy_under_test(stack, wut)


def trigger(
    wut: WorkflowUnderTest, deployment: Deployment, key: str, event_id: str | None = None
) -> httpx.Response:
    """One delivery of the manifest's trigger with ``key`` (event id ``evt-<key>`` unless
    given), answered within ``TIMEOUT_S``."""
    assert deployment.main.webhook_url is not None
    request = wut.render_request(key, event_id or f"evt-{key}")
    return httpx.request(
        wut.method, deployment.main.webhook_url, json=request.body, timeout=TIMEOUT_S
    )
