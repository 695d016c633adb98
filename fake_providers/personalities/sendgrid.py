"""SendGrid: marketing contacts upserted by email (PUT /v3/marketing/contacts, answered
202 with a job id), searched (POST .../contacts/search/emails, .../contacts/search with
`email = '...'`); mail sent (POST /v3/mail/send, 202, no body)."""

from __future__ import annotations

import re

from fake_providers.personalities.base import (
    Answer,
    Document,
    Inbound,
    MakeId,
    Personality,
    body_of,
    routes,
    text,
)
from fake_providers.upstreams import Collection, ReferenceSource

CONTACTS = Collection(
    "contacts",
    writes=routes("PUT /v3/marketing/contacts"),
    reads=routes("POST /v3/marketing/contacts/search*", "GET /v3/marketing/contacts"),
    identity="email",
)
MAIL = Collection("mail", writes=routes("POST /v3/mail/send"))
_SGQL = re.compile(r"(\w+)\s*=\s*'([^']*)'")


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
    body = body_of(inbound)
    if isinstance(body.get("emails"), list):
        wanted = {text(e).lower() for e in body["emails"]}
        return [r for r in records if r.get("email") in wanted]
    tests = _SGQL.findall(text(body.get("query")))
    return [r for r in records if all(text(r.get(n)).lower() == v.lower() for n, v in tests)]


def listing(collection: Collection, inbound: Inbound, records: list[Document]) -> Answer:
    if inbound.path.endswith("/search/emails"):
        if not records:
            return Answer(404, {"errors": [{"message": "No contacts found"}]})
        return Answer(200, {"result": {r["email"]: {"contact": r} for r in records}})
    return Answer(200, {"result": records, "contact_count": len(records)})


def created(collection: Collection, inbound: Inbound, records: list[Document]) -> Answer:
    if collection is MAIL:
        return Answer(202, None)
    return Answer(202, {"job_id": records[0]["id"] if records else ""})


def reference(key: str) -> ReferenceSource:
    return ReferenceSource("json", "/contacts/0/email")


PERSONALITY = Personality(
    name="sendgrid",
    host="api.sendgrid.com",
    effect="a contact (PUT /v3/marketing/contacts upserts by email: the same email again is"
    " not a second effect); a mail sent (POST /v3/mail/send)",
    read="POST /v3/marketing/contacts/search/emails, /search (email = '...')",
    key="the first contact's email (/contacts/0/email)",
    collections=(CONTACTS, MAIL),
    reference=reference,
    store=store,
    select=select,
    listing=listing,
    created=created,
)
