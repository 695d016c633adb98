"""The record fake's memory and its built-in personalities, in-process: a write is read back
by the service's own read, filtered as the service filters; an upsert to the same identity
is one effect; a PATCH changes what later reads return."""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest

from fake_providers.personalities import PERSONALITIES, hubspot, sendgrid
from fake_providers.upstreams import (
    Collection,
    ReferenceSource,
    Route,
    Upstream,
)
from harness.workflow.manifest import case_key

from .conftest import InProcessProvider
from .upstream_helpers import configure

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]
DB = "0f3c8a2e5b7d4c1a9e6f2b8d4a7c3e10"


async def send(
    inproc: InProcessProvider, host: str, method: str, path: str, **kw: Any
) -> httpx.Response:
    headers = {"Host": host, **kw.pop("headers", {})}
    return await inproc.public.request(method, path, headers=headers, **kw)


def personality(host: str, name: str, reference: ReferenceSource | None = None) -> Upstream:
    return Upstream(host, "record", reference, personality=name)


def notion_page(email: str) -> dict[str, Any]:
    return {
        "parent": {"database_id": DB},
        "properties": {
            "Name": {"title": [{"text": {"content": "Ada"}}]},
            "Email": {"email": email},
        },
    }


async def test_notion_query_finds_the_page_created_and_patch_changes_it(
    inproc: InProcessProvider,
) -> None:
    host = "api.notion.com"
    reference = ReferenceSource("json", "/properties/Email/email")
    await configure(inproc, personality(host, "notion", reference))
    query = {"filter": {"and": [{"property": "Email", "email": {"equals": "a@x.test"}}]}}
    path = f"/v1/databases/{DB}/query"
    empty = (await send(inproc, host, "POST", path, json=query)).json()
    assert (empty["object"], empty["results"], empty["has_more"]) == ("list", [], False)
    page = (await send(inproc, host, "POST", "/v1/pages", json=notion_page("a@x.test"))).json()
    await send(inproc, host, "POST", "/v1/pages", json=notion_page("b@x.test"))
    found = (await send(inproc, host, "POST", path, json=query)).json()["results"]
    assert [p["id"] for p in found] == [page["id"]]
    assert found[0]["properties"]["Email"]["type"] == "email"  # as Notion answers it
    other_db = (await send(inproc, host, "POST", "/v1/databases/ffff/query", json={})).json()
    assert other_db["results"] == []
    paged = (await send(inproc, host, "POST", path, json={"page_size": 1})).json()
    assert paged["has_more"] is True and paged["next_cursor"]
    patch = {"properties": {"Email": {"email": "c@x.test"}}}
    changed = await send(inproc, host, "PATCH", f"/v1/pages/{page['id']}", json=patch)
    assert changed.json()["properties"]["Name"]["title"][0]["text"]["content"] == "Ada"
    assert (await send(inproc, host, "POST", path, json=query)).json()["results"] == []
    one = (await send(inproc, host, "GET", f"/v1/pages/{page['id']}")).json()
    assert one["properties"]["Email"]["email"] == "c@x.test"
    assert [c["reference"] for c in await inproc.commits()] == ["a@x.test", "b@x.test"]


async def test_notion_answers_the_shape_the_notion_node_reads(inproc: InProcessProvider) -> None:
    """v3 of the Notion node reads the data source's title property before it creates a
    page, queries /v1/data_sources/<id>/query, and simplifies rich text by its plain_text."""
    host = "api.notion.com"
    await configure(inproc, personality(host, "notion", ReferenceSource("json", "/x")))
    schema = (await send(inproc, host, "GET", f"/v1/data_sources/{DB}")).json()
    assert schema["object"] == "data_source"
    assert [p["type"] for p in schema["properties"].values()] == ["title"]
    page = {
        "parent": {"type": "data_source_id", "data_source_id": DB},
        "properties": {
            "Name": {"title": [{"text": {"content": "Order o-1"}}]},
            "Order ID": {"rich_text": [{"text": {"content": "o-1"}}]},
        },
    }
    created = (await send(inproc, host, "POST", "/v1/pages", json=page)).json()
    assert created["properties"]["Order ID"]["rich_text"][0]["plain_text"] == "o-1"
    query = {"filter": {"or": [{"property": "Order ID", "rich_text": {"equals": "o-1"}}]}}
    path = f"/v1/data_sources/{DB}/query"
    found = (await send(inproc, host, "POST", path, json=query)).json()["results"]
    assert [p["id"] for p in found] == [created["id"]]
    title = found[0]["properties"]["Name"]["title"][0]
    assert (title["type"], title["plain_text"], title["text"]["content"]) == (
        "text",
        "Order o-1",
        "Order o-1",
    )


