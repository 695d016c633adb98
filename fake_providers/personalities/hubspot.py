"""HubSpot CRM v3: objects created (POST /crm/v3/objects/<type>), searched (POST
.../<type>/search, EQ filters of `filterGroups`), listed, read and changed by id; batch upsert
by an id property (POST .../<type>/batch/upsert, `idProperty`). A deal created by the legacy
POST /deals/v1/deal (n8n's HubSpot node) is a deal of the same collection: its search finds it.
So is a contact created or updated by email (POST /contacts/v1/contact/createOrUpdate/email/
<email>, the node's contact "Create or Update"), answered `{vid, isNew}`, read back by
GET /contacts/v1/contact/vid/<vid>/profile: the same email again is the same contact. A contact
created by v3 (POST /crm/v3/objects/contacts, or its batch/create) with an email already there
is HubSpot's 409 CONFLICT ("Contact already exists. Existing ID: <id>"), no second contact: the
email is unique, so "create, and on 409 go on" is a guard that holds.
HubSpot's search is eventually consistent (a new object reaches it "several seconds" later):
the fake's search sees an object INDEX_LAG_S after its creation, the list and the read by id
at once, so a search-then-create guard meets the gap a quick redelivery falls into."""

from __future__ import annotations

import datetime
import urllib.parse
import uuid
from typing import Any

from ..upstreams import Collection, ReferenceSource
from .base import Answer, MakeId, Personality, hooks, one_public, routes, stored_identity
from .documents import (
    STORED_IDENTITY,
    Document,
    Inbound,
    body_of,
    deep_merge,
    public,
    text,
    utc_stamp,
)

_CONTACT_V1 = "/contacts/v1/contact"
OBJECTS = Collection(
    "objects",
    writes=routes(
        "POST /crm/v3/objects/*",
        "POST /deals/v1/deal",
        f"POST {_CONTACT_V1}/createOrUpdate/email/*",
    ),
    reads=routes(
        "POST /crm/v3/objects/*/search",
        "GET /crm/v3/objects/*",
        f"GET {_CONTACT_V1}/vid/*/profile",
    ),
    per_path=True,
)
_SUFFIXES = ("/search", "/batch/upsert", "/batch/create")
# HubSpot's "several seconds": a redelivery seconds after the create meets the gap; a sender
# still retrying half a minute later finds the object, as it would.
INDEX_LAG_S = 10.0
# Legacy create routes (the HubSpot node's) -> the v3 collection their objects belong to.
_LEGACY = {"/deals/v1/deal": "/crm/v3/objects/deals"}


def key_of(collection: Collection, path: str) -> str:
    path = path.rstrip("/")
    if path.startswith(_CONTACT_V1 + "/"):
        return "/crm/v3/objects/contacts"
    for suffix in _SUFFIXES:
        path = path.removesuffix(suffix)
    return _LEGACY.get(path, path)


def _properties(given: Any) -> dict[str, Any]:
    """v3 `{name: value}`, or the legacy list `[{name, value}]` (contacts: `[{property,
    value}]`), as v3 stores them."""
    if isinstance(given, list):
        pairs = [p for p in given if isinstance(p, dict)]
        named = [(p.get("name", p.get("property")), p.get("value")) for p in pairs]
        return {text(name): value for name, value in named if name is not None}
    return dict(given) if isinstance(given, dict) else {}


def _v1_email(path: str) -> str | None:
    """The email of a legacy contact create-or-update (.../createOrUpdate/email/<email>)."""
    head, _, email = path.rstrip("/").rpartition("/createOrUpdate/email/")
    return urllib.parse.unquote(email).lower() if head == _CONTACT_V1 and email else None


def store(collection: Collection, inbound: Inbound, make_id: MakeId) -> list[Document]:
    body = body_of(inbound)
    now = utc_stamp()
    upsert = inbound.path.rstrip("/").endswith("/batch/upsert")
    by_email = _v1_email(inbound.path)
    inputs: list[Any] = body["inputs"] if isinstance(body.get("inputs"), list) else [body]
    found = []
    for item in inputs:
        item = item if isinstance(item, dict) else {}
        properties = _properties(item.get("properties"))
        identity = ""
        if upsert:
            name = text(item.get("idProperty") or "hs_object_id")
            identity = f"{name}={text(item.get('id'))}"
            properties.setdefault(name, item.get("id"))
        elif by_email is not None:
            identity = f"email={by_email}"
            properties["email"] = by_email
        elif _is_contacts(inbound.path) and text(properties.get("email")):
            identity = f"email={text(properties['email']).lower()}"
        number = str(make_id(identity).int % 90_000_000_000 + 10_000_000_000)
        found.append(
            {
                "id": number,
                "properties": {**properties, "hs_object_id": number},
                "createdAt": now,
                "updatedAt": now,
                "archived": False,
                STORED_IDENTITY: identity,
            }
        )
    return found


