"""n8n's own service nodes (Notion, Airtable, HubSpot), unmodified, against the record
fake's personalities: a "look it up, create it only if it is not there" export runs twice
with one business key. The first delivery's search finds nothing and the node creates the
record (one commit); the second one's search finds it and creates nothing. So the
personality's answers have the shape the built-in node reads (its search filter, its
paging, its output fields)."""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx
import pytest

from harness.deployment import Deployment, deploy_under_test
from harness.manifest import WorkflowUnderTest, load_manifest
from harness.runner import route_upstreams
from harness.stack.stack import Stack

pytestmark = pytest.mark.integration

EXPORTS = Path(__file__).resolve().parents[1] / "unit" / "fixtures" / "exports"
TIMEOUT_S = 60.0


def deployed(stack: Stack, name: str) -> tuple[WorkflowUnderTest, Deployment]:
    wut = load_manifest(EXPORTS / name).with_path_suffix(uuid.uuid4().hex[:6])
    route_upstreams(stack, wut)
    return wut, deploy_under_test(stack, wut)


def trigger(wut: WorkflowUnderTest, deployment: Deployment, key: str) -> httpx.Response:
    assert deployment.main.webhook_url is not None
    request = wut.render_request(key, f"evt-{uuid.uuid4().hex[:8]}")
    return httpx.request(
        wut.method, deployment.main.webhook_url, json=request.body, timeout=TIMEOUT_S
    )


@pytest.mark.parametrize(
    "name",
    [
        "notion_find_or_create_page",
        "airtable_find_or_create_record",
        "hubspot_find_or_create_deal",
    ],
)
def test_the_node_finds_the_record_it_created(n8n_stack: Stack, name: str) -> None:
    wut, deployment = deployed(n8n_stack, name)
    key = f"it-{uuid.uuid4().hex[:10]}"
    control = n8n_stack.require_provider().control
    created = trigger(wut, deployment, key)
    assert created.status_code == 200, created.text
    assert [c.effect for c in control.commits(reference=key)] == ["record"]
    found = trigger(wut, deployment, key)
    assert found.status_code == 200, found.text
    assert len(control.commits(reference=key)) == 1  # the search found it: no second create
    # Both answers name the same record, with the key read back out of the node's output.
    assert created.json() == found.json(), (created.text, found.text)
    assert created.json()["order_id"] == key and created.json()["id"], created.text
