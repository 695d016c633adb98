"""What a built-in personality is: a service's collections, where its business key travels,
how it filters a read and what it answers, so a manifest maps a host to a name and writes
no templates. Stdlib only: the harness reads the names and defaults, the record fake the hooks.

The hooks get the request as the record fake parsed it (`documents.Inbound`) and work on
plain JSON documents; the record fake stores, merges and counts.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from ..upstreams import Collection, ReferenceSource, Route
from .documents import (
    STORED_IDENTITY,
    Document,
    Inbound,
    body_of,
    deep_merge,
    field,
    matching,
    public,
    text,
)


@dataclass(frozen=True)
class Answer:
    status: int
    body: Any


# A new record's id, from its identity ("" for none: a fresh id); an upsert's is stable.
MakeId = Callable[[str], uuid.UUID]
# A write's records: (collection, request, make_id) -> the documents to store.
Store = Callable[[Collection, Inbound, MakeId], list[Document]]
# A record's identity ("" = none): a write whose identity is stored already is an upsert.
Identity = Callable[[Collection, Document], str]
# A read's records: (collection, request, records) -> the records the service would return.
Select = Callable[[Collection, Inbound, list[Document]], list[Document]]
# The answer to a read (the selected records), a write (the stored ones), an update.
Listing = Callable[[Collection, Inbound, list[Document]], Answer]
# A record as a PATCH/PUT on it (or on a filter that selects it) leaves it.
Update = Callable[[Collection, Inbound, Document], Document]
# A unique write's answer when a record with its identity is stored already (None: merge);
# also an upsert's answer then, where it differs from a create's (HubSpot's `isNew`).
Conflict = Callable[[Collection, Inbound, list[Document]], "Answer | None"]
# Whether a write is a new effect, from the records stored already (default: every write).
NewEffect = Callable[[Collection, Inbound, list[Document]], bool]
# Routes outside the collections (metadata, auth checks): an answer, or None.
Other = Callable[[Inbound], "Answer | None"]
# The collection a request path belongs to (its storage name).
CollectionKey = Callable[[Collection, str], str]
# Where the key travels by default, from the manifest's business key name ("order_id").
DefaultReference = Callable[[str], ReferenceSource]


def named_field(key: str) -> ReferenceSource:
    """The body's field named like the key, at any depth (the first one sent)."""
    return ReferenceSource("body_regex", rf'"{key}"\s*:\s*"?([^",}}\]]+)')


def body_document(collection: Collection, inbound: Inbound, make_id: MakeId) -> list[Document]:
    """The body with an id (a stable one when the collection names an identity)."""
    body = body_of(inbound)
    identity = text(field(body, collection.identity)) if collection.identity else ""
    return [{**body, "id": str(make_id(identity))}]


def identity_field(collection: Collection, document: Document) -> str:
    return text(field(document, collection.identity)) if collection.identity else ""


def merge_body(collection: Collection, inbound: Inbound, document: Document) -> Document:
    body = body_of(inbound)
    return deep_merge(document, {**body, "id": document.get("id")})


def stored_identity(collection: Collection, document: Document) -> str:
    """The identity a service's `store` kept under STORED_IDENTITY (an upsert's key)."""
    return text(document.get(STORED_IDENTITY))


def one_public(collection: Collection, inbound: Inbound, records: list[Document]) -> Answer:
    """The record changed, without its stored identity ({} when none was)."""
    return Answer(200, public(records)[0] if records else {})


def path_key(collection: Collection, path: str) -> str:
    """A collection's storage name: its name, or (per_path) the path without a search suffix."""
    if not collection.per_path:
        return collection.name
    return path.rstrip("/").removesuffix("/search")


def every_write(collection: Collection, inbound: Inbound, records: list[Document]) -> bool:
    return True


def no_other(inbound: Inbound) -> Answer | None:
    return None


def no_conflict(collection: Collection, inbound: Inbound, records: list[Document]) -> None:
    return None


def one_or_list(collection: Collection, inbound: Inbound, records: list[Document]) -> Answer:
    return Answer(200, records[0] if len(records) == 1 else records)


def field_equality(
    collection: Collection, inbound: Inbound, records: list[Document]
) -> list[Document]:
    """Query parameters that name a record field filter by equality, free-text ones
    (`term`, `q`, ...) by the text they search; paging ones do not filter."""
    return matching(records, inbound.query)


def results_listing(collection: Collection, inbound: Inbound, records: list[Document]) -> Answer:
    return Answer(200, {"results": records, "has_more": False})


def json_field(name: str) -> ReferenceSource:
    return ReferenceSource("json", "/" + name.replace(".", "/"))


@dataclass(frozen=True)
class Personality:
    """One service. `effect`, `read` and `key` say, for the docs/workflows.md table and the user,
    what one effect is, what a read is, and where the business key travels by default."""

    name: str
    host: str
    effect: str
    read: str
    key: str
    collections: tuple[Collection, ...]
    reference: DefaultReference = json_field
    new_effect: NewEffect = every_write
    store: Store = body_document
    identity: Identity = identity_field
    select: Select = field_equality
    listing: Listing = results_listing
    created: Listing = one_or_list
    update: Update = merge_body
    updated: Listing = one_or_list
    fetched: Listing = one_public  # GET <write path>/<id>: the one record
    other: Other = no_other
    conflict: Conflict = no_conflict
    upserted: Conflict = no_conflict
    key_of: CollectionKey = path_key
    # Reads answered from a search index, which sees a new record `index_lag_s` after it was
    # stored (a search-then-create guard meets that gap); other reads see it at once.
    searched: tuple[Route, ...] = ()
    index_lag_s: float = 0.0
    # The header by which the service replays a create it has seen (Zendesk's
    # Idempotency-Key on tickets); None: the service keeps no such keys, so a declared one
    # is ignored there as the service ignores it.
    idempotency_header: str | None = None


# The fields a module may fill by defining a function of that name (`store`, `select`, ...):
# those whose default is a function; the descriptions, collections and search index are data.
_HOOKS = tuple(f.name for f in fields(Personality) if callable(f.default))


def hooks(namespace: Mapping[str, object]) -> dict[str, Any]:
    """A personality module's hooks, `**hooks(globals())`: what it defines under a hook's name,
    so each is written once, where it is defined (an alias such as `updated = created` counts)."""
    return {name: namespace[name] for name in _HOOKS if name in namespace}


GENERIC = Personality(
    name="",
    host="any",
    effect="a request on a write route",
    read="GET or a reads route: the records written, filtered by field equality",
    key="a JSON field named like the business key",
    collections=(),
)


def routes(*texts: str) -> tuple[Route, ...]:
    """``"POST /v1/pages"`` -> Route("POST", "/v1/pages")."""
    return tuple(Route(*text.split(" ", 1)) for text in texts)
