"""Pipedrive, as n8n's Pipedrive node (v2) calls it: deals, persons, organizations, activities
and products created by POST /api/v2/<type>, read by id (GET /api/v2/<type>/<id>), listed
(GET /api/v2/<type>, filtered by field), changed (PATCH) and deleted; found by the v1 search
(GET /v1/<type>/search?term=...&exact_match=...&fields=...). Every answer is wrapped as
`{success, data}`; a search's records come as `data.items[].item` with a `result_score`."""

from __future__ import annotations

import datetime

from ..upstreams import Collection
from .base import Answer, MakeId, Personality, field_equality, hooks, named_field, routes
from .documents import Document, Inbound, body_of, public, texts

RECORDS = Collection(
    "records",
    writes=routes("POST /api/v2/*", "POST /v1/*"),
    reads=routes("GET /v1/*/search", "GET /api/v2/*"),
    per_path=True,
)
_PREFIXES = ("/api/v2/", "/v1/")
# Pipedrive's time stamps: UTC to the second, as "2026-12-07T10:00:00Z" (v2).
_STAMP = "%Y-%m-%dT%H:%M:%SZ"


def key_of(collection: Collection, path: str) -> str:
    """`deals` for /api/v2/deals, /v1/deals and /v1/deals/search: one collection a type."""
    path = path.rstrip("/").removesuffix("/search")
    for prefix in _PREFIXES:
        if path.startswith(prefix):
            return path.removeprefix(prefix)
    return path


def _searching(inbound: Inbound) -> bool:
    return inbound.method == "GET" and inbound.path.rstrip("/").endswith("/search")


def store(collection: Collection, inbound: Inbound, make_id: MakeId) -> list[Document]:
    now = datetime.datetime.now(datetime.UTC).strftime(_STAMP)
    number = make_id("").int % 9_000_000 + 1_000_000
    record: Document = {**body_of(inbound), "id": number, "add_time": now, "update_time": now}
    if key_of(collection, inbound.path) == "deals":
        record.setdefault("status", "open")
    return [record]


def select(collection: Collection, inbound: Inbound, records: list[Document]) -> list[Document]:
    if not _searching(inbound):
        return field_equality(collection, inbound, records)
    query = dict(inbound.query)
    term = query.get("term", "").casefold()
    exact = query.get("exact_match", "").lower() == "true"
    fields = [f for f in query.get("fields", "").split(",") if f]

    def found(record: Document) -> bool:
        values = texts([record.get(f) or record.get(f + "s") for f in fields] or record)
        return any(v == term if exact else term in v for v in values)

    return [r for r in records if term and found(r)]


def listing(collection: Collection, inbound: Inbound, records: list[Document]) -> Answer:
    shown = public(records)
    if not _searching(inbound):
        return Answer(
            200, {"success": True, "data": shown, "additional_data": {"next_cursor": None}}
        )
    kind = key_of(collection, inbound.path).removesuffix("s")
    items = [{"result_score": 1.0, "item": {"type": kind, **record}} for record in shown]
    pagination = {"start": 0, "limit": len(items), "more_items_in_collection": False}
    return Answer(
        200,
        {"success": True, "data": {"items": items}, "additional_data": {"pagination": pagination}},
    )


def wrapped(collection: Collection, inbound: Inbound, records: list[Document]) -> Answer:
    return Answer(200, {"success": True, "data": public(records)[0] if records else None})


created = updated = fetched = wrapped
reference = named_field


PERSONALITY = Personality(
    name="pipedrive",
    host="api.pipedrive.com",
    effect="a deal, person, organization, activity or product created (POST /api/v2/<type>);"
    " a PATCH is not a new effect",
    read="GET /v1/<type>/search?term=... (exact_match, fields), GET /api/v2/<type> (field"
    " filters) and by id",
    key='a field named like the business key; in a title: {"json": "/title", "regex":'
    ' "^Order (.+)$"}',
    collections=(RECORDS,),
    **hooks(globals()),
)
