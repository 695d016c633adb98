"""Mailchimp's personality through the record fake, as n8n's Mailchimp node calls it (the
email itself in the path where Mailchimp takes the subscriber hash): one member per (list,
email), a second add is Mailchimp's 400 Member Exists, a PUT upsert is one effect."""

from __future__ import annotations

import hashlib

import pytest

from fake_providers.upstreams import ReferenceSource, Upstream

from .conftest import InProcessProvider
from .test_personalities import send
from .upstream_helpers import configure

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]
HOST = "us21.api.mailchimp.com"
MEMBERS = "/3.0/lists/l1/members"


async def mailchimp(inproc: InProcessProvider) -> None:
    reference = ReferenceSource("json", "/email_address", "^([^@]+)@")
    await configure(inproc, Upstream(HOST, "record", reference, personality="mailchimp"))


async def test_a_second_add_of_an_email_is_member_exists_and_no_effect(
    inproc: InProcessProvider,
) -> None:
    await mailchimp(inproc)
    body = {"listId": "l1", "email_address": "Ada@x.test", "status": "subscribed", "tags": ["vip"]}
    first = await send(inproc, HOST, "POST", MEMBERS, json=body)
    assert first.status_code == 200, first.text
    member = first.json()
    hashed = hashlib.md5(b"ada@x.test").hexdigest()
    assert (member["id"], member["list_id"]) == (hashed, "l1")
    assert member["email_address"] == "Ada@x.test"
    assert member["status"] == "subscribed" and member["unique_email_id"]
    assert member["tags"] == [{"id": member["tags"][0]["id"], "name": "vip"}]
    assert "listId" not in member
    again = await send(inproc, HOST, "POST", MEMBERS, json={**body, "email_address": "ada@x.test"})
    assert again.status_code == 400
    assert again.json()["title"] == "Member Exists" and again.json()["status"] == 400
    assert again.json()["detail"].startswith("ada@x.test is already a list member. Use PUT")
    # Another list is another audience: the same email is a new member there.
    other_list = await send(inproc, HOST, "POST", "/3.0/lists/l2/members", json=body)
    assert other_list.status_code == 200
    assert [c["reference"] for c in await inproc.commits()] == ["Ada", "Ada"]
    listed = (await send(inproc, HOST, "GET", MEMBERS)).json()
    assert (listed["list_id"], listed["total_items"]) == ("l1", 1)
    assert [m["id"] for m in listed["members"]] == [hashed]


async def test_get_by_email_or_hash_and_put_upserts_one_member(inproc: InProcessProvider) -> None:
    await mailchimp(inproc)
    missing = await send(inproc, HOST, "GET", f"{MEMBERS}/bob@x.test")
    assert missing.status_code == 404 and missing.json()["title"] == "Resource Not Found"
    # The node's Update: PUT by email, the body naming the email again.
    put = {"listId": "l1", "email_address": "bob@x.test", "merge_fields": {"FNAME": "Bob"}}
    created = await send(inproc, HOST, "PUT", f"{MEMBERS}/bob@x.test", json=put)
    assert created.status_code == 200 and created.json()["status"] == "subscribed"
    unsubscribe = {"email_address": "bob@x.test", "status": "unsubscribed"}
    changed = await send(inproc, HOST, "PUT", f"{MEMBERS}/Bob%40x.test", json=unsubscribe)
    assert changed.json()["id"] == created.json()["id"]
    hashed = created.json()["id"]
    by_hash = (await send(inproc, HOST, "GET", f"{MEMBERS}/{hashed}")).json()
    by_email = (await send(inproc, HOST, "GET", f"{MEMBERS}/BOB@x.test")).json()
    assert by_hash == by_email
    assert (by_hash["status"], by_hash["merge_fields"]) == ("unsubscribed", {"FNAME": "Bob"})
    # A PUT by hash on the member there changes it: still one member, one effect.
    resubscribe = {"status": "subscribed"}
    await send(inproc, HOST, "PUT", f"{MEMBERS}/{hashed}", json=resubscribe)
    after = (await send(inproc, HOST, "GET", f"{MEMBERS}/{hashed}")).json()
    assert (after["status"], after["email_address"]) == ("subscribed", "bob@x.test")
    assert [c["reference"] for c in await inproc.commits()] == ["bob"]
    # Adding the email the PUT created is Member Exists too.
    add = await send(inproc, HOST, "POST", MEMBERS, json={"email_address": "bob@x.test"})
    assert add.status_code == 400
    assert len(await inproc.commits()) == 1


async def test_get_many_pages_by_offset_and_filters_by_status(inproc: InProcessProvider) -> None:
    """The node's Return All pages with offset/count until a page holds no member."""
    await mailchimp(inproc)
    for name, status in (("a", "subscribed"), ("b", "pending"), ("c", "subscribed")):
        body = {"email_address": f"{name}@x.test", "status": status}
        assert (await send(inproc, HOST, "POST", MEMBERS, json=body)).status_code == 200
    first = (await send(inproc, HOST, "GET", MEMBERS, params={"offset": 0, "count": 2})).json()
    rest = (await send(inproc, HOST, "GET", MEMBERS, params={"offset": 2, "count": 2})).json()
    past = (await send(inproc, HOST, "GET", MEMBERS, params={"offset": 4, "count": 2})).json()
    assert [len(p["members"]) for p in (first, rest, past)] == [2, 1, 0]
    assert first["total_items"] == 3
    pending = (await send(inproc, HOST, "GET", MEMBERS, params={"status": "pending"})).json()
    assert [m["email_address"] for m in pending["members"]] == ["b@x.test"]
    no_email = await send(inproc, HOST, "POST", MEMBERS, json={"status": "subscribed"})
    assert no_email.status_code == 400 and no_email.json()["title"] == "Invalid Resource"
    tags = {"tags": [{"name": "x", "status": "active"}]}
    tagged = await send(inproc, HOST, "POST", f"{MEMBERS}/a@x.test/tags", json=tags)
    assert tagged.status_code == 204
    assert len(await inproc.commits()) == 3
