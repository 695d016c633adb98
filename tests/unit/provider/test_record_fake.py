"""The record fake, in-process: commits, reads, templates, listing, idempotency by header."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import httpx
import pytest

from fake_providers.payment.fakes.inbound import mime_subject
from fake_providers.upstreams import ReferenceSource, Route, RouteTemplate, Upstream
from harness.workflow.manifest import load_manifest
from harness.workflow.upstream_config import REFRESHED_TOKEN, token_upstreams

from .conftest import InProcessProvider
from .upstream_helpers import configure

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]
EXPORTS = Path(__file__).parents[1] / "fixtures" / "exports"

NOTION = Upstream(
    "api.notion.com",
    "record",
    ReferenceSource("json", "/properties/order"),
    reads=(Route("POST", "/v1/databases/*/query"),),
    templates=(
        RouteTemplate(
            Route("POST", "/v1/pages"),
            201,
            '{"object": "page", "id": "{{id}}", "order": "{{properties.order}}",'
            ' "title": "Order {{properties.order}} for {{customer}}"}',
        ),
    ),
)


async def send(
    inproc: InProcessProvider, method: str, path: str, host: str = "api.notion.com", **kw: Any
) -> httpx.Response:
    headers = {"Host": host, **kw.pop("headers", {})}
    return await inproc.public.request(method, path, headers=headers, **kw)


async def test_non_get_is_a_commit_answered_from_the_template(inproc: InProcessProvider) -> None:
    await configure(inproc, NOTION)
    body = {"properties": {"order": 42}, "customer": "Ada"}
    answer = await send(inproc, "POST", "/v1/pages", json=body)
    assert answer.status_code == 201
    page = answer.json()
    assert page["order"] == 42  # a whole-string placeholder keeps the JSON type
    assert page["title"] == "Order 42 for Ada"
    [commit] = await inproc.commits(reference="42")
    assert (commit["effect"], commit["effect_id"]) == ("record", page["id"])


async def test_default_answer_echoes_the_request_with_an_id(inproc: InProcessProvider) -> None:
    await configure(inproc, NOTION)
    answer = await send(inproc, "PATCH", "/v1/blocks/b1", json={"properties": {"order": "B"}})
    assert answer.status_code == 200
    assert answer.json()["properties"] == {"order": "B"}
    assert answer.json()["id"]
    assert len(await inproc.commits(reference="B")) == 1


async def test_reads_and_gets_are_not_commits_and_list_what_was_recorded(
    inproc: InProcessProvider,
) -> None:
    await configure(inproc, NOTION)
    empty = await send(inproc, "GET", "/v1/pages")
    assert empty.json() == {"results": [], "has_more": False}
    query = await send(inproc, "POST", "/v1/databases/db1/query", json={"filter": {}})
    assert query.json()["results"] == []
    created = []
    for order, email in ((1, "a@x.test"), (2, "b@x.test")):
        answer = await send(
            inproc, "POST", "/v1/pages", json={"properties": {"order": order}, "email": email}
        )
        created.append(answer.json()["id"])
    listed = await send(inproc, "GET", "/v1/pages")
    assert [r["id"] for r in listed.json()["results"]] == created
    found = await send(inproc, "GET", "/v1/pages", params={"email": "b@x.test", "page_size": "5"})
    assert [r["id"] for r in found.json()["results"]] == [created[1]]
    one = await send(inproc, "GET", f"/v1/pages/{created[0]}")
    assert one.json()["properties"] == {"order": 1}
    missing = await send(inproc, "GET", "/v1/pages/nope")
    assert missing.status_code == 404
    assert len(await inproc.commits()) == 2


async def test_idempotency_by_header_replays(inproc: InProcessProvider) -> None:
    crm = Upstream(
        "crm.example.com",
        "record",
        ReferenceSource("header", "X-Order"),
        idempotency_header="X-Request-Id",
    )
    await configure(inproc, crm)
    headers = {"X-Order": "o-1", "X-Request-Id": "r-1"}
    first = await send(
        inproc, "POST", "/contacts", "crm.example.com", json={"n": 1}, headers=headers
    )
    again = await send(
        inproc, "POST", "/contacts", "crm.example.com", json={"n": 1}, headers=headers
    )
    assert again.content == first.content
    assert again.headers["idempotent-replayed"] == "true"
    other = await send(
        inproc, "POST", "/contacts", "crm.example.com", json={"n": 2}, headers=headers
    )
    assert other.status_code == 422
    plain = await send(inproc, "POST", "/contacts", "crm.example.com", json={"n": 1})
    assert plain.status_code == 200
    assert [c["idempotency_key"] for c in await inproc.commits()] == ["r-1", None]


@pytest.mark.parametrize(
    ("source", "request_kw", "expected"),
    [
        (ReferenceSource("form", "fields[order]"), {"data": {"fields[order]": "F-1"}}, "F-1"),
        (ReferenceSource("query", "ref"), {"params": {"ref": "Q-1"}, "json": {}}, "Q-1"),
        (ReferenceSource("path", r"/orders/([^/]+)"), {"json": {}}, "P-1"),
        (ReferenceSource("body_regex", r"ref=(\w+-\d)"), {"content": b"x ref=R-1 y"}, "R-1"),
    ],
)
async def test_reference_sources(
    inproc: InProcessProvider, source: ReferenceSource, request_kw: dict[str, Any], expected: str
) -> None:
    await configure(inproc, Upstream("api.acme.test", "record", source))
    answer = await send(inproc, "POST", "/orders/P-1", "api.acme.test:443", **request_kw)
    assert answer.status_code == 200, answer.text
    assert len(await inproc.commits(reference=expected)) == 1


async def test_configured_effects_and_faults(inproc: InProcessProvider) -> None:
    upstream = Upstream(
        "api.acme.test",
        "record",
        ReferenceSource("json", "/ref"),
        effects=(Route("POST", "/invoices"),),
        effect="invoice",
    )
    await configure(inproc, upstream)
    await inproc.control.post(
        "/_control/faults", json={"kind": "error_before_commit", "attempts": None}
    )
    note = await send(inproc, "POST", "/notes", "api.acme.test", json={"ref": "I-1"})
    assert note.status_code == 200  # recorded, not an effect: no fault, no commit
    invoice = await send(inproc, "POST", "/invoices", "api.acme.test", json={"ref": "I-1"})
    assert invoice.status_code == 500
    assert await inproc.commits() == []
    await inproc.control.delete("/_control/faults")
    await send(inproc, "POST", "/invoices", "api.acme.test", json={"ref": "I-1"})
    [commit] = await inproc.commits(reference="I-1")
    assert commit["effect"] == "invoice"
    listed = await send(inproc, "GET", "/notes", "api.acme.test")
    assert [r["ref"] for r in listed.json()["results"]] == ["I-1"]


async def test_a_search_route_lists_its_collection_by_filters(inproc: InProcessProvider) -> None:
    """A CRM's "search then create" guard meets what was recorded (HubSpot's search body)."""
    hubspot = Upstream(
        "api.hubapi.com",
        "record",
        ReferenceSource("json", "/properties/order_id"),
        effects=(Route("POST", "/crm/v3/objects/deals"),),
        reads=(Route("POST", "/crm/v3/objects/deals/search"),),
    )
    await configure(inproc, hubspot)

    def search(order: str) -> dict[str, Any]:
        eq = {"propertyName": "order_id", "operator": "EQ", "value": order}
        return {"filterGroups": [{"filters": [eq]}], "limit": 1}

    path = "/crm/v3/objects/deals"
    before = await send(inproc, "POST", f"{path}/search", "api.hubapi.com", json=search("A-1"))
    assert before.json()["results"] == []
    for order in ("A-1", "B-2"):
        deal = {"properties": {"order_id": order, "dealname": f"Order {order}"}}
        await send(inproc, "POST", path, "api.hubapi.com", json=deal)
    found = await send(inproc, "POST", f"{path}/search", "api.hubapi.com", json=search("B-2"))
    assert [r["properties"]["order_id"] for r in found.json()["results"]] == ["B-2"]
    by_query = await send(
        inproc, "GET", f"{path}/search", "api.hubapi.com", params={"order_id": "A-1", "limit": "5"}
    )
    assert [r["properties"]["order_id"] for r in by_query.json()["results"]] == ["A-1"]
    assert [c["reference"] for c in await inproc.commits()] == ["A-1", "B-2"]


PENNYLANE = Upstream(
    "app.pennylane.com",
    "record",
    ReferenceSource("json", "/external_reference"),
    templates=(
        RouteTemplate(Route("GET", "/v2/customers"), 200, '{"items": "{{records}}"}'),
        RouteTemplate(Route("POST", "/v2/customers"), 201, '{"id": "{{number}}"}'),
    ),
)


async def test_number_ids_and_a_listing_in_the_apis_own_shape(inproc: InProcessProvider) -> None:
    await configure(inproc, PENNYLANE)
    host = "app.pennylane.com"
    empty = await send(inproc, "GET", "/v2/customers", host=host)
    assert empty.json() == {"items": []}
    created = await send(inproc, "POST", "/v2/customers", host=host, json={"name": "Ada"})
    number = created.json()["id"]
    assert isinstance(number, int) and number >= 100_000_000
    listed = await send(inproc, "GET", "/v2/customers", host=host)
    [record] = listed.json()["items"]
    assert record["name"] == "Ada"


async def test_a_gmail_send_is_a_commit_keyed_by_its_messages_subject(
    inproc: InProcessProvider,
) -> None:
    """Gmail's users.messages.send carries the message as base64url RFC 2822 in ``raw``:
    a ``subject`` reference reads its (encoded-word) Subject."""
    gmail = Upstream("www.googleapis.com", "record", ReferenceSource("subject", r"Order (\S+) ok"))
    await configure(inproc, gmail)
    message = b"To: a@x.test\r\nSubject: =?UTF-8?B?T3JkZXIgQS03IG9r?=\r\n\r\nThanks"
    raw = base64.urlsafe_b64encode(message).decode().rstrip("=")  # unpadded, as n8n sends it
    answer = await send(
        inproc, "POST", "/gmail/v1/users/me/messages/send", "www.googleapis.com", json={"raw": raw}
    )
    assert answer.status_code == 200
    assert len(await inproc.commits(reference="A-7")) == 1


async def test_the_subject_of_a_body_that_is_no_gmail_message_is_empty() -> None:
    assert mime_subject({"raw": "not base64 !"}) == ""
    assert mime_subject({"raw": 3}) == mime_subject(["raw"]) == mime_subject(None) == ""


async def test_the_token_fake_answers_a_refresh_without_a_commit(
    inproc: InProcessProvider,
) -> None:
    (token,) = token_upstreams(load_manifest(EXPORTS / "gmail_receipt").workflow, ())
    await configure(inproc, token)
    form = "grant_type=refresh_token&refresh_token=1%2F%2Fr&client_id=n8n-chaos"
    answer = await send(
        inproc,
        "POST",
        "/token",
        "oauth2.googleapis.com",
        content=form,
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert answer.status_code == 200
    assert answer.json()["access_token"] == REFRESHED_TOKEN["access_token"]
    assert answer.json()["token_type"] == "Bearer"
    assert await inproc.commits() == []
