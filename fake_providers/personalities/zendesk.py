"""Zendesk Support API v2, as n8n's Zendesk node calls it: tickets created (POST
/api/v2/tickets.json, `{"ticket": {...}}`, the description as the first comment), read, changed
and deleted by id (GET/PUT/DELETE /api/v2/tickets/<id>.json), listed (GET
/api/v2/tickets.json, `external_id`), and found by the search API (GET
/api/v2/search.json?query=type:ticket ...), whose query language this module reads:
`type:<t>`, `field:value` (also quoted, `*` a wildcard, `-` negates), `<`/`>` on dates and on
status, and bare words that must be in the ticket's text. Zendesk's search sees a new ticket
only once it is indexed ("up to a few minutes", its API reference): the fake's search sees a
ticket INDEX_LAG_S after its creation, so a search-then-create guard meets the gap a
redelivery falls into in production (the list by external_id and the read by id are not
searches: they see it at once)."""

from __future__ import annotations

import datetime
import fnmatch
import re
from typing import Any

from ..upstreams import Collection, ReferenceSource
from .base import Answer, MakeId, Personality, hooks, routes
from .documents import (
    Document,
    Inbound,
    body_of,
    deep_merge,
    field,
    matching,
    public,
    text,
    texts,
)

_ONE = "/api/v2/tickets/*.json"
TICKETS = Collection(
    "tickets",
    # The second write route is never a create the node sends: it makes /tickets/<id>.json a
    # write path, so the record fake takes a PUT or DELETE there to the ticket `select` picks.
    writes=routes("POST /api/v2/tickets.json", "POST /api/v2/tickets/[0-9]*.json"),
    reads=routes(f"GET {_ONE}", "GET /api/v2/tickets.json", "GET /api/v2/search.json"),
)
_SEARCH = "/api/v2/search.json"
# A search term: an optional `-`, an optional `field` and operator, a value ("a phrase" too).
_TERM = re.compile(r'(-?)(?:(\w+)(:|>=|<=|>|<))?("[^"]*"|\S+)')
# Search keywords that name a ticket field of another name.
_FIELDS = {
    "ticket_type": "type",
    "group": "group_id",
    "assignee": "assignee_id",
    "requester": "requester_id",
    "submitter": "submitter_id",
    "organization": "organization_id",
    "brand": "brand_id",
    "created": "created_at",
    "updated": "updated_at",
    "due_date": "due_at",
    "via": "via.channel",
    "comment": "description",
}
_WORDS = frozenset({"subject", "description"})  # every word of the value is in the field
_DATES = frozenset({"created_at", "updated_at", "due_at"})
_STATUSES = ("new", "open", "pending", "hold", "solved", "closed")  # status<solved: ordered
_STAMP = "%Y-%m-%dT%H:%M:%SZ"
INDEX_LAG_S = 120.0  # the worst of Zendesk's "up to a few minutes" kept short


def _ticket_id(inbound: Inbound) -> str:
    """The id of /api/v2/tickets/<id>.json ("" for another path)."""
    name = inbound.path.rstrip("/").rsplit("/", 1)[-1].removesuffix(".json")
    return name if name.isdigit() and inbound.path.startswith("/api/v2/tickets/") else ""


def _given(inbound: Inbound) -> dict[str, Any]:
    body = body_of(inbound)
    ticket = body.get("ticket")
    return ticket if isinstance(ticket, dict) else {}


def _tags(given: Any) -> list[str]:
    """Zendesk's tags: lower-case, a space separates two tags."""
    values = given if isinstance(given, list) else [given] if isinstance(given, str) else []
    return [tag.lower() for value in values for tag in text(value).split()]


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime(_STAMP)


def store(collection: Collection, inbound: Inbound, make_id: MakeId) -> list[Document]:
    given = _given(inbound)
    number = make_id("").int % 9_000_000_000 + 1_000_000_000
    comment = given.get("comment")
    comment = comment if isinstance(comment, dict) else {}
    description = comment.get("body") or comment.get("html_body") or given.get("description")
    host = inbound.headers.get("host", "example.zendesk.com")
    now = _now()
    kept = {k: v for k, v in given.items() if k not in ("comment", "description")}
    return [
        {
            "url": f"https://{host}/api/v2/tickets/{number}.json",
            "external_id": None,
            "via": {"channel": "api", "source": {"from": {}, "to": {}, "rel": None}},
            "type": None,
            "subject": None,
            "priority": None,
            "recipient": None,
            "requester_id": 1,  # the API user's: the node names no requester
            "submitter_id": 1,
            "assignee_id": None,
            "organization_id": None,
            "group_id": None,
            "collaborator_ids": [],
            "follower_ids": [],
            "is_public": True,
            "due_at": None,
            "custom_fields": [],
            **kept,
            "id": number,
            "raw_subject": kept.get("subject"),
            "description": text(description),
            "status": kept.get("status") or ("open" if kept.get("assignee_id") else "new"),
            "tags": _tags(kept.get("tags")),
            "created_at": now,
            "updated_at": now,
        }
    ]


def update(collection: Collection, inbound: Inbound, document: Document) -> Document:
    """A PUT: fields replaced (`tags` too; `additional_tags`/`remove_tags` add and remove); a
    comment is a reply on the ticket's conversation, not a field."""
    given = {k: v for k, v in _given(inbound).items() if k != "comment"}
    tags = _tags(given.pop("tags")) if "tags" in given else list(document.get("tags") or [])
    tags += [t for t in _tags(given.pop("additional_tags", [])) if t not in tags]
    removed = set(_tags(given.pop("remove_tags", [])))
    changes = {**given, "tags": [t for t in tags if t not in removed], "updated_at": _now()}
    if "subject" in given:
        changes["raw_subject"] = given["subject"]
    return deep_merge(document, {**changes, "id": document["id"]})