async def test_postgrest_filters_representation_patch_and_upsert(
    inproc: InProcessProvider,
) -> None:
    host = "proj.supabase.co"
    reference = ReferenceSource("query", "id", r"^eq\.(.+)$")
    await configure(inproc, personality(host, "postgrest", reference))
    table = "/rest/v1/payment_milestones"
    represent = {"Prefer": "return=representation"}
    row = {"id": "m-1", "status": "open"}
    created = await send(inproc, host, "POST", table, json=row, headers=represent)
    assert (created.status_code, created.json()) == (201, [row])
    quiet = await send(inproc, host, "POST", table, json={"id": "m-2", "status": "open"})
    assert (quiet.status_code, quiet.content) == (201, b"")
    read = await send(inproc, host, "GET", table, params={"id": "eq.m-1", "select": "*"})
    assert read.json() == [row]
    both = await send(inproc, host, "GET", table, params={"id": "in.(m-1,m-2)"})
    assert len(both.json()) == 2
    patched = await send(
        inproc, host, "PATCH", f"{table}?id=eq.m-1", json={"status": "paid"}, headers=represent
    )
    assert patched.json() == [{"id": "m-1", "status": "paid"}]
    single = {"Accept": "application/vnd.pgrst.object+json"}
    after = await send(inproc, host, "GET", f"{table}?id=eq.m-1", headers=single)
    assert after.json()["status"] == "paid"  # the PATCH is what the next read sees
    assert (await send(inproc, host, "GET", f"{table}?status=eq.open")).json()[0]["id"] == "m-2"
    # the PATCH's reference came out of `eq.m-1`; it is evidence, not a commit
    assert len(await inproc.commits()) == 2
    upsert = {"Prefer": "resolution=merge-duplicates,return=representation"}
    for status in ("new", "newer"):
        await send(
            inproc,
            host,
            "POST",
            "/rest/v1/payouts?on_conflict=order_id",
            json={"order_id": "o-9", "status": status},
            headers=upsert,
        )
    payouts = (await send(inproc, host, "GET", "/rest/v1/payouts")).json()
    assert [p["status"] for p in payouts] == ["newer"]
    assert len(await inproc.commits()) == 3  # the second upsert is not a second effect
    rpc = await send(inproc, host, "POST", "/rest/v1/rpc/claim", json={"k": "o-9"})
    assert rpc.status_code == 200


async def test_postgrest_logical_filters_as_the_supabase_node_sends_them(
    inproc: InProcessProvider,
) -> None:
    """n8n's Supabase node (getAll, "all"/"any" conditions) filters with and=(...)/or=(...),
    its values quoted when they hold PostgREST's reserved characters."""
    host = "proj.supabase.co"
    await configure(inproc, personality(host, "postgrest"))
    table = "/rest/v1/orders"
    for row in ({"order_id": "o-1", "n": 1}, {"order_id": "o.2", "n": 2}):
        await send(inproc, host, "POST", table, json=[row])

    async def ids(**query: str) -> list[str]:
        return [
            r["order_id"] for r in (await send(inproc, host, "GET", table, params=query)).json()
        ]

    assert await ids(**{"and": "(order_id.eq.o-1)", "limit": "1"}) == ["o-1"]
    assert await ids(**{"and": '(order_id.eq."o.2",n.gt.1)'}) == ["o.2"]
    assert await ids(**{"or": "(order_id.eq.o-1,n.eq.2)"}) == ["o-1", "o.2"]
    assert await ids(**{"and": "(n.gte.1,or(order_id.eq.o-9,n.lt.2))"}) == ["o-1"]
    assert await ids(**{"and": "(order_id.eq.o-9)"}) == []


