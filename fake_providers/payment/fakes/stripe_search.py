"""Stripe's search query language, the part workflows use:

    metadata['order_id']:'A-1'   email:'a@b.c'   name~'Acme'   amount>1000   -status:'canceled'

Clauses joined by AND or by OR (not both, as in Stripe). `:` is an exact match (case-insensitive
for text fields other than metadata), `~` a substring match, `< <= > >=` numeric. As in Stripe
("under normal operating conditions, data is searchable in less than a minute"; the list APIs
see it at once), an object is searchable INDEX_LAG_S after its creation: "search then create"
is no guard against a redelivery seconds later, and a workflow that looks a payment up before
retrying it (Stripe replays a stored 500 to its key) finds it on a retry half a minute later.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .stripe_errors import invalid_request

Document = dict[str, Any]
INDEX_LAG_S = 10.0  # within Stripe's "less than a minute"; a sender's backoff outlasts it
_CLAUSE = re.compile(
    r"""\s*(?P<negate>-)?
    (?:metadata\[(?P<q>['"])(?P<meta>.+?)(?P=q)\]|(?P<field>[A-Za-z_][\w.]*))
    \s*(?P<op>:|~|>=|<=|>|<)\s*
    (?:(?P<vq>['"])(?P<text>.*?)(?P=vq)|(?P<number>-?\d+(?:\.\d+)?)|(?P<null>null))\s*""",
    re.VERBOSE,
)
_JOIN = re.compile(r"\s*(AND|OR)\s+")


def parse_query(query: str) -> Callable[[Document], bool]:
    """A predicate over documents; StripeError 400 for a query it cannot parse."""
    clauses: list[Callable[[Document], bool]] = []
    joins: set[str] = set()
    position = 0
    while True:
        match = _CLAUSE.match(query, position)
        if match is None:
            raise _unparsable(query)
        clauses.append(_clause(match))
        position = match.end()
        if position == len(query):
            break
        join = _JOIN.match(query, position)
        if join is None:
            raise _unparsable(query)
        joins.add(join.group(1))
        position = join.end()
    if len(joins) > 1:
        raise invalid_request(
            "search_query_invalid", "A search query cannot mix AND and OR.", param="query"
        )
    combine = any if joins == {"OR"} else all
    return lambda document: combine(clause(document) for clause in clauses)


def _clause(match: re.Match[str]) -> Callable[[Document], bool]:
    meta = match.group("meta")
    field = match.group("field") or ""
    op = match.group("op")
    negate = match.group("negate") is not None
    wanted: Any = match.group("text")
    if match.group("number") is not None:
        wanted = float(match.group("number"))
    elif match.group("null") is not None:
        wanted = None

    def value_of(document: Document) -> Any:
        if meta is not None:
            return (document.get("metadata") or {}).get(meta)
        node: Any = document
        for part in field.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        return node

    def test(document: Document) -> bool:
        return _compare(value_of(document), op, wanted, exact_case=meta is not None) != negate

    return test


def _compare(value: Any, op: str, wanted: Any, *, exact_case: bool) -> bool:
    if wanted is None:
        return value is None
    if value is None:
        return False
    if op in (">", "<", ">=", "<="):
        try:
            number, limit = float(value), float(wanted)
        except (TypeError, ValueError):
            return False
        return {">": number > limit, "<": number < limit, ">=": number >= limit}.get(
            op, number <= limit
        )
    text, target = str(value), str(wanted)
    if isinstance(wanted, float) and wanted.is_integer():
        target = str(int(wanted))
    if not exact_case:
        text, target = text.lower(), target.lower()
    return target in text if op == "~" else text == target


def _unparsable(query: str) -> Exception:
    return invalid_request(
        "search_query_invalid",
        f"We were unable to parse your search query: {query!r}. Try metadata['key']:'value'.",
        param="query",
    )
