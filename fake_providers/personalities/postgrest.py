"""PostgREST (Supabase): rows in tables (POST /rest/v1/<table>), read back with
`col=eq.v` / `in.(a,b)` / `is.null` / `neq`, `gt`... filters and `and=(...)` / `or=(...)`
groups of them; PATCH and DELETE by the same filters; `Prefer: return=representation`;
upsert with `Prefer: resolution=merge-duplicates` (identity: `on_conflict`, else `id`); RPC
(POST /rest/v1/rpc/<fn>)."""

from __future__ import annotations

import re
from typing import Any

from ..upstreams import Collection
from .base import Answer, MakeId, Personality, hooks, named_field, routes, stored_identity
from .documents import STORED_IDENTITY, Document, Inbound, body_of, deep_merge, public, text

RPC = Collection("rpc", writes=routes("POST /rest/v1/rpc/*"), per_path=True)
TABLES = Collection(
    "tables",
    writes=routes("POST /rest/v1/*"),
    reads=routes("GET /rest/v1/*", "HEAD /rest/v1/*"),
    per_path=True,
)
_NOT_FILTERS = frozenset(
    {"select", "order", "limit", "offset", "on_conflict", "columns", "and", "or"}
)


def _prefer(inbound: Inbound) -> str:
    return inbound.headers.get("prefer", "")


def _upserts(inbound: Inbound) -> bool:
    return "merge-duplicates" in _prefer(inbound) or "ignore-duplicates" in _prefer(inbound)


def _conflict_column(inbound: Inbound) -> str:
    """The row's identity column: an upsert's `on_conflict`, else the primary key `id`."""
    if not _upserts(inbound):
        return "id"
    return next((v for n, v in inbound.query if n == "on_conflict"), "id").split(",")[0]


def store(collection: Collection, inbound: Inbound, make_id: MakeId) -> list[Document]:
    body = inbound.params
    rows = body if isinstance(body, list) else [body] if isinstance(body, dict) else [{}]
    column = _conflict_column(inbound)
    found = []
    for row in rows:
        row = row if isinstance(row, dict) else {}
        identity = f"{column}={text(row[column])}" if column in row else ""
        generated = make_id(identity)
        # Rows keep their identity (STORED_IDENTITY): an upsert merges into the row, an insert of a
        # key that is there already is the 409 of a unique constraint (`conflict`).
        found.append({"id": generated.int % 900_000_000 + 1, **row, STORED_IDENTITY: identity})
    return found


def conflict(collection: Collection, inbound: Inbound, records: list[Document]) -> Answer | None:
    """An insert (not an upsert) of a key already there: PostgreSQL's unique violation."""
    if _upserts(inbound) or collection is RPC:
        return None
    table = inbound.path.rstrip("/").rsplit("/", 1)[-1]
    return Answer(
        409,
        {
            "code": "23505",
            "details": "Key already exists.",
            "hint": None,
            "message": f'duplicate key value violates unique constraint "{table}_pkey"',
        },
    )


def _passes(have: Any, test: str) -> bool:
    op, _, want = test.partition(".")
    negate = op == "not"
    if negate:
        op, _, want = want.partition(".")
    value = text(have) if have is not None else None
    if op == "eq":
        ok = value == want
    elif op == "neq":
        ok = value != want
    elif op == "in":
        ok = value in [w.strip().strip('"') for w in want.strip("()").split(",")]
    elif op == "is":
        ok = (have is None) if want == "null" else value == want
    elif op in ("gt", "gte", "lt", "lte"):
        ok = _compare(value, want, op)
    elif op in ("like", "ilike"):
        ok = _like(value or "", want, op == "ilike")
    else:
        ok = True
    return ok != negate


def _compare(value: str | None, want: str, op: str) -> bool:
    if value is None:
        return False
    try:
        a, b = float(value), float(want)
        return {"gt": a > b, "gte": a >= b, "lt": a < b, "lte": a <= b}[op]
    except ValueError:
        return {"gt": value > want, "gte": value >= want, "lt": value < want, "lte": value <= want}[
            op
        ]


def _like(value: str, pattern: str, fold: bool) -> bool:
    from fnmatch import fnmatchcase

    glob = pattern.replace("%", "*")
    return fnmatchcase(value.lower(), glob.lower()) if fold else fnmatchcase(value, glob)