async def test_sendgrid_contact_upsert_is_one_effect_per_email(
    inproc: InProcessProvider,
) -> None:
    host = "api.sendgrid.com"
    await configure(
        inproc, personality(host, "sendgrid", ReferenceSource("json", "/contacts/0/email"))
    )
    body = {"contacts": [{"email": "Ada@x.test", "first_name": "Ada"}]}
    first = await send(inproc, host, "PUT", "/v3/marketing/contacts", json=body)
    again = await send(inproc, host, "PUT", "/v3/marketing/contacts", json=body)
    assert first.status_code == again.status_code == 202
    assert len(await inproc.commits()) == 1
    attempts = (await inproc.control.get("/_control/attempts")).json()
    assert len([a for a in attempts if a["reference"] == "Ada@x.test"]) == 2  # both in evidence

    async def search_emails() -> httpx.Response:
        body = {"emails": ["ada@x.test"]}
        return await send(inproc, host, "POST", "/v3/marketing/contacts/search/emails", json=body)

    # SendGrid queues the upsert: no read finds the contact until the job has run.
    assert (await search_emails()).status_code == 404
    listed = await send(inproc, host, "GET", "/v3/marketing/contacts")
    assert listed.json()["result"] == []
    job = f"/v3/marketing/contacts/imports/{first.json()['job_id']}"
    assert (await send(inproc, host, "GET", job)).json()["status"] == "pending"
    inproc.clock.advance(sendgrid.INDEX_LAG_S)
    assert (await send(inproc, host, "GET", job)).json()["status"] == "completed"
    search = await search_emails()
    assert search.json()["result"]["ada@x.test"]["contact"]["first_name"] == "Ada"
    # n8n's SendGrid node: get by email (SGQL LIKE) and Get Many (pages on _metadata.next).
    other = {"contacts": [{"email": "bob@x.test"}]}
    await send(inproc, host, "PUT", "/v3/marketing/contacts", json=other)
    inproc.clock.advance(sendgrid.INDEX_LAG_S)  # bob is found too: the query must filter
    for query in ("email LIKE 'ada@x.test' ", "email = 'ADA@x.test'", "email LIKE 'a%'"):
        body = {"query": query}
        like = await send(inproc, host, "POST", "/v3/marketing/contacts/search", json=body)
        assert [c["email"] for c in like.json()["result"]] == ["ada@x.test"], query
        assert "next" not in like.json()["_metadata"]
    mail = await send(inproc, host, "POST", "/v3/mail/send", json={"subject": "Hi"})
    assert (mail.status_code, mail.content) == (202, b"")


async def test_sheets_read_returns_the_rows_appended_and_updated(
    inproc: InProcessProvider,
) -> None:
    host = "sheets.googleapis.com"
    await configure(inproc, personality(host, "sheets", ReferenceSource("json", "/values/0/0")))
    base = "/v4/spreadsheets/S1/values"
    await send(inproc, host, "PUT", f"{base}/Sheet1!A1:B1", json={"values": [["order_id", "n"]]})
    for key in ("k1", "k2"):
        await send(inproc, host, "POST", f"{base}/Sheet1!A:B:append", json={"values": [[key, 1]]})
    read = (await send(inproc, host, "GET", f"{base}/Sheet1!A:B")).json()
    assert read["values"] == [["order_id", "n"], ["k1", 1], ["k2", 1]]
    update = {"data": [{"range": "Sheet1!A3:B3", "values": [["k2", 2]]}]}
    await send(inproc, host, "POST", f"{base}:batchUpdate", json=update)
    rows = (await send(inproc, host, "GET", f"{base}/Sheet1!A2:B")).json()["values"]
    assert rows == [["k1", 1], ["k2", 2]]
    assert sorted(c["reference"] for c in await inproc.commits()) == ["k1", "k2"]
    meta = (await send(inproc, host, "GET", "/v4/spreadsheets/S1")).json()
    assert meta["sheets"][0]["properties"]["title"] == "Sheet1"


