"""n8n's own service nodes (Notion, Airtable, HubSpot), unmodified, against the record
fake's personalities: a "look it up, create it only if it is not there" export runs twice
with one business key. The first delivery's search finds nothing and the node creates the
record (one commit); the second one's search finds it and creates nothing. So the
personality's answers have the shape the built-in node reads (its search filter, its
paging, its output fields)."""

from __future__ import annotations

import uuid

import pytest

from harness.stack.stack import Stack
from tests.support.exports import deployed, trigger

pytestmark = pytest.mark.integration


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
    created = trigger(wut, deployment, key, f"evt-{uuid.uuid4().hex[:8]}")
    assert created.status_code == 200, created.text
    assert [c.effect for c in control.commits(reference=key)] == ["record"]
    found = trigger(wut, deployment, key, f"evt-{uuid.uuid4().hex[:8]}")
    assert found.status_code == 200, found.text
    assert len(control.commits(reference=key)) == 1  # the search found it: no second create
    # Both answers name the same record, with the key read back out of the node's output.
    assert created.json() == found.json(), (created.text, found.text)
    assert created.json()["order_id"] == key and created.json()["id"], created.text
