"""Airtable: records in a table (POST /v0/<base>/<table>, one `fields` or `records`), read
back by GET /v0/<base>/<table> with `filterByFormula` equalities ({Field} = 'v', AND(...)),
one by GET /v0/<base>/<table>/<id>; PATCH upserts with `performUpsert.fieldsToMergeOn`."""

from __future__ import annotations

import re
from typing import Any

from ..upstreams import Collection
from .base import (
    Answer,
    MakeId,
    Personality,
    hooks,
    named_field,
    one_public,
    routes,
    stored_identity,
)
from .documents import STORED_IDENTITY, Document, Inbound, body_of, public, text, utc_stamp

TABLES = Collection(
    "tables",
    writes=routes("POST /v0/*/*", "PATCH /v0/*/*", "PUT /v0/*/*"),
    reads=routes("GET /v0/*/*"),
    per_path=True,
)
_EQUALS = re.compile(r"\{([^}]+)\}\s*=\s*(?:'([^']*)'|\"([^\"]*)\"|(-?[\d.]+))")


def _record_id(make_id: MakeId, identity: str) -> str:
    return "rec" + make_id(identity).hex[:14]


def store(collection: Collection, inbound: Inbound, make_id: MakeId) -> list[Document]:
    body = body_of(inbound)
    merge_on = (body.get("performUpsert") or {}).get("fieldsToMergeOn") or []
    records: list[Any] = body["records"] if isinstance(body.get("records"), list) else [body]
    now = utc_stamp()
    found = []
    for record in records:
        fields = record.get("fields") if isinstance(record, dict) else None
        fields = fields if isinstance(fields, dict) else {}
        identity = "|".join(text(fields.get(name)) for name in merge_on)
        given = record.get("id") if isinstance(record, dict) else None
        record_id = str(given) if given else _record_id(make_id, identity)
        found.append(
            {"id": record_id, "createdTime": now, "fields": fields, STORED_IDENTITY: identity}
        )
    return found


def select(collection: Collection, inbound: Inbound, records: list[Document]) -> list[Document]:
    formula = dict(inbound.query).get("filterByFormula", "")
    tests = [(m[0], m[1] or m[2] or m[3]) for m in _EQUALS.findall(formula)]
    return [r for r in records if all(text(r["fields"].get(n)) == v for n, v in tests)]


def listing(collection: Collection, inbound: Inbound, records: list[Document]) -> Answer:
    return Answer(200, {"records": public(records)})


def created(collection: Collection, inbound: Inbound, records: list[Document]) -> Answer:
    body = body_of(inbound)
    if "records" in body:
        return Answer(200, {"records": public(records)})
    return Answer(200, public(records)[0])


def update(collection: Collection, inbound: Inbound, document: Document) -> Document:
    body = body_of(inbound)
    fields: dict[str, Any] = body["fields"] if isinstance(body.get("fields"), dict) else {}
    base: dict[str, Any] = {} if inbound.method == "PUT" else document["fields"]
    return {**document, "fields": {**base, **fields}}


reference = named_field  # in `fields` or the first of `records`
identity = stored_identity  # an upsert is keyed by what `store` kept
updated = one_public


PERSONALITY = Personality(
    name="airtable",
    host="api.airtable.com",
    effect="a record created (POST /v0/<base>/<table>); an upsert (PATCH with performUpsert)"
    " to fields already there is not a new effect",
    read="GET /v0/<base>/<table>?filterByFormula={F}='v' (equalities, AND); one record by id",
    key="the field named like the business key",
    collections=(TABLES,),
    **hooks(globals()),
)