def _split(group: str) -> list[str]:
    """A logical filter's conditions: split at the commas outside parentheses and quotes."""
    parts, depth, quoted, start, escaped = [], 0, False, 0, False
    for at, char in enumerate(group):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == '"':
            quoted = not quoted
        elif not quoted and char in "()":
            depth += 1 if char == "(" else -1
        elif not quoted and depth == 0 and char == ",":
            parts.append(group[start:at])
            start = at + 1
    return [*parts, group[start:]]


def _unquoted(value: str) -> str:
    """A value as PostgREST reads it: `"a.b"` (quoted for its reserved characters) is a.b."""
    if len(value) > 1 and value[0] == value[-1] == '"':
        return re.sub(r"\\(.)", r"\1", value[1:-1])
    return value


def _holds(row: Document, condition: str) -> bool:
    """One condition of `and=(...)`/`or=(...)`: `col.op.value`, or a nested `and(...)`,
    `or(...)` (PostgREST's logical operators; n8n's Supabase node filters with them)."""
    for logic in ("and", "or", "not.and", "not.or"):
        if condition.startswith(logic + "(") and condition.endswith(")"):
            held = _logical(row, logic.removeprefix("not."), condition[len(logic) :])
            return held != logic.startswith("not.")
    column, _, test = condition.partition(".")
    negate, _, rest = test.partition(".") if test.startswith("not.") else ("", "", test)
    op, _, value = rest.partition(".")
    test = f"{negate + '.' if negate else ''}{op}.{_unquoted(value)}"
    return _passes(row.get(_unquoted(column)), test)


def _logical(row: Document, logic: str, group: str) -> bool:
    held = (_holds(row, c.strip()) for c in _split(group.strip()[1:-1]))
    return all(held) if logic == "and" else any(held)


def select(collection: Collection, inbound: Inbound, records: list[Document]) -> list[Document]:
    tests = [(n, v) for n, v in inbound.query if n not in _NOT_FILTERS and "." in v]
    logical = [(n, v) for n, v in inbound.query if n in ("and", "or") and v.startswith("(")]
    return [
        r
        for r in records
        if all(_passes(r.get(n), v) for n, v in tests)
        and all(_logical(r, n, v) for n, v in logical)
    ]


def listing(collection: Collection, inbound: Inbound, records: list[Document]) -> Answer:
    rows = public(records)
    if "vnd.pgrst.object" in inbound.headers.get("accept", ""):
        if len(rows) != 1:
            return Answer(
                406,
                {
                    "code": "PGRST116",
                    "message": "JSON object requested, multiple (or no) rows returned",
                    "details": f"{len(rows)} rows",
                },
            )
        return Answer(200, rows[0])
    limit = next((int(v) for n, v in inbound.query if n == "limit" and v.isdigit()), None)
    return Answer(200, rows[:limit] if limit is not None else rows)


def created(collection: Collection, inbound: Inbound, records: list[Document]) -> Answer:
    if collection is RPC:
        return Answer(200, inbound.params if inbound.params is not None else None)
    if "return=representation" in _prefer(inbound):
        shown = listing(collection, inbound, records)
        return Answer(201 if shown.status == 200 else shown.status, shown.body)
    return Answer(201, None)


def update(collection: Collection, inbound: Inbound, document: Document) -> Document:
    body = body_of(inbound)
    return deep_merge(document, body)


def updated(collection: Collection, inbound: Inbound, records: list[Document]) -> Answer:
    if "return=representation" in _prefer(inbound):
        return listing(collection, inbound, records)
    return Answer(204, None)


reference = named_field  # the column in the row sent (the first of a bulk insert)
identity = stored_identity  # an upsert is keyed by what `store` kept


PERSONALITY = Personality(
    name="postgrest",
    host="<project>.supabase.co",
    effect="a row inserted (POST /rest/v1/<table>); an upsert to a row already there and a"
    " PATCH are not new effects; an RPC call",
    read="GET /rest/v1/<table>?col=eq.v (eq, neq, in, is, gt, lt, like), and=(...)/or=(...)"
    " (the Supabase node's), single object by Accept: application/vnd.pgrst.object+json",
    key="the column named like the business key in the row sent; in a URL filter use"
    ' {"query": "id", "regex": "^eq\\\\.(.+)$"}',
    collections=(RPC, TABLES),
    **hooks(globals()),
)