async def test_sheets_default_append_is_a_grid_row_then_a_put_past_the_last_row(
    inproc: InProcessProvider,
) -> None:
    """The node's append without "Minimise API Calls": a header into the empty sheet (no
    effect), a grid row added (no effect), the values PUT into the row past the last (one)."""
    host = "sheets.googleapis.com"
    await configure(inproc, personality(host, "sheets", ReferenceSource("json", "/values/0/0")))
    base = "/v4/spreadsheets/S1/values"
    await send(inproc, host, "PUT", f"{base}/Sheet1!1:1", json={"values": [["order_id", "n"]]})
    grid = {"requests": [{"appendDimension": {"sheetId": 0, "dimension": "ROWS", "length": 1}}]}
    added = await send(inproc, host, "POST", "/v4/spreadsheets/S1:batchUpdate", json=grid)
    assert added.json() == {"spreadsheetId": "S1", "replies": [{}]}
    for row, key in ((2, "k1"), (3, "k2"), (2, "k1")):
        put = await send(
            inproc, host, "PUT", f"{base}/Sheet1!{row}:{row}", json={"values": [[key, 1]]}
        )
        assert put.json()["updatedRows"] == 1
    read = (await send(inproc, host, "GET", f"{base}/Sheet1")).json()
    assert read["values"] == [["order_id", "n"], ["k1", 1], ["k2", 1]]
    assert sorted(c["reference"] for c in await inproc.commits()) == ["k1", "k2"]


async def test_airtable_filter_by_formula_and_perform_upsert(inproc: InProcessProvider) -> None:
    host = "api.airtable.com"
    await configure(
        inproc, personality(host, "airtable", ReferenceSource("json", "/records/0/fields/Order"))
    )
    table = "/v0/appX/Orders"
    upsert = {
        "performUpsert": {"fieldsToMergeOn": ["Order"]},
        "records": [{"fields": {"Order": "o-1", "Status": "new"}}],
    }
    first = (await send(inproc, host, "PATCH", table, json=upsert)).json()
    upsert["records"][0]["fields"]["Status"] = "paid"
    await send(inproc, host, "PATCH", table, json=upsert)
    found = await send(inproc, host, "GET", table, params={"filterByFormula": "{Order} = 'o-1'"})
    [record] = found.json()["records"]
    assert (record["id"], record["fields"]["Status"]) == (first["records"][0]["id"], "paid")
    assert len(await inproc.commits()) == 1
    none = await send(inproc, host, "GET", table, params={"filterByFormula": "{Order}='o-2'"})
    assert none.json() == {"records": []}


async def test_hubspot_search_finds_the_deal_and_batch_upsert_is_one_effect(
    inproc: InProcessProvider,
) -> None:
    host = "api.hubapi.com"
    await configure(
        inproc, personality(host, "hubspot", ReferenceSource("json", "/properties/order_id"))
    )
    deals = "/crm/v3/objects/deals"
    made = await send(inproc, host, "POST", deals, json={"properties": {"order_id": "o-1"}})
    assert made.status_code == 201 and made.json()["id"].isdigit()
    search = {
        "filterGroups": [
            {"filters": [{"propertyName": "order_id", "operator": "EQ", "value": "o-1"}]}
        ]
    }
    found = (await send(inproc, host, "POST", f"{deals}/search", json=search)).json()
    assert found["total"] == 0  # HubSpot's search has not indexed it yet: a guard's gap
    inproc.clock.advance(hubspot.INDEX_LAG_S)
    found = (await send(inproc, host, "POST", f"{deals}/search", json=search)).json()
    assert (found["total"], found["results"][0]["id"]) == (1, made.json()["id"])
    one = await send(inproc, host, "GET", f"{deals}/{made.json()['id']}")
    assert one.json()["properties"]["order_id"] == "o-1"
    batch = {"inputs": [{"idProperty": "email", "id": "a@x.test", "properties": {"n": "1"}}]}
    for _ in range(2):
        await send(inproc, host, "POST", "/crm/v3/objects/contacts/batch/upsert", json=batch)
    contacts = (await send(inproc, host, "GET", "/crm/v3/objects/contacts")).json()["results"]
    assert len(contacts) == 1
    assert len(await inproc.commits()) == 2


