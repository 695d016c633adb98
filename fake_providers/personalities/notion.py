"""Notion: pages in databases (POST /v1/pages), read back by a database query with property
filters (POST /v1/databases/<id>/query), one page by GET/PATCH /v1/pages/<id>."""

from __future__ import annotations

import re
from typing import Any

from ..upstreams import Collection, ReferenceSource
from .base import Answer, MakeId, Personality, hooks, routes
from .documents import Document, Inbound, body_of, deep_merge, text, utc_stamp

PAGES = Collection(
    "pages",
    writes=routes("POST /v1/pages"),
    reads=routes("POST /v1/databases/*/query", "POST /v1/data_sources/*/query"),
)
# The value of a property as a filter compares it: its text, number, name or flag.
_VALUE_KEYS = ("content", "plain_text", "name", "start")
# A database's (data source's) schema: GET /v1/databases/<id>, GET /v1/data_sources/<id>.
_SCHEMA = re.compile(r"^/v1/(databases|data_sources)/([0-9A-Fa-f-]+)/?$")
_ANNOTATIONS = {
    "bold": False,
    "italic": False,
    "strikethrough": False,
    "underline": False,
    "code": False,
    "color": "default",
}


def _typed(properties: Any) -> dict[str, Any]:
    """Properties as Notion returns them: each with its `type` (and an `id`), rich text
    with its `plain_text` (what the Notion node's simplified output reads)."""
    typed = {}
    for name, value in (properties or {}).items():
        if isinstance(value, dict):
            kind = value.get("type") or next((k for k in value if k not in ("id",)), "")
            typed[name] = {"id": value.get("id", name[:4]), "type": kind, **value}
            if kind in ("title", "rich_text") and isinstance(value.get(kind), list):
                typed[name][kind] = [_rich_text(part) for part in value[kind]]
        else:
            typed[name] = value
    return typed


def _rich_text(part: Any) -> Any:
    """`{text: {content}}` as Notion answers it: typed, annotated, with its plain text."""
    if not isinstance(part, dict) or not isinstance(part.get("text"), dict):
        return part
    content = text(part["text"].get("content"))
    return {
        "type": "text",
        "annotations": _ANNOTATIONS,
        "plain_text": content,
        "href": None,
        **part,
        "text": {"content": content, "link": part["text"].get("link")},
    }


def store(collection: Collection, inbound: Inbound, make_id: MakeId) -> list[Document]:
    body = body_of(inbound)
    page_id = str(make_id(""))
    now = utc_stamp()
    return [
        {
            "object": "page",
            "id": page_id,
            "created_time": now,
            "last_edited_time": now,
            "archived": False,
            "in_trash": False,
            "parent": body.get("parent") or {},
            "properties": _typed(body.get("properties")),
            "url": f"https://www.notion.so/{page_id.replace('-', '')}",
        }
    ]


def update(collection: Collection, inbound: Inbound, document: Document) -> Document:
    body = body_of(inbound)
    change: dict[str, Any] = {
        "properties": _typed(body.get("properties")),
        "last_edited_time": utc_stamp(),
    }
    if "archived" in body or "in_trash" in body:
        change["archived"] = change["in_trash"] = bool(body.get("archived", body.get("in_trash")))
    return deep_merge(document, change)


def value_of(prop: Any) -> str:
    """A property's comparable value: `title: [{text: {content}}]` -> its text, `email` -> it."""
    if not isinstance(prop, dict):
        return text(prop)
    inner = prop.get(prop.get("type", "")) if prop.get("type") in prop else None
    if inner is None:
        inner = next((v for k, v in prop.items() if k not in ("id", "type")), None)
    if isinstance(inner, list):
        return "".join(value_of(part) for part in inner)
    if isinstance(inner, dict):
        return next((text(inner[k]) for k in _VALUE_KEYS if k in inner), value_of(inner))
    if isinstance(inner, bool):
        return "true" if inner else "false"
    return text(inner)


def _matches(page: Document, condition: Any) -> bool:
    if not isinstance(condition, dict) or not condition:
        return True
    if "and" in condition:
        return all(_matches(page, c) for c in condition["and"])
    if "or" in condition:
        return any(_matches(page, c) for c in condition["or"])
    name = condition.get("property")
    prop = (page.get("properties") or {}).get(name)
    test: Any = next((v for k, v in condition.items() if k not in ("property", "type")), {})
    if not isinstance(test, dict):
        return True
    have = value_of(prop) if prop is not None else ""
    for op, want in test.items():
        wanted = text(want)
        if wanted in ("true", "false") and isinstance(want, bool):
            wanted = "true" if want else "false"
        if op == "equals" and have != wanted:
            return False
        if op == "does_not_equal" and have == wanted:
            return False
        if op == "contains" and wanted not in have:
            return False
        if op == "is_empty" and have:
            return False
        if op == "is_not_empty" and not have:
            return False
    return True


def select(collection: Collection, inbound: Inbound, records: list[Document]) -> list[Document]:
    """Pages of the queried database (path id, dashes or not) that pass the filter."""
    database = inbound.path.rstrip("/").split("/")[-2].replace("-", "")
    body = body_of(inbound)
    found = []
    for page in records:
        parent = page.get("parent") or {}
        owner = str(parent.get("database_id") or parent.get("data_source_id") or "")
        if (owner and owner.replace("-", "") != database) or page.get("archived"):
            continue
        if _matches(page, body.get("filter")):
            found.append(page)
    return found


def listing(collection: Collection, inbound: Inbound, records: list[Document]) -> Answer:
    """One page of results: `page_size` (100), `start_cursor` (a page id), `has_more`."""
    body = body_of(inbound)
    size = int(body.get("page_size") or 100)
    ids = [page["id"] for page in records]
    start = ids.index(body["start_cursor"]) if body.get("start_cursor") in ids else 0
    chunk = records[start : start + size]
    more = start + size < len(records)
    return Answer(
        200,
        {
            "object": "list",
            "results": chunk,
            "next_cursor": ids[start + size] if more else None,
            "has_more": more,
            "type": "page_or_database",
            "page_or_database": {},
        },
    )


def created(collection: Collection, inbound: Inbound, records: list[Document]) -> Answer:
    return Answer(200, records[0])


def other(inbound: Inbound) -> Answer | None:
    """A database's (data source's) schema, one title property `Name`: the Notion node
    (v3) reads it to know which property takes the page title before it creates a page."""
    match = _SCHEMA.match(inbound.path)
    if inbound.method != "GET" or match is None:
        return None
    kind = "database" if match.group(1) == "databases" else "data_source"
    title = [_rich_text({"text": {"content": "Database"}})]
    schema = {"Name": {"id": "title", "name": "Name", "type": "title", "title": {}}}
    return Answer(
        200,
        {
            "object": kind,
            "id": match.group(2),
            "title": title,
            "properties": schema,
            "url": f"https://www.notion.so/{match.group(2).replace('-', '')}",
        },
    )


def reference(key: str) -> ReferenceSource:
    """The page property named like the key, its text (title, rich text, email, number)."""
    return ReferenceSource(
        "json",
        f"/properties/{key}",
        r'"(?:content|email|number|phone_number|url|name)":"?([^",}]+)',
    )


updated = created


PERSONALITY = Personality(
    name="notion",
    host="api.notion.com",
    effect="a page created (POST /v1/pages)",
    read="a database query (POST /v1/databases/<id>/query) with property filters, has_more;"
    " GET /v1/pages/<id>; a database's schema (GET /v1/data_sources/<id>): a title `Name`",
    key="the page property named like the business key (its text)",
    collections=(PAGES,),
    **hooks(globals()),
)
