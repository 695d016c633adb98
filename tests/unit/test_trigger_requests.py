"""What goes on the wire: the trigger URL per trigger kind, the body encoded as the request's
Content-Type says, and the workflow as n8n's public API accepts it on create."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import respx

from harness.engine.workload import History, Sender, SenderPolicy, encoded_body
from harness.stack.n8n_api import WORKFLOW_FIELDS_REFUSED_ON_CREATE, creatable, refused_fields
from harness.stack.triggers import trigger_url
from harness.workflow.manifest import load_manifest

EXPORTS = Path(__file__).parent / "fixtures" / "exports"
BASE = "http://127.0.0.1:9/webhook"


def test_webhooks_and_forms_have_their_own_production_urls() -> None:
    form = load_manifest(EXPORTS / "form_notion").workflow
    hook = load_manifest(EXPORTS / "stripe_http_form").workflow
    assert trigger_url(form, BASE) == "http://127.0.0.1:9/form/order-form"
    assert trigger_url(hook, BASE) == "http://127.0.0.1:9/webhook/shop-order"
    assert trigger_url({"nodes": []}, BASE) is None


@respx.mock
def test_a_form_trigger_gets_a_multipart_form_with_the_auth_header() -> None:
    route = respx.post("http://127.0.0.1:9/form/order-form").mock(return_value=httpx.Response(200))
    request = load_manifest(EXPORTS / "form_notion").render_request("ord-1", "e")
    headers = request.headers | {"Authorization": "Basic abc"}
    Sender(
        "http://127.0.0.1:9/form/order-form",
        "POST",
        History(),
        SenderPolicy(retry=False),
        headers=headers,
    ).deliver(request.body)
    sent = route.calls.last.request
    assert sent.headers["content-type"].startswith("multipart/form-data; boundary=")
    assert sent.headers["authorization"] == "Basic abc"
    body = sent.read().decode()
    assert 'name="field-0"\r\n\r\nord-1\r\n' in body and 'name="field-2"\r\n\r\n2\r\n' in body


def test_urlencoded_json_and_bodyless_get() -> None:
    form = encoded_body("POST", {"content-type": "application/x-www-form-urlencoded"}, {"a": 1})
    assert form["data"] == {"a": "1"}
    assert encoded_body("POST", {}, {"a": 1}) == {"headers": {}, "json": {"a": 1}}
    assert encoded_body("GET", {"X": "y"}, {"a": 1}) == {"headers": {"X": "y"}}


def test_the_created_workflow_keeps_everything_the_api_accepts() -> None:
    raw = json.loads((EXPORTS / "stripe_http_form" / "workflow.json").read_text())
    body = creatable(raw)
    assert not set(body) & WORKFLOW_FIELDS_REFUSED_ON_CREATE
    assert {k: v for k, v in raw.items() if k not in WORKFLOW_FIELDS_REFUSED_ON_CREATE} == body
    unknown = creatable({**raw, "settings": {"executionOrder": "v1", "fromTheFuture": 1}})
    assert unknown["settings"] == {"executionOrder": "v1"}
    # No settings in the file: empty ones (n8n reads the file's older execution order).
    assert creatable({"name": "x", "nodes": [], "connections": {}})["settings"] == {}
    # null is an unset setting in an export.
    unset = creatable({**raw, "settings": {"executionOrder": "v1", "errorWorkflow": None}})
    assert unset["settings"] == {"executionOrder": "v1"}


def test_fields_n8n_refuses_are_read_from_its_400() -> None:
    body = {"name": "x", "notes": "n", "description": "d", "settings": {"timezone": "Mars"}}

    def refused(text: str) -> list[tuple[str, ...]]:
        return refused_fields(httpx.Response(400, json={"message": text}), body)

    assert refused("request/body Unrecognized key(s) in object: 'description', 'notes'") == [
        ("description",),
        ("notes",),
    ]
    assert refused("request/body/settings/timezone must be equal to one of the values") == [
        ("settings", "timezone")
    ]
    assert refused("request/body/settings Unrecognized key(s) in object: 'timezone'") == [
        ("settings", "timezone")
    ]
    # A field the body no longer has, or another error, is not retried.
    assert refused("request/body Unrecognized key(s) in object: 'pinData'") == []
    assert refused("request/body/nodes/0 must have required property 'type'") == []
    ok = httpx.Response(200, json={"id": "1"})
    assert refused_fields(ok, body) == []
