"""The request and the JSON documents a personality's hooks work on, and the small helpers
every service reads them with: kept apart from `base` (what a personality is) so that a
service module imports its types in one line from each. Stdlib only: the record fake and the
ledger store use the helpers too."""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

Document = dict[str, Any]
# Where a service that names its records' identity keeps it: stored, never answered.
STORED_IDENTITY = "_on"


class Inbound(Protocol):
    """One request as the record fake parsed it (``fakes.inbound.UpstreamRequest``)."""

    @property
    def method(self) -> str: ...
    @property
    def path(self) -> str: ...
    @property
    def query(self) -> list[tuple[str, str]]: ...
    @property
    def headers(self) -> Mapping[str, str]: ...
    @property
    def params(self) -> Any: ...


def body_of(inbound: Inbound) -> dict[str, Any]:
    """The request's fields (JSON object or form); {} for any other body."""
    return inbound.params if isinstance(inbound.params, dict) else {}


def text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def utc_stamp() -> str:
    """Now as Airtable, HubSpot and Notion write a record's time: UTC to the second, `.000Z`."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def descend(node: Any, steps: Iterable[str]) -> Any:
    """The value under `node` along `steps` (object keys, list indexes); None off the tree.
    Shared by dotted fields, the record fake's placeholders and JSON pointers."""
    for step in steps:
        if isinstance(node, dict):
            node = node.get(step)
        elif isinstance(node, list) and step.isdigit() and int(step) < len(node):
            node = node[int(step)]
        else:
            return None
    return node


def field(document: Any, dotted: str) -> Any:
    """A dotted field ("properties.email"), or the one under ``properties`` (HubSpot)."""
    node = descend(document, dotted.split("."))
    if node is None and "." not in dotted and isinstance(document, dict):
        properties = document.get("properties") or document.get("fields")
        if isinstance(properties, dict):
            return properties.get(dotted)
    return node


# Query parameters that name no field but search the records' text, as the services'
# search endpoints do (Pipedrive's `term`, `q` and `query` of many others).
FREE_TEXT = frozenset({"term", "q", "query", "search", "keyword", "keywords"})


def matching(
    records: list[Document], query: Iterable[tuple[str, str]], equal: Iterable[tuple[str, str]] = ()
) -> list[Document]:
    """The records a read selects: a query parameter that names a record field (at the top or
    under `properties`/`fields`) by equality, a free-text one by the text it contains, and
    `equal`'s (field, value) pairs (a search body's filters). Paging parameters name neither."""
    known = {name for record in records for name in (*record, *_nested(record))}
    wanted = [(n, v) for n, v in query if n in known] + list(equal)
    wanted_texts = [v.casefold() for n, v in query if n in FREE_TEXT and n not in known]
    return [
        r
        for r in records
        if all(text(field(r, n)) == v for n, v in wanted)
        and all(t in "\n".join(texts(r)) for t in wanted_texts)
    ]


def _nested(record: Document) -> list[str]:
    inner = record.get("properties") or record.get("fields")
    return list(inner) if isinstance(inner, dict) else []


def texts(node: Any) -> list[str]:
    """Every string and number under `node`, case-folded (a stored identity aside): what a
    service's free-text search looks through."""
    if isinstance(node, dict):
        return [t for k, v in node.items() if k != STORED_IDENTITY for t in texts(v)]
    if isinstance(node, list):
        return [t for v in node for t in texts(v)]
    return [] if node is None or isinstance(node, bool) else [text(node).casefold()]


def deep_merge(old: Document, new: Document) -> Document:
    """`new` laid over `old`; nested objects merge (a PATCH of one property keeps the rest)."""
    merged = dict(old)
    for name, value in new.items():
        before = merged.get(name)
        both = isinstance(before, dict) and isinstance(value, dict)
        merged[name] = deep_merge(before, value) if both else value  # type: ignore[arg-type]
    return merged


def public(records: list[Document]) -> list[Document]:
    """The records as the service answers them: without their stored identity."""
    return [{k: v for k, v in r.items() if k != STORED_IDENTITY} for r in records]
