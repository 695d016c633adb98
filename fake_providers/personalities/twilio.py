"""Twilio: an SMS sent (POST /2010-04-01/Accounts/<sid>/Messages.json, form To, From, Body;
answered 201 with a Message resource), read back by GET of the same path (To/From filters)."""

from __future__ import annotations

from ..upstreams import KEY_IN_TEXT, Collection, ReferenceSource
from .base import Answer, MakeId, Personality, hooks, routes
from .documents import Document, Inbound

MESSAGES = Collection(
    "messages",
    writes=routes("POST /2010-04-01/Accounts/*/Messages.json"),
    reads=routes("GET /2010-04-01/Accounts/*/Messages.json"),
)


def store(collection: Collection, inbound: Inbound, make_id: MakeId) -> list[Document]:
    form = dict(inbound.params) if isinstance(inbound.params, dict) else {}
    sid = "SM" + make_id("").hex
    account = inbound.path.split("/")[3]
    return [
        {
            "sid": sid,
            "id": sid,
            "account_sid": account,
            "to": form.get("To"),
            "from": form.get("From"),
            "body": form.get("Body"),
            "status": "queued",
            "direction": "outbound-api",
            "num_segments": "1",
            "price": None,
            "error_code": None,
            "uri": f"/2010-04-01/Accounts/{account}/Messages/{sid}.json",
        }
    ]


def select(collection: Collection, inbound: Inbound, records: list[Document]) -> list[Document]:
    query = dict(inbound.query)
    return [
        r
        for r in records
        if all(r.get(k.lower()) == query[k] for k in ("To", "From") if k in query)
    ]


def listing(collection: Collection, inbound: Inbound, records: list[Document]) -> Answer:
    return Answer(200, {"messages": records[::-1], "next_page_uri": None, "page": 0})


def created(collection: Collection, inbound: Inbound, records: list[Document]) -> Answer:
    return Answer(201, records[0])


PERSONALITY = Personality(
    name="twilio",
    host="api.twilio.com",
    effect="a message sent (POST /2010-04-01/Accounts/<sid>/Messages.json)",
    read="GET /2010-04-01/Accounts/<sid>/Messages.json?To=...",
    key="the case's key anywhere in the message Body (form); another pattern:"
    ' {"form": "Body", "regex": "#(\\\\S+)"}',
    collections=(MESSAGES,),
    reference=lambda key: ReferenceSource("form", "Body", KEY_IN_TEXT),
    **hooks(globals()),
)
