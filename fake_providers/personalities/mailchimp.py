"""Mailchimp Marketing 3.0, as n8n's Mailchimp node calls it: one member per (list, email).
A member is added by POST /3.0/lists/<list>/members (the same email again: 400 "Member
Exists", nothing added), upserted by PUT .../members/<subscriber_hash>, read by GET
.../members/<subscriber_hash> and listed (GET .../members, `offset`/`count` paging). The
subscriber hash is the md5 of the lower-cased email; the node sends the email itself in its
place, which Mailchimp accepts too."""

from __future__ import annotations

import hashlib
import re
import urllib.parse

from ..upstreams import Collection, ReferenceSource
from .base import Answer, MakeId, Personality, hooks, routes, stored_identity
from .documents import STORED_IDENTITY, Document, Inbound, body_of, matching, utc_stamp

_MEMBERS = "/3.0/lists/*/members"
MEMBERS = Collection(
    "members",
    writes=routes(f"POST {_MEMBERS}", f"PUT {_MEMBERS}/*"),
    reads=routes(f"GET {_MEMBERS}", f"GET {_MEMBERS}/*"),
    per_path=True,  # one collection a list: an email is unique within its list only
)
_ERRORS = "https://mailchimp.com/developer/marketing/docs/errors/"
_HASH = re.compile(r"[0-9a-f]{32}")
# Fields of a member the node's body carries but Mailchimp does not keep (`listId` is the
# node's own; `status_if_new` only picks a new member's status).
_NOT_KEPT = ("listId", "status_if_new")
_IF_NEW = "_if_new"  # a PUT's status_if_new, kept apart: it must not overwrite a status


def _parts(path: str) -> list[str]:
    return path.rstrip("/").split("/")  # ['', '3.0', 'lists', <list>, 'members', <hash>...]


def key_of(collection: Collection, path: str) -> str:
    return "/".join(_parts(path)[:5])


def subscriber_hash(given: str) -> str:
    """A subscriber hash as given, or the one of an email (md5 of its lower-cased text)."""
    given = urllib.parse.unquote(given).strip()
    if _HASH.fullmatch(given.lower()):
        return given.lower()
    return hashlib.md5(given.lower().encode()).hexdigest()


def _subscriber(inbound: Inbound) -> str:
    """The member a path names (.../members/<hash or email>), "" for the list itself."""
    parts = _parts(inbound.path)
    return parts[5] if len(parts) > 5 else ""


def _kept(body: Document) -> Document:
    found = {k: v for k, v in body.items() if k not in _NOT_KEPT}
    if isinstance(found.get("tags"), list):  # sent as names, answered as {id, name}
        found["tags"] = [
            t if isinstance(t, dict) else {"id": _tag_id(str(t)), "name": str(t)}
            for t in found["tags"]
        ]
    return found


def _tag_id(name: str) -> int:
    return int(hashlib.md5(name.encode()).hexdigest()[:6], 16)


def store(collection: Collection, inbound: Inbound, make_id: MakeId) -> list[Document]:
    body = body_of(inbound)
    given = _subscriber(inbound)
    path_email = "" if not given or _HASH.fullmatch(given.lower()) else urllib.parse.unquote(given)
    email = str(body.get("email_address") or path_email).strip()
    if not email and not given:
        return []  # nothing added: `created` answers Mailchimp's 400
    hashed = subscriber_hash(given or email)
    now = utc_stamp()
    # The stored `id` is the member's id in its list (the commit's effect id, unique across
    # lists); the id Mailchimp answers is the subscriber hash, kept as the identity.
    unique = make_id(hashed).hex
    member: Document = {
        **_kept(body),
        "id": unique,
        "email_address": email,
        "unique_email_id": unique[:10],
        "list_id": _parts(inbound.path)[3],
        "last_changed": now,
        STORED_IDENTITY: hashed,
    }
    if inbound.method == "POST":
        member.setdefault("status", "subscribed")
        member.update(timestamp_signup=now, timestamp_opt=now)
    elif body.get("status_if_new"):
        member[_IF_NEW] = body["status_if_new"]
    if not email:
        del member["email_address"]  # a PUT by hash without one: keep the stored email
    return [member]


