"""Zendesk's personality through the record fake, as n8n's Zendesk node calls it: a ticket
created is found by the search API's query language (`type:ticket` and the user's terms), read
and changed by id; a change is no new effect."""

from __future__ import annotations

from typing import Any

import pytest

from fake_providers.personalities import zendesk as zendesk_personality
from fake_providers.upstreams import ReferenceSource, Upstream

from .conftest import InProcessProvider
from .test_personalities import send
from .upstream_helpers import configure

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]
HOST = "acme.zendesk.com"


async def zendesk(inproc: InProcessProvider) -> None:
    reference = ReferenceSource("json", "/ticket/external_id")
    await configure(inproc, Upstream(HOST, "record", reference, personality="zendesk"))


async def create(inproc: InProcessProvider, **ticket: Any) -> dict[str, Any]:
    answer = await send(inproc, HOST, "POST", "/api/v2/tickets.json", json={"ticket": ticket})
    assert answer.status_code == 201, answer.text
    created: dict[str, Any] = answer.json()["ticket"]
    return created


async def search(
    inproc: InProcessProvider, query: str, indexed: bool = True, **params: str
) -> list[Any]:
    """The ids a search finds; the query language's tests (`indexed`) search once Zendesk has
    indexed every ticket."""
    if indexed:
        await inproc.catch_up_index()
    params = {"query": f"type:ticket {query}".strip(), **params}
    answer = await send(inproc, HOST, "GET", "/api/v2/search.json", params=params)
    body = answer.json()
    assert (body["next_page"], body["previous_page"], body["facets"]) == (None, None, None)
    assert body["count"] >= len(body["results"])
    assert all(r["result_type"] == "ticket" for r in body["results"])
    return [r["id"] for r in body["results"]]


async def test_search_finds_the_ticket_created_by_its_external_id(
    inproc: InProcessProvider,
) -> None:
    """The node's create ({"ticket": {comment: {body}, external_id, subject, tags}}) and its
    Get Many (query "type:ticket <the user's query>"): the guard finds its own ticket."""
    await zendesk(inproc)
    assert await search(inproc, "external_id:o-1") == []
    ticket = await create(
        inproc,
        comment={"body": "Order o-1 paid twice"},
        external_id="o-1",
        subject="Refund o-1",
        tags=["Billing", "vip customer"],
    )
    other = await create(inproc, comment={"body": "Where is o-10?"}, external_id="o-10")
    assert isinstance(ticket["id"], int) and ticket["status"] == "new"
    assert ticket["description"] == "Order o-1 paid twice" and "comment" not in ticket
    assert ticket["tags"] == ["billing", "vip", "customer"]
    assert ticket["url"] == f"https://{HOST}/api/v2/tickets/{ticket['id']}.json"
    assert await search(inproc, "external_id:o-1") == [ticket["id"]]
    assert await search(inproc, 'external_id:"o-10"') == [other["id"]]
    assert await search(inproc, "tags:billing") == [ticket["id"]]
    assert await search(inproc, "-tags:billing") == [other["id"]]
    assert await search(inproc, "subject:refund status:new") == [ticket["id"]]
    assert await search(inproc, '"paid twice"') == [ticket["id"]]
    assert sorted(await search(inproc, "o-1")) == sorted([ticket["id"], other["id"]])
    assert await search(inproc, "status<open") != []
    assert await search(inproc, "status:solved") == []
    one_page = await send(
        inproc, HOST, "GET", "/api/v2/search.json", params={"query": "type:ticket", "per_page": 1}
    )
    assert (len(one_page.json()["results"]), one_page.json()["count"]) == (1, 2)
    users = await send(inproc, HOST, "GET", "/api/v2/search.json", params={"query": "type:user"})
    assert users.json()["results"] == []
    assert [c["reference"] for c in await inproc.commits()] == ["o-1", "o-10"]


async def test_get_put_and_delete_by_id_change_the_ticket_not_the_effects(
    inproc: InProcessProvider,
) -> None:
    await zendesk(inproc)
    ticket = await create(inproc, comment={"body": "Help"}, external_id="o-2", tags=["a"])
    path = f"/api/v2/tickets/{ticket['id']}.json"
    assert (await send(inproc, HOST, "GET", path)).json() == {"ticket": ticket}
    missing = await send(inproc, HOST, "GET", "/api/v2/tickets/1.json")
    assert (missing.status_code, missing.json()["error"]) == (404, "RecordNotFound")
    # The node's Update: {"ticket": {status, tags, comment: {body, public}}}.
    change = {"ticket": {"status": "solved", "tags": ["b"], "comment": {"body": "Done"}}}
    changed = await send(inproc, HOST, "PUT", path, json=change)
    assert changed.status_code == 200, changed.text
    assert (changed.json()["ticket"]["status"], changed.json()["ticket"]["tags"]) == (
        "solved",
        ["b"],
    )
    assert changed.json()["ticket"]["description"] == "Help"
    assert await search(inproc, "status:solved external_id:o-2") == [ticket["id"]]
    listed = await send(inproc, HOST, "GET", "/api/v2/tickets.json", params={"external_id": "o-2"})
    assert [t["id"] for t in listed.json()["tickets"]] == [ticket["id"]]
    absent = await send(inproc, HOST, "PUT", "/api/v2/tickets/1.json", json=change)
    assert absent.status_code == 404
    gone = await send(inproc, HOST, "DELETE", path)
    assert gone.status_code == 204
    assert (await send(inproc, HOST, "GET", path)).status_code == 404
    assert await search(inproc, "external_id:o-2") == []
    assert [c["reference"] for c in await inproc.commits()] == ["o-2"]


async def test_search_sees_a_new_ticket_only_once_zendesk_has_indexed_it(
    inproc: InProcessProvider,
) -> None:
    await zendesk(inproc)
    ticket = await create(inproc, external_id="o-9", subject="Order o-9")
    inproc.clock.advance(zendesk_personality.INDEX_LAG_S - 1)
    assert await search(inproc, "external_id:o-9", False) == []  # not indexed yet: a guard's gap
    listed = await send(inproc, HOST, "GET", "/api/v2/tickets.json", params={"external_id": "o-9"})
    assert [t["id"] for t in listed.json()["tickets"]] == [ticket["id"]]
    one = await send(inproc, HOST, "GET", f"/api/v2/tickets/{ticket['id']}.json")
    assert one.json()["ticket"]["id"] == ticket["id"]
    inproc.clock.advance(1)
    assert await search(inproc, "external_id:o-9", False) == [ticket["id"]]


async def test_a_create_again_with_its_idempotency_key_gets_the_first_ticket(
    inproc: InProcessProvider,
) -> None:
    """Zendesk replays a ticket create by its Idempotency-Key: a retry after a lost answer
    is the first ticket, not a second; another key, or none, is a new ticket."""
    await zendesk(inproc)
    body = {"ticket": {"comment": {"body": "o-7"}, "external_id": "o-7"}}

    async def post(key: str | None) -> dict[str, Any]:
        headers = {"Idempotency-Key": key} if key else {}
        answer = await send(
            inproc, HOST, "POST", "/api/v2/tickets.json", json=body, headers=headers
        )
        assert answer.status_code == 201, answer.text
        ticket: dict[str, Any] = answer.json()["ticket"]
        return ticket

    first = await post("tk-o-7")
    assert (await post("tk-o-7"))["id"] == first["id"]
    assert len(await inproc.commits()) == 1
    assert (await post("tk-other"))["id"] != first["id"]
    assert (await post(None))["id"] != first["id"]
    assert len(await inproc.commits()) == 3
