"""The record fake's memory: which collection a request reads or writes, and the records.

A request is matched, in this order, as: an item of a collection that exists (`<write
path>/<id>`, e.g. GET or PATCH /v1/pages/<id>), a read, a write, an item that does not exist
(404), or a PATCH/PUT/DELETE on a write path that selects its records by filter (PostgREST).
Records are the provider's `objects` rows, kind "c:<collection>", so a reset forgets them.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from ...personalities.base import Personality
from ...personalities.documents import Document
from ...upstreams import Collection, Upstream
from ..runtime import ProviderRuntime

_ITEM_METHODS = frozenset({"GET", "PATCH", "PUT", "DELETE"})
DELETED = "_deleted"  # a record a DELETE removed: kept (evidence), never read back


@dataclass(frozen=True)
class Target:
    collection: Collection
    role: str  # read | write | item | filtered
    kind: str  # the objects' kind: "c:<collection key>"
    item: str = ""  # the record's id (role item)


Records = Callable[[str], Awaitable[list[Document]]]


async def target_of(
    collections: Sequence[Collection],
    personality: Personality,
    method: str,
    path: str,
    records: Records,
) -> Target | None:
    path = path.rstrip("/") or "/"
    parent, _, last = path.rpartition("/")

    def kind(collection: Collection, where: str) -> str:
        return "c:" + personality.key_of(collection, where)

    items = [c for c in collections if method in _ITEM_METHODS and parent and _writes(c, parent)]
    for collection in items:
        if find(await records(kind(collection, parent)), last) is not None:
            return Target(collection, "item", kind(collection, parent), last)
    for role in ("read", "write"):
        for collection in collections:
            routes = collection.reads if role == "read" else collection.writes
            if any(route.matches(method, path) for route in routes):
                return Target(collection, role, kind(collection, path))
    if items:
        return Target(items[0], "item", kind(items[0], parent), last)
    for collection in collections:
        if method in _ITEM_METHODS - {"GET"} and _writes(collection, path):
            return Target(collection, "filtered", kind(collection, path))
    return None


def _writes(collection: Collection, path: str) -> bool:
    """Is `path` a write path of the collection, whatever the method?"""
    return any(
        route.matches(route.method if route.method != "*" else "GET", path)
        for route in collection.writes
    )


def find(documents: list[Document], record_id: str) -> Document | None:
    return next((d for d in documents if str(d.get("id")) == record_id), None)


def live(documents: list[Document]) -> list[Document]:
    return [d for d in documents if not d.get(DELETED)]


def storage_id(personality: Personality, collection: Collection, document: Document) -> str:
    """Where a record is kept: by its identity (an upsert lands on the same row), else its id."""
    identity = personality.identity(collection, document)
    return f"i:{identity}" if identity else str(document.get("id"))


def id_maker(upstream: Upstream, kind: str) -> Callable[[str], uuid.UUID]:
    """A fresh id, or for an identity the same id every time (an upsert answers the record's
    id, whichever request created it)."""

    def make(identity: str) -> uuid.UUID:
        if not identity:
            return uuid.uuid4()
        return uuid.uuid5(uuid.NAMESPACE_URL, f"{upstream.host}/{kind}/{identity}")

    return make


async def stored(
    runtime: ProviderRuntime, host: str, kind: str, index_lag_s: float | None = None
) -> list[Document]:
    """A collection's records; with `index_lag_s`, those its service's search index holds."""
    rows = await runtime.db(lambda store: store.objects(host, kind))
    if index_lag_s is not None:
        rows = runtime.searchable(rows, index_lag_s)
    return [row.document for row in rows]