async def test_hubspot_a_second_v3_contact_with_the_email_is_409_and_no_effect(
    inproc: InProcessProvider,
) -> None:
    """HubSpot's contact email is unique: a v3 create (or batch create) of an email it has
    already is its 409 CONFLICT naming the existing id; another email is a new contact."""
    host = "api.hubapi.com"
    await configure(
        inproc, personality(host, "hubspot", ReferenceSource("json", "/properties/email"))
    )
    contacts = "/crm/v3/objects/contacts"
    made = await send(inproc, host, "POST", contacts, json={"properties": {"email": "a@x.test"}})
    assert made.status_code == 201
    again = await send(inproc, host, "POST", contacts, json={"properties": {"email": "A@x.test"}})
    assert again.status_code == 409, again.text
    assert again.json()["category"] == "CONFLICT"
    assert again.json()["message"] == f"Contact already exists. Existing ID: {made.json()['id']}"
    batch = {"inputs": [{"properties": {"email": "a@x.test"}}]}
    assert (
        await send(inproc, host, "POST", f"{contacts}/batch/create", json=batch)
    ).status_code == 409
    other = await send(inproc, host, "POST", contacts, json={"properties": {"email": "b@x.test"}})
    assert other.status_code == 201 and other.json()["id"] != made.json()["id"]
    assert [c["reference"] for c in await inproc.commits()] == ["a@x.test", "b@x.test"]


async def test_hubspot_a_legacy_deal_create_is_found_by_the_v3_search(
    inproc: InProcessProvider,
) -> None:
    """n8n's HubSpot node creates a deal by POST /deals/v1/deal (properties as a list of
    name/value) and searches by POST /crm/v3/objects/deals/search: one collection."""
    host = "api.hubapi.com"
    reference = ReferenceSource("body_regex", r'"name":"dealname","value":"([^"]+)"')
    await configure(inproc, personality(host, "hubspot", reference))
    body = {
        "properties": [
            {"name": "dealstage", "value": "appointmentscheduled"},
            {"name": "dealname", "value": "o-7"},
        ],
        "associations": {},
    }
    made = await send(inproc, host, "POST", "/deals/v1/deal", json=body)
    deal = made.json()
    assert made.status_code == 200 and isinstance(deal["dealId"], int)
    assert deal["properties"]["dealname"]["value"] == "o-7"
    search = {
        "filterGroups": [
            {"filters": [{"propertyName": "dealname", "operator": "EQ", "value": "o-7"}]}
        ]
    }
    await inproc.catch_up_index()
    found = (await send(inproc, host, "POST", "/crm/v3/objects/deals/search", json=search)).json()
    assert [r["id"] for r in found["results"]] == [str(deal["dealId"])]
    assert found["results"][0]["properties"]["dealstage"] == "appointmentscheduled"
    assert [c["reference"] for c in await inproc.commits()] == ["o-7"]


async def test_hubspot_a_contact_created_or_updated_by_email_is_one_contact(
    inproc: InProcessProvider,
) -> None:
    """n8n's HubSpot node upserts a contact by POST /contacts/v1/contact/createOrUpdate/email/
    <email> (properties as a list of property/value), answered {vid, isNew}, then reads it by
    GET .../vid/<vid>/profile: the same email again is the same contact, isNew false."""
    host = "api.hubapi.com"
    reference = ReferenceSource("path", r"/email/([^/@%]+)(?:@|%40)")
    await configure(inproc, personality(host, "hubspot", reference))
    upsert = "/contacts/v1/contact/createOrUpdate/email/o-9@x.test"
    body = {"properties": [{"property": "firstname", "value": "Ada"}]}
    first = (await send(inproc, host, "POST", upsert, json=body)).json()
    again = (await send(inproc, host, "POST", upsert.replace("@", "%40"), json=body)).json()
    assert isinstance(first["vid"], int) and first["isNew"] is True
    assert again == {"vid": first["vid"], "isNew": False}
    profile = await send(inproc, host, "GET", f"/contacts/v1/contact/vid/{first['vid']}/profile")
    assert profile.json()["properties"]["email"]["value"] == "o-9@x.test"
    assert profile.json()["properties"]["firstname"]["value"] == "Ada"
    missing = await send(inproc, host, "GET", "/contacts/v1/contact/vid/1/profile")
    assert missing.status_code == 404
    search = {
        "filterGroups": [
            {"filters": [{"propertyName": "email", "operator": "EQ", "value": "o-9@x.test"}]}
        ]
    }
    await inproc.catch_up_index()
    found = await send(inproc, host, "POST", "/crm/v3/objects/contacts/search", json=search)
    assert [r["id"] for r in found.json()["results"]] == [str(first["vid"])]
    assert [c["reference"] for c in await inproc.commits()] == ["o-9"]


