"""Slack: a message posted (POST /api/chat.postMessage, JSON or form), read back by
GET /api/conversations.history?channel=<id>."""

from __future__ import annotations

import time

from ..upstreams import KEY_IN_TEXT, Collection, ReferenceSource
from .base import Answer, MakeId, Personality, hooks, routes
from .documents import Document, Inbound, body_of, text

MESSAGES = Collection(
    "messages",
    writes=routes("POST /api/chat.postMessage"),
    reads=routes("* /api/conversations.history"),
)


def store(collection: Collection, inbound: Inbound, make_id: MakeId) -> list[Document]:
    body = body_of(inbound)
    stamp = f"{time.time():.6f}"
    return [{**body, "id": stamp, "ts": stamp, "type": "message", "user": "U0N8NCHAOS"}]


def select(collection: Collection, inbound: Inbound, records: list[Document]) -> list[Document]:
    channel = dict(inbound.query).get("channel") or text(
        (inbound.params or {}).get("channel") if isinstance(inbound.params, dict) else ""
    )
    return [r for r in records if not channel or text(r.get("channel")) == channel]


def listing(collection: Collection, inbound: Inbound, records: list[Document]) -> Answer:
    return Answer(200, {"ok": True, "messages": records[::-1], "has_more": False})


def created(collection: Collection, inbound: Inbound, records: list[Document]) -> Answer:
    message = records[0]
    return Answer(
        200,
        {"ok": True, "channel": message.get("channel"), "ts": message["ts"], "message": message},
    )


def other(inbound: Inbound) -> Answer | None:
    if inbound.path == "/api/auth.test":
        return Answer(200, {"ok": True, "user_id": "U0N8NCHAOS", "team_id": "T0N8NCHAOS"})
    return None


PERSONALITY = Personality(
    name="slack",
    host="slack.com",
    effect="a message posted (POST /api/chat.postMessage)",
    read="GET /api/conversations.history?channel=<id>",
    key="the case's key anywhere in the message text (/text; n8n's Slack node appends a footer);"
    ' another pattern: {"json": "/text", "regex": "Order (\\\\S+)"}',
    collections=(MESSAGES,),
    reference=lambda key: ReferenceSource("json", "/text", KEY_IN_TEXT),
    **hooks(globals()),
)
