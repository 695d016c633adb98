"""What an upstream fake keeps beside an attempt's reference (fakes/explain.py): where it was
read, what was there when it is empty, and a body preview with its secrets masked; the
attempt log returns both (in-process)."""

from __future__ import annotations

import json
from urllib.parse import parse_qsl

import pytest

from fake_providers.payment.fakes.explain import (
    PREVIEW_CHARS,
    body_preview,
    mask_text,
    reference_note,
)
from fake_providers.payment.fakes.inbound import UpstreamRequest, nest_form
from fake_providers.upstreams import ReferenceSource, Route, RouteTemplate, Upstream

from .conftest import InProcessProvider
from .upstream_helpers import configure

pytestmark = pytest.mark.timeout(30)


def json_request(doc: object, path: str = "/v1/pages") -> UpstreamRequest:
    raw = json.dumps(doc).encode()
    return UpstreamRequest("POST", path, raw_body=raw, params=doc)


def form_request(body: str) -> UpstreamRequest:
    form = parse_qsl(body, keep_blank_values=True)
    return UpstreamRequest(
        "POST", "/v1/x", raw_body=body.encode(), form=form, params=nest_form(form)
    )


def test_a_found_reference_names_where_it_was_read() -> None:
    source = ReferenceSource("json", "/order/id")
    assert reference_note(source, json_request({"order": {"id": "k"}}), "k") == "json /order/id"


@pytest.mark.parametrize(
    ("source", "request_", "note"),
    [
        (
            ReferenceSource("json", "/order/id"),
            json_request({"order_id": "k", "amount": 5}),
            "json /order/id: absent (top-level fields: order_id, amount)",
        ),
        (
            ReferenceSource("json", "/order"),
            json_request({"order": {"id": "k"}}),
            'json /order: {"id": "k"} (no text)',
        ),
        (
            ReferenceSource("form", "metadata[order_id]"),
            form_request("amount=5&metadata[order]=k"),
            "form metadata[order_id]: absent (form fields: amount, metadata[order])",
        ),
        (
            ReferenceSource("query", "id"),
            UpstreamRequest("GET", "/rest/v1/t", query=[("id", "")]),
            "query id: empty",
        ),
        (
            ReferenceSource("path", r"/orders/(\d+)"),
            UpstreamRequest("POST", "/orders/abc"),
            r"path /orders/(\d+): no match in /orders/abc",
        ),
    ],
)
def test_an_empty_reference_says_what_was_there(
    source: ReferenceSource, request_: UpstreamRequest, note: str
) -> None:
    assert reference_note(source, request_, "") == note


def test_no_configured_reference_says_where_to_configure_one() -> None:
    assert "upstreams.<host>.reference" in reference_note(None, json_request({}), "")


def test_the_preview_masks_secrets_and_is_short() -> None:
    doc = {
        "api_key": "sk_live_1",
        "card": {"number": "4242 4242 4242 4242", "cvc": "123"},
        "access_token": "ya29.x",
        "note": "Bearer abc.def and 4111111111111111",
        "order_id": "1234567890123",  # 13 digits, no card number (Luhn): kept
    }
    preview = body_preview(json_request(doc))
    for secret in ("sk_live_1", "4242 4242", "ya29", "abc.def", "411111111111"):
        assert secret not in preview, secret
    assert '"card":{"number":"***","cvc":"***"}' in preview
    assert "***1111" in preview and "1234567890123" in preview
    form = body_preview(form_request("amount=5&card[number]=4242424242424242&password=p"))
    assert form == "amount=5&card[number]=***&password=***"
    assert len(body_preview(json_request({"text": "x" * 500}))) == PREVIEW_CHARS
    assert mask_text("Authorization: Basic dXNlcjpwYXNz") == "Authorization: Basic ***"


@pytest.mark.asyncio
async def test_the_attempt_log_keeps_the_note_and_the_preview(inproc: InProcessProvider) -> None:
    route = Route("POST", "/v1/pages")
    upstream = Upstream(
        host="api.notion.com",
        fake="record",
        reference=ReferenceSource("json", "/properties/order"),
        effects=(route,),
        templates=(RouteTemplate(route, 200, '{"id": "{{id}}"}'),),
    )
    await configure(inproc, upstream)
    body = {"properties": {"Order": "k-1"}, "token": "t0p"}
    answer = await inproc.public.post("/v1/pages", headers={"Host": "api.notion.com"}, json=body)
    assert answer.status_code == 200
    rows = (await inproc.control.get("/_control/attempts")).json()
    assert [(r["reference"], r["reference_note"]) for r in rows] == [
        ("", "json /properties/order: absent (top-level fields: properties, token)")
    ]
    assert rows[0]["preview"] == '{"properties":{"Order":"k-1"},"token":"***"}'