async def test_pipedrive_search_finds_the_deal_created_and_wraps_every_answer(
    inproc: InProcessProvider,
) -> None:
    """n8n's Pipedrive node (v2): POST /api/v2/deals, GET /v1/deals/search?term=..., GET
    /api/v2/deals/<id>; answers are {success, data}, a search's data.items[].item."""
    host = "api.pipedrive.com"
    await configure(
        inproc, personality(host, "pipedrive", ReferenceSource("json", "/title", "^Order (.+)$"))
    )
    made = (await send(inproc, host, "POST", "/api/v2/deals", json={"title": "Order o-1"})).json()
    await send(inproc, host, "POST", "/api/v2/deals", json={"title": "Order o-10"})
    deal = made["data"]
    assert made["success"] is True and isinstance(deal["id"], int) and deal["status"] == "open"
    exact = {"term": "Order o-1", "exact_match": "true", "fields": "title"}
    found = (await send(inproc, host, "GET", "/v1/deals/search", params=exact)).json()
    assert [i["item"]["id"] for i in found["data"]["items"]] == [deal["id"]]
    assert found["data"]["items"][0]["item"]["type"] == "deal"
    loose = (await send(inproc, host, "GET", "/v1/deals/search", params={"term": "o-1"})).json()
    assert len(loose["data"]["items"]) == 2  # a search without exact_match finds text in text
    one = (await send(inproc, host, "GET", f"/api/v2/deals/{deal['id']}")).json()
    assert one == {"success": True, "data": deal}
    await send(inproc, host, "PATCH", f"/api/v2/deals/{deal['id']}", json={"status": "won"})
    listed = (await send(inproc, host, "GET", "/api/v2/deals", params={"status": "won"})).json()
    assert [d["id"] for d in listed["data"]] == [deal["id"]]
    assert sorted(c["reference"] for c in await inproc.commits()) == ["o-1", "o-10"]


