"""SendGrid: marketing contacts upserted by email (PUT /v3/marketing/contacts, answered
202 with a job id), searched (POST .../contacts/search/emails, .../contacts/search with
`email = '...'` or `email LIKE '...'`); mail sent (POST /v3/mail/send, 202, no body).

SendGrid queues an upsert ("the contacts are queued for processing": 202 and a job id) and no
read finds the contact until the job has run, so a "find the contact, else add it and send the
welcome mail" guard meets a gap on a quick redelivery. SendGrid gives no figure for the job's
time; the fake's contacts become visible to every read INDEX_LAG_S after the upsert (the lag of
the other fakes' search indexes), and the job's status (GET .../contacts/imports/<job id>) is
`pending` until then, `completed` after."""

from __future__ import annotations

import re

from ..upstreams import KEY_IN_TEXT, Collection, ReferenceSource
from .base import Answer, MakeId, Personality, hooks, routes
from .documents import Document, Inbound, body_of, text

_IMPORTS = "/v3/marketing/contacts/imports"
CONTACTS = Collection(
    "contacts",
    writes=routes("PUT /v3/marketing/contacts"),
    reads=routes(
        "POST /v3/marketing/contacts/search*",
        "GET /v3/marketing/contacts",
        f"GET {_IMPORTS}/*",
    ),
    identity="email",
)
INDEX_LAG_S = 10.0
MAIL = Collection("mail", writes=routes("POST /v3/mail/send"))
# SGQL's `field = 'v'` and `field LIKE 'v%'` (n8n's get by email), a quote escaped as \'.
_SGQL = re.compile(r"(\w+)\s*(=|LIKE)\s*'((?:[^'\\]|\\.)*)'", re.IGNORECASE)
_CONTACTS_URL = "https://api.sendgrid.com/v3/marketing/contacts"


def store(collection: Collection, inbound: Inbound, make_id: MakeId) -> list[Document]:
    body = body_of(inbound)
    if collection is MAIL:
        return [{**body, "id": str(make_id(""))}]
    found = []
    for contact in body.get("contacts") or []:
        if isinstance(contact, dict):
            email = text(contact.get("email")).lower()
            found.append({**contact, "email": email, "id": str(make_id(email))})
    return found


def select(collection: Collection, inbound: Inbound, records: list[Document]) -> list[Document]:
    job = _job(inbound)
    if job is not None:  # the upsert's job: the contacts it made (the first one's id is its id)
        return [r for r in records if r.get("id") == job]
    body = body_of(inbound)
    if isinstance(body.get("emails"), list):
        wanted = {text(e).lower() for e in body["emails"]}
        return [r for r in records if r.get("email") in wanted]
    tests = [(n, _pattern(op, v)) for n, op, v in _SGQL.findall(text(body.get("query")))]
    return [r for r in records if all(p.fullmatch(text(r.get(n))) for n, p in tests)]


def _pattern(op: str, value: str) -> re.Pattern[str]:
    """An SGQL test as a regex: `%` is LIKE's wildcard (`%%` a literal %, n8n's escape)."""
    value = re.sub(r"\\(.)", r"\1", value)
    if op == "=":
        return re.compile(re.escape(value), re.IGNORECASE)
    parts = value.split("%%")
    wild = [".*".join(re.escape(piece) for piece in part.split("%")) for part in parts]
    return re.compile("%".join(wild), re.IGNORECASE)


def listing(collection: Collection, inbound: Inbound, records: list[Document]) -> Answer:
    job = _job(inbound)
    if job is not None:
        return Answer(200, _job_status(job, done=bool(records)))
    if inbound.path.endswith("/search/emails"):
        if not records:
            return Answer(404, {"errors": [{"message": "No contacts found"}]})
        return Answer(200, {"result": {r["email"]: {"contact": r} for r in records}})
    # `_metadata` as SendGrid answers it: n8n's Get Many pages on `_metadata.next`.
    search = inbound.path.endswith("/search")
    metadata = {"self": _CONTACTS_URL + ("/search" if search else "")}
    return Answer(200, {"result": records, "contact_count": len(records), "_metadata": metadata})


def _job(inbound: Inbound) -> str | None:
    head, _, job = inbound.path.rstrip("/").rpartition("/")
    return job if head == _IMPORTS and job else None


def _job_status(job: str, done: bool) -> Document:
    """GET .../contacts/imports/<id>: pending until the contacts can be read, then completed."""
    counts = {"requested_count": 1, "created_count": 1} if done else {}
    return {
        "id": job,
        "status": "completed" if done else "pending",
        "job_type": "upsert",
        "results": counts,
    }


def created(collection: Collection, inbound: Inbound, records: list[Document]) -> Answer:
    if collection is MAIL:
        return Answer(202, None)
    return Answer(202, {"job_id": records[0]["id"] if records else ""})


PERSONALITY = Personality(
    name="sendgrid",
    host="api.sendgrid.com",
    effect="a contact (PUT /v3/marketing/contacts upserts by email: the same email again is"
    " not a second effect); a mail sent (POST /v3/mail/send)",
    read="POST /v3/marketing/contacts/search/emails, /search (email = '...', email LIKE '...'),"
    f" each finding a contact {INDEX_LAG_S:.0f} s after its upsert (SendGrid queues upserts);"
    " GET /v3/marketing/contacts/imports/<job id>: pending, then completed",
    key="the case's key anywhere in the request (a contact's email, a mail's recipient,"
    ' subject or text); a field: {"json": "/contacts/0/email"}',
    collections=(CONTACTS, MAIL),
    # A contact and its welcome mail carry the key in different fields: find it in either.
    reference=lambda key: ReferenceSource("body_regex", KEY_IN_TEXT),
    searched=CONTACTS.reads,
    index_lag_s=INDEX_LAG_S,
    **hooks(globals()),
)