def select(collection: Collection, inbound: Inbound, records: list[Document]) -> list[Document]:
    wanted = _ticket_id(inbound)
    if wanted:
        return [r for r in records if str(r.get("id")) == wanted]
    if inbound.path.rstrip("/") != _SEARCH:
        return matching(records, inbound.query)  # GET /tickets.json?external_id=...
    query = dict(inbound.query)
    terms = _TERM.findall(query.get("query", ""))
    found = [r for r in records if all(_passes(r, *term) for term in terms)]
    order = _FIELDS.get(query.get("sort_by", ""), query.get("sort_by", ""))
    if order:
        found.sort(key=lambda r: text(field(r, order)), reverse=query.get("sort_order") != "asc")
    return found


def _passes(ticket: Document, negated: str, name: str, op: str, value: str) -> bool:
    want = value.strip('"').casefold()
    if not name:  # a bare word or "phrase": somewhere in the ticket's text
        hit = want in "\n".join(texts(public([ticket])[0]))
    elif name == "type":
        hit = want == "ticket"  # the only records this collection holds
    else:
        hit = _compares(ticket, _FIELDS.get(name, name), op, want)
    return hit != bool(negated)


def _compares(ticket: Document, name: str, op: str, want: str) -> bool:
    if name in ("tags", "tag"):
        return any(fnmatch.fnmatchcase(tag, want) for tag in ticket.get("tags") or [])
    if name.startswith("custom_field_"):
        custom = [f for f in ticket.get("custom_fields") or [] if isinstance(f, dict)]
        have = next((f.get("value") for f in custom if str(f.get("id")) == name[13:]), None)
    else:
        have = field(ticket, name)
    got = text(have).casefold()
    if name in _WORDS:
        return all(word in got for word in want.split())
    if op != ":":
        return _ordered(name, got, op, want)
    if want == "none":  # assignee:none, group:none: the field is empty
        return not got
    if name in _DATES:
        return got.startswith(want)  # created:2026-01-31 is that day
    return fnmatch.fnmatchcase(got, want)


def _ordered(name: str, got: str, op: str, want: str) -> bool:
    """`<`, `>`, `<=`, `>=`: statuses by their order, numbers as numbers, dates as their text
    (ISO dates compare as text; `created<2026-02` looks at the month)."""

    def rank(value: str) -> tuple[int, str]:
        if name == "status" and value in _STATUSES:
            return _STATUSES.index(value), ""
        return (int(value), "") if value.isdigit() else (0, value)

    left, right = rank(got[: len(want)] if name in _DATES else got), rank(want)
    return {"<": left < right, ">": left > right, "<=": left <= right, ">=": left >= right}[op]


def listing(collection: Collection, inbound: Inbound, records: list[Document]) -> Answer:
    shown = public(records)
    if inbound.path.startswith("/api/v2/tickets/"):  # one ticket (or none: 404)
        if not shown:
            return Answer(404, {"error": "RecordNotFound", "description": "Not found"})
        return Answer(200, {"ticket": shown[0]})
    per_page = dict(inbound.query).get("per_page", "")
    # One page: the node's Return All follows `next_page` until null; its limit is per_page.
    page = shown[: int(per_page)] if per_page.isdigit() else shown
    paging = {"count": len(shown), "next_page": None, "previous_page": None}
    if inbound.path.rstrip("/") == _SEARCH:
        results = [{**ticket, "result_type": "ticket"} for ticket in page]
        return Answer(200, {"results": results, **paging, "facets": None})
    return Answer(200, {"tickets": page, **paging})


def created(collection: Collection, inbound: Inbound, records: list[Document]) -> Answer:
    return Answer(201, {"ticket": public(records)[0]})


def updated(collection: Collection, inbound: Inbound, records: list[Document]) -> Answer:
    if not records:
        return Answer(404, {"error": "RecordNotFound", "description": "Not found"})
    if inbound.method == "DELETE":
        return Answer(204, None)
    return Answer(200, {"ticket": public(records)[0]})


PERSONALITY = Personality(
    name="zendesk",
    host="<subdomain>.zendesk.com",
    effect="a ticket created (POST /api/v2/tickets.json; again with its Idempotency-Key:"
    " the first ticket back); a PUT or DELETE on"
    " /api/v2/tickets/<id>.json is not a new effect",
    read="GET /api/v2/search.json?query=type:ticket ... (field:value, quoted values, tags:,"
    " -negation, </> on dates and status, free words; a ticket from 2 minutes after its"
    " creation, as Zendesk indexes it), GET /api/v2/tickets.json (external_id) and by id"
    " at once",
    key="the ticket's external_id (/ticket/external_id)",
    collections=(TICKETS,),
    reference=lambda key: ReferenceSource("json", "/ticket/external_id"),
    searched=routes(f"GET {_SEARCH}"),
    index_lag_s=INDEX_LAG_S,
    # "Idempotency" in the Support API's introduction: a ticket create with the same key
    # returns the first answer (x-idempotency-lookup: hit) instead of a second ticket.
    idempotency_header="Idempotency-Key",
    **hooks(globals()),
)