async def test_slack_and_twilio_answer_what_their_nodes_read(inproc: InProcessProvider) -> None:
    await configure(
        inproc,
        personality("slack.com", "slack", ReferenceSource("json", "/text", r"Order (\S+)")),
        personality("api.twilio.com", "twilio", ReferenceSource("form", "Body")),
    )
    posted = await send(
        inproc,
        "slack.com",
        "POST",
        "/api/chat.postMessage",
        json={"channel": "C1", "text": "Order o-7 paid"},
    )
    assert posted.json()["ok"] is True and posted.json()["ts"]
    history = await send(inproc, "slack.com", "GET", "/api/conversations.history?channel=C1")
    assert history.json()["messages"][0]["text"] == "Order o-7 paid"
    sms = await send(
        inproc,
        "api.twilio.com",
        "POST",
        "/2010-04-01/Accounts/AC1/Messages.json",
        content=urlencode({"To": "+15550001", "From": "+15550002", "Body": "o-8"}),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert sms.status_code == 201 and sms.json()["sid"].startswith("SM")
    assert sorted(c["reference"] for c in await inproc.commits()) == ["o-7", "o-8"]


async def test_slack_and_twilio_find_the_case_key_anywhere_in_the_text_by_default(
    inproc: InProcessProvider,
) -> None:
    """The default reference (no regex in the manifest) finds the case's key inside the text:
    n8n's Slack node appends its footer to every message, and a message names the key in a
    sentence. The whole text as the reference judged every case STRAY."""
    slack, twilio = PERSONALITIES["slack"], PERSONALITIES["twilio"]
    await configure(
        inproc,
        personality("slack.com", "slack", slack.reference("order_id")),
        personality("api.twilio.com", "twilio", twilio.reference("order_id")),
    )
    key, other = case_key("slack_alert-retry-no_fault-none-r2"), case_key("sms order #1")
    footer = "\n_Automated with this <http://127.0.0.1:5678/workflow/Ab1|n8n workflow>_"
    text = {"channel": "C1", "text": f"New order {key}{footer}"}
    await send(inproc, "slack.com", "POST", "/api/chat.postMessage", json=text)
    await send(
        inproc,
        "api.twilio.com",
        "POST",
        "/2010-04-01/Accounts/AC1/Messages.json",
        content=urlencode({"To": "+15550001", "Body": f"Order {other} paid."}),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert sorted(c["reference"] for c in await inproc.commits()) == sorted([key, other])


async def test_a_contact_and_its_welcome_mail_are_two_kinds_of_effect_once_each(
    inproc: InProcessProvider,
) -> None:
    """One sign-up adds the SendGrid contact and sends the welcome mail: two effects of two
    kinds (the oracle counts per kind), found by the default reference in either request; a
    HubSpot contact and a deal are two kinds too. "2 record commits" was a false DUPLICATE."""
    sendgrid_kind, hubspot_kind = PERSONALITIES["sendgrid"], PERSONALITIES["hubspot"]
    await configure(
        inproc,
        personality("api.sendgrid.com", "sendgrid", sendgrid_kind.reference("email")),
        personality("api.hubapi.com", "hubspot", hubspot_kind.reference("order_id")),
    )
    key = case_key("welcome-retry-no_fault-none")
    contact = {"contacts": [{"email": f"{key}@example.com"}]}
    await send(inproc, "api.sendgrid.com", "PUT", "/v3/marketing/contacts", json=contact)
    mail = {
        "personalizations": [{"to": [{"email": f"{key}@example.com"}]}],
        "subject": "Welcome!",
        "content": [{"type": "text/plain", "value": "Hello"}],
    }
    await send(inproc, "api.sendgrid.com", "POST", "/v3/mail/send", json=mail)
    objects = "/crm/v3/objects"
    for kind in ("deals", "contacts"):
        body = {"properties": {"order_id": key, "email": f"{kind}-{key}@x.test"}}
        await send(inproc, "api.hubapi.com", "POST", f"{objects}/{kind}", json=body)
    commits = await inproc.commits(reference=key)
    assert sorted(c["effect"] for c in commits) == ["contacts", "contacts", "deals", "mail"]


async def test_a_declared_collection_reads_its_writes_on_another_path(
    inproc: InProcessProvider,
) -> None:
    host = "api.pennylane.test"
    customers = Collection(
        "customers",
        writes=(Route("POST", "/company_customers"),),
        reads=(Route("GET", "/customers"),),
    )
    await configure(
        inproc, Upstream(host, "record", ReferenceSource("json", "/ref"), collections=(customers,))
    )
    assert (await send(inproc, host, "GET", "/customers?ref=c-1")).json()["results"] == []
    made = (await send(inproc, host, "POST", "/company_customers", json={"ref": "c-1"})).json()
    listed = (await send(inproc, host, "GET", "/customers?ref=c-1")).json()["results"]
    assert [c["id"] for c in listed] == [made["id"]]
    assert (await send(inproc, host, "GET", "/customers?ref=c-2")).json()["results"] == []
    assert (await send(inproc, host, "GET", f"/company_customers/{made['id']}")).json() == made
    assert (await send(inproc, host, "GET", "/company_customers/nope")).status_code == 404


async def test_a_free_text_search_lists_only_the_records_holding_its_text(
    inproc: InProcessProvider,
) -> None:
    """Pipedrive's GET /v1/deals/search?term=...: `term` names no field, it searches the
    records' text. Listing every deal would let a "search, then create" guard find another
    order's deal and answer that one."""
    host = "api.pipedrive.test"
    deals = Collection(
        "deals",
        writes=(Route("POST", "/api/v2/deals"),),
        reads=(Route("GET", "/v1/deals/search"),),
    )
    reference = ReferenceSource("json", "/title", r"^Order (.+)$")
    await configure(inproc, Upstream(host, "record", reference, collections=(deals,)))
    for order in ("o-1", "o-2"):
        await send(inproc, host, "POST", "/api/v2/deals", json={"title": f"Order {order}"})
    search = "/v1/deals/search?term=order%20O-2&fields=title&limit=10"
    found = (await send(inproc, host, "GET", search)).json()["results"]
    assert [d["title"] for d in found] == ["Order o-2"]
    none = await send(inproc, host, "GET", "/v1/deals/search?term=Order%20o-3")
    assert none.json()["results"] == []


async def test_identity_makes_a_declared_collection_upsert(inproc: InProcessProvider) -> None:
    host = "crm.example.test"
    people = Collection("people", writes=(Route("PUT", "/people"),), identity="email")
    await configure(
        inproc, Upstream(host, "record", ReferenceSource("json", "/email"), collections=(people,))
    )
    for name in ("Ada", "Ada L."):
        await send(inproc, host, "PUT", "/people", json={"email": "a@x.test", "name": name})
    assert len(await inproc.commits(reference="a@x.test")) == 1


async def test_concurrent_upserts_to_one_identity_are_one_effect(inproc: InProcessProvider) -> None:
    host = "api.sendgrid.com"
    await configure(
        inproc, personality(host, "sendgrid", ReferenceSource("json", "/contacts/0/email"))
    )
    body = {"contacts": [{"email": "z@x.test"}]}
    answers = await asyncio.gather(
        *(send(inproc, host, "PUT", "/v3/marketing/contacts", json=body) for _ in range(5))
    )
    assert {a.status_code for a in answers} == {202}
    assert len({a.json()["job_id"] for a in answers}) == 1  # the one contact's id
    assert len(await inproc.commits(reference="z@x.test")) == 1


async def test_postgrest_insert_of_a_key_there_already_is_409_and_one_effect(
    inproc: InProcessProvider,
) -> None:
    host = "proj.supabase.co"
    await configure(inproc, personality(host, "postgrest", ReferenceSource("json", "/id")))
    claims = await asyncio.gather(
        *(send(inproc, host, "POST", "/rest/v1/claims", json={"id": "c-1"}) for _ in range(4))
    )
    assert sorted(a.status_code for a in claims) == [201, 409, 409, 409]
    assert next(a for a in claims if a.status_code == 409).json()["code"] == "23505"
    assert len(await inproc.commits(reference="c-1")) == 1
    assert len((await send(inproc, host, "GET", "/rest/v1/claims")).json()) == 1


async def test_a_seeded_row_is_read_back_and_commits_nothing(inproc: InProcessProvider) -> None:
    """A seed on a record fake (the row a status gate reads) is stored as the service stores
    a write, and is no effect of the case."""
    host = "proj.supabase.co"
    await configure(inproc, personality(host, "postgrest"))
    seeded = await inproc.control.post(
        "/_control/seed",
        json={"host": host, "path": "/rest/v1/orders", "body": {"id": "o-1", "status": "open"}},
    )
    assert seeded.json()["status"] == 201, seeded.text
    read = await send(inproc, host, "GET", "/rest/v1/orders", params={"id": "eq.o-1"})
    assert read.json() == [{"id": "o-1", "status": "open"}]
    assert await inproc.commits() == []


async def test_a_seeded_deal_keeps_the_id_the_trigger_names(inproc: InProcessProvider) -> None:
    """A Pipedrive deal seeded with id 4242 (a number, as Pipedrive's) is the deal the
    workflow's update finds; the update, not the seed, is the case's effect."""
    host = "api.pipedrive.com"
    await configure(
        inproc, personality(host, "pipedrive", ReferenceSource("json", "/title", "^Order (.+)$"))
    )
    deal = {"id": 4242, "title": "Order o-1", "value": 90}
    seeded = await inproc.control.post(
        "/_control/seed", json={"host": host, "path": "/api/v2/deals", "body": deal}
    )
    assert seeded.json()["body"]["data"]["id"] == 4242, seeded.text
    one = (await send(inproc, host, "GET", "/api/v2/deals/4242")).json()
    assert one["data"]["title"] == "Order o-1"
    await send(inproc, host, "PATCH", "/api/v2/deals/4242", json={"status": "won"})
    assert (await send(inproc, host, "GET", "/api/v2/deals/4242")).json()["data"]["status"] == "won"
    assert await inproc.commits() == []  # the seed is set-up; this PATCH is no new effect