def _member(record: Document) -> Document:
    """A stored member as Mailchimp answers it: its fields laid over a new member's defaults.
    A PUT stores only what it was sent (an upsert merges it into the member there), so the
    defaults are filled in here, when the member is answered. (So the answer to a PUT on a
    member already there shows what the PUT sent over those defaults, not the merged member:
    a GET reads that.)"""
    shown = {k: v for k, v in record.items() if not k.startswith("_")}
    given = shown.get("tags")
    tags = given if isinstance(given, list) else []
    return {
        "email_type": "html",
        "merge_fields": {},
        "interests": {},
        "language": "",
        "vip": False,
        "source": "API - Generic",
        **shown,
        "id": record.get(STORED_IDENTITY),
        "status": record.get("status") or record.get(_IF_NEW) or "subscribed",
        "tags": tags,
        "tags_count": len(tags),
        "_links": [],
    }


def _error(status: int, title: str, detail: str, inbound: Inbound) -> Answer:
    body = {"type": _ERRORS, "title": title, "status": status, "detail": detail}
    return Answer(status, {**body, "instance": hashlib.md5(inbound.path.encode()).hexdigest()})


def conflict(collection: Collection, inbound: Inbound, records: list[Document]) -> Answer | None:
    """A second POST of an email on the list: Mailchimp refuses it, only PUT upserts."""
    if inbound.method != "POST" or not records:
        return None
    email = records[0].get("email_address")
    detail = f"{email} is already a list member. Use PUT to insert or update list members."
    return _error(400, "Member Exists", detail, inbound)


def created(collection: Collection, inbound: Inbound, records: list[Document]) -> Answer:
    if not records:
        detail = "The resource submitted could not be validated."
        return _error(400, "Invalid Resource", detail, inbound)
    return Answer(200, _member(records[0]))


def select(collection: Collection, inbound: Inbound, records: list[Document]) -> list[Document]:
    wanted = _subscriber(inbound)
    if wanted:
        return [r for r in records if r.get(STORED_IDENTITY) == subscriber_hash(wanted)]
    return matching(records, inbound.query)  # `status`, `email_type`: paging names no field


def listing(collection: Collection, inbound: Inbound, records: list[Document]) -> Answer:
    if _subscriber(inbound):
        if not records:
            detail = "The requested resource could not be found."
            return _error(404, "Resource Not Found", detail, inbound)
        return Answer(200, _member(records[0]))
    # The node's Get Many (Return All) pages by `offset` until a page holds no member.
    query = dict(inbound.query)
    offset = _number(query.get("offset"), 0)
    count = min(_number(query.get("count"), 10), 1000)
    page = [_member(r) for r in records[offset : offset + count]]
    list_id = _parts(inbound.path)[3]
    return Answer(
        200, {"members": page, "list_id": list_id, "total_items": len(records), "_links": []}
    )


def _number(given: str | None, default: int) -> int:
    return int(given) if given and given.isdigit() else default


def other(inbound: Inbound) -> Answer | None:
    """The node's member tags (POST .../members/<email>/tags) and permanent delete (POST
    .../actions/delete-permanent): 204, and the member is kept (a permanently deleted email
    cannot be added again by the API either)."""
    tail = inbound.path.rstrip("/")
    if inbound.method == "POST" and tail.endswith(("/tags", "/actions/delete-permanent")):
        return Answer(204, None)
    return None


identity = stored_identity


PERSONALITY = Personality(
    name="mailchimp",
    host="<dc>.api.mailchimp.com",
    effect="a list member added (POST /3.0/lists/<list>/members; the same email again is"
    " Mailchimp's 400 Member Exists, no effect) or upserted (PUT .../members/<hash or email>:"
    " an email already on the list is not a new effect)",
    read="GET /3.0/lists/<list>/members/<hash or email> (404 when absent), GET"
    " .../members (status, email_type; offset/count)",
    key="the member's email (/email_address)",
    collections=(MEMBERS,),
    reference=lambda key: ReferenceSource("json", "/email_address"),
    **hooks(globals()),
)