def select(collection: Collection, inbound: Inbound, records: list[Document]) -> list[Document]:
    if inbound.path.startswith(_CONTACT_V1 + "/vid/"):
        vid = inbound.path.split("/")[5]  # /contacts/v1/contact/vid/<vid>/profile
        return [r for r in records if r.get("id") == vid]
    body = body_of(inbound)
    groups = body.get("filterGroups") if inbound.method == "POST" else None
    if not isinstance(groups, list) or not groups:
        return records

    def passes(record: Document, group: object) -> bool:
        filters = group.get("filters") if isinstance(group, dict) else None
        for item in filters if isinstance(filters, list) else []:
            if not isinstance(item, dict):
                continue
            have = text((record.get("properties") or {}).get(item.get("propertyName")))
            op, want = item.get("operator", "EQ"), text(item.get("value"))
            if (op == "EQ" and have != want) or (op == "NEQ" and have == want):
                return False
            if op == "HAS_PROPERTY" and not have:
                return False
        return True

    return [r for r in records if any(passes(r, g) for g in groups)]  # groups are ORed


def listing(collection: Collection, inbound: Inbound, records: list[Document]) -> Answer:
    if inbound.path.startswith(_CONTACT_V1 + "/vid/"):
        if not records:
            return Answer(404, {"status": "error", "message": "contact does not exist"})
        return Answer(200, _v1_contact(records[0]))
    shown = public(records)
    if inbound.method == "POST":
        return Answer(200, {"total": len(shown), "results": shown})
    return Answer(200, {"results": shown})


def created(collection: Collection, inbound: Inbound, records: list[Document]) -> Answer:
    if "/batch/" in inbound.path:
        return Answer(200, {"status": "COMPLETE", "results": public(records)})
    if inbound.path.rstrip("/") in _LEGACY:
        return Answer(200, _legacy_deal(records[0]))
    if _v1_email(inbound.path) is not None:
        return Answer(200, {"vid": int(records[0]["id"]), "isNew": True})
    return Answer(201, public(records)[0])


def upserted(collection: Collection, inbound: Inbound, records: list[Document]) -> Answer | None:
    """A legacy create-or-update of an email already there: the same contact, not new."""
    if _v1_email(inbound.path) is None:
        return None
    return Answer(200, {"vid": int(records[0]["id"]), "isNew": False})


def conflict(collection: Collection, inbound: Inbound, records: list[Document]) -> Answer | None:
    """A v3 contact create with an email HubSpot has already: its 409, no second contact."""
    if not _is_contacts(inbound.path) or _v1_email(inbound.path) is not None:
        return None
    if inbound.path.rstrip("/").endswith("/batch/upsert") or not records:
        return None
    existing = records[0]["id"]
    return Answer(
        409,
        {
            "status": "error",
            "message": f"Contact already exists. Existing ID: {existing}",
            "correlationId": str(uuid.uuid4()),
            "category": "CONFLICT",
        },
    )


def _is_contacts(path: str) -> bool:
    return key_of(OBJECTS, path) == "/crm/v3/objects/contacts"


def _v1_contact(record: Document) -> Document:
    """A contact as GET /contacts/v1/contact/vid/<vid>/profile answers it."""
    vid = int(record["id"])
    properties = {
        name: {"value": text(value), "versions": []}
        for name, value in (record.get("properties") or {}).items()
    }
    email = text((record.get("properties") or {}).get("email"))
    identities = [{"type": "EMAIL", "value": email, "is-primary": True}] if email else []
    return {
        "vid": vid,
        "canonical-vid": vid,
        "merged-vids": [],
        "portal-id": 62515,
        "is-contact": True,
        "properties": properties,
        "identity-profiles": [{"vid": vid, "identities": identities}],
    }


def _legacy_deal(record: Document) -> Document:
    """A deal as POST /deals/v1/deal answers it: `dealId`, each property's `value`."""
    stamp = int(datetime.datetime.now(datetime.UTC).timestamp() * 1000)
    properties = {
        name: {"value": text(value), "timestamp": stamp, "source": "API", "sourceId": None}
        for name, value in (record.get("properties") or {}).items()
    }
    return {
        "portalId": 62515,
        "dealId": int(record["id"]),
        "isDeleted": False,
        "properties": properties,
        "associations": {"associatedVids": [], "associatedCompanyIds": [], "associatedDealIds": []},
        "imports": [],
        "stateChanges": [],
    }


def update(collection: Collection, inbound: Inbound, document: Document) -> Document:
    body = body_of(inbound)
    return deep_merge(document, {"properties": body.get("properties") or {}})


identity = stored_identity  # an upsert is keyed by what `store` kept
updated = one_public


PERSONALITY = Personality(
    name="hubspot",
    host="api.hubapi.com",
    effect="an object created (POST /crm/v3/objects/<type>, a deal by POST /deals/v1/deal, a"
    " contact by POST /contacts/v1/contact/createOrUpdate/email/<email>); a batch upsert to an id"
    " property value already there, or a contact's email again, is not a new effect (a v3"
    " contact create with an email already there is HubSpot's 409 CONFLICT)",
    read="POST /crm/v3/objects/<type>/search (filterGroups EQ; an object from 10 s after its"
    " creation, as HubSpot indexes it), GET list and by id at once;"
    " GET /contacts/v1/contact/vid/<vid>/profile",
    key="the property named like the business key (/properties/<key>); a contact's email, in"
    ' the path: {"path": "/email/([^/@%]+)(?:@|%40)"}',
    collections=(OBJECTS,),
    reference=lambda key: ReferenceSource("json", f"/properties/{key}"),
    searched=routes("POST /crm/v3/objects/*/search"),
    index_lag_s=INDEX_LAG_S,
    **hooks(globals()),
)
