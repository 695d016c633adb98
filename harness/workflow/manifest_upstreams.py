"""Internal: The manifest's ``upstreams`` and ``credentials`` fields (pydantic models).

``upstreams`` maps each host a workflow calls (``api.stripe.com``, or ``smtp`` for the Send
Email node) to the fake that answers it and counts its commits, as ``UPSTREAMS.md`` of the
design describes::

    "upstreams": {
        "api.stripe.com": "stripe",
        "api.notion.com": {"fake": "record", "reference": {"json": "/properties/Order/title"},
                           "effects": ["POST /v1/pages"],
                           "templates": {"POST /v1/pages": {"status": 200,
                                                            "body": {"id": "{{id}}"}}}},
        "smtp": {"fake": "mail", "reference": {"subject": "Order (\\\\S+)"}}
    }

A reference is one of ``{"form": "metadata[order_id]"}``, ``{"json": "/order/id"}``,
``{"header": "X-Ref"}``, ``{"path": "regex"}``, ``{"query": "k"}``, ``{"subject": "regex"}``,
``{"body_regex": "regex"}``; a form, json, header or query reference may add ``"regex"``
with one group, the key inside the value (``{"query": "id", "regex": "^eq\\.(.+)$"}``).

A ``record`` host may name a built-in ``personality`` (``"api.notion.com": "notion"``, see
``fake_providers.personalities``) or declare ``collections`` of its own: which routes write a
record, which read them back, and the field that makes a write an upsert::

    "collections": {"customers": {"writes": ["POST /company_customers"],
                                  "reads": ["GET /customers"], "identity": "email"}}
 A route is ``"POST /v1/payment_intents*"`` (method, a space, an
fnmatch glob on the path) or ``"/v1/x"`` (any method). ``harness.workflow.upstream_config`` turns
these models into the fakes' ``fake_providers.upstreams.Upstream`` objects.

``credentials`` is the data of credentials the harness cannot fill itself (keyed by the
credential's type or name, see ``harness.workflow.credential_fill``).
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field

from fake_providers.personalities import PERSONALITIES
from fake_providers.upstreams import REFERENCE_KINDS
from harness.workflow.manifest_base import HTTP_METHODS, Problem, StrictModel

SMTP_HOST = "smtp"  # the Send Email node's upstream: no HTTP host, its credential's server
_LABEL = r"[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?"
_HOST = re.compile(rf"^{_LABEL}(\.{_LABEL})*$")
_REGEX_KINDS = ("path", "subject", "body_regex")


def parse_route(text: str) -> tuple[str, str]:
    """``"POST /v1/x*"`` -> ("POST", "/v1/x*"); ``"/v1/x"`` -> ("*", "/v1/x")."""
    parts = text.split()
    method, path = ("*", parts[0]) if len(parts) == 1 else (parts[0].upper(), parts[-1])
    if (
        len(parts) not in (1, 2)
        or method not in (*HTTP_METHODS, "*")
        or not (path.startswith("/") or path == "*")
    ):
        raise Problem(
            f"{text!r} is not a route; write the method, a space and a path glob "
            "('POST /v1/payment_intents*'), or only the path ('/v1/pages') for any method"
        )
    return method, path


def _route(text: str) -> str:
    parse_route(text)
    return text


Route = Annotated[str, AfterValidator(_route)]


def _reference(value: dict[str, str]) -> dict[str, str]:
    kinds = [k for k in value if k != "regex"]
    if len(kinds) != 1 or kinds[0] not in REFERENCE_KINDS:
        raise Problem(
            f"{value!r} is not a reference; write one of "
            + ", ".join(f'{{"{k}": ...}}' for k in REFERENCE_KINDS)
        )
    kind, where = kinds[0], value[kinds[0]]
    if "regex" in value:
        _value_regex(kind, value["regex"])
    if not where:
        raise Problem(f"the {kind} reference is empty; say where the business key is")
    if kind in _REGEX_KINDS:
        try:
            pattern = re.compile(where)
        except re.error as exc:
            raise Problem(f"{where!r} is not a regular expression ({exc})") from None
        if pattern.groups > 1:
            raise Problem(
                f"{where!r} has {pattern.groups} groups; capture the business key in one (...) "
                "or match only the key"
            )
    if kind == "json" and not where.startswith("/"):
        raise Problem(f"{where!r} is not a JSON pointer; write it like '/order/id'")
    return value


def _value_regex(kind: str, regex: str) -> None:
    if kind in _REGEX_KINDS:
        raise Problem(f"a {kind} reference is a regex already; drop 'regex', group in {kind!r}")
    try:
        groups = re.compile(regex).groups
    except re.error as exc:
        raise Problem(f"regex {regex!r} is not a regular expression ({exc})") from None
    if groups != 1:
        raise Problem(
            f"regex {regex!r} has {groups} groups; capture the business key in one (...), "
            "e.g. '^eq\\.(.+)$'"
        )


Reference = Annotated[dict[str, str], AfterValidator(_reference)]


class CollectionSpec(StrictModel):
    """Records a record fake remembers: the routes that create them, the routes that read
    them back (listed, filtered by field equality), the field that makes a write an upsert."""

    writes: list[Route] = Field(
        default_factory=list, description="routes that create a record (each one an effect)"
    )
    reads: list[Route] = Field(
        default_factory=list, description="routes that list the records written"
    )
    identity: str = Field(
        default="", description="a record field (dotted); a write to one already there updates it"
    )
    per_path: bool = Field(
        default=False, description="each write path is its own collection (one per table)"
    )


def _json_text(value: Any) -> Any:
    """A template body: an object is written as JSON; a string must already be JSON."""
    if isinstance(value, str):
        try:
            json.loads(value)
        except json.JSONDecodeError as exc:
            raise Problem(
                f"not valid JSON ({exc.msg} at column {exc.colno}); write the body as a JSON "
                'object, with placeholders inside strings: {"id": "{{id}}"}'
            ) from None
        return value
    if isinstance(value, dict | list):
        return json.dumps(value)
    raise Problem(f"expected a JSON object or a JSON string, got {value!r}")


class Template(StrictModel):
    """The answer of a record fake on one route: a status and a JSON body ({{id}} is the
    generated id, {{field}} a request field)."""

    status: int = Field(default=200, ge=100, le=599, description="HTTP status")
    body: Annotated[Any, AfterValidator(_json_text)] = Field(
        default='{"id": "{{id}}"}', description="JSON body (object, or JSON text)"
    )


class UpstreamSpec(StrictModel):
    """The fake that answers one host."""

    fake: Literal["stripe", "record", "mail"] = Field(
        default="record", description="stripe (Stripe's API), record (any REST API), mail (SMTP)"
    )
    reference: Reference | None = Field(
        default=None, description="where a commit carries the business key"
    )
    effects: list[Route] = Field(
        default_factory=list,
        description="routes that are the side effect (commits); empty: the fake's defaults",
    )
    reads: list[Route] = Field(
        default_factory=list, description="record: non-GET routes that only read"
    )
    templates: dict[Route, Template] = Field(
        default_factory=dict, description="record: the answer per route"
    )
    idempotency_header: str | None = Field(
        default=None, description="record: the header that makes a request idempotent"
    )
    effect: str = Field(
        default="", description="the effect kind of a commit; empty: the fake's default"
    )
    personality: Literal[tuple(sorted(PERSONALITIES))] | None = Field(  # type: ignore[valid-type]
        default=None, description="record: a built-in service (routes, filters, answers)"
    )
    collections: dict[str, CollectionSpec] = Field(
        default_factory=dict, description="record: what it remembers and reads back"
    )


def _shorthand(value: Any) -> Any:
    """``"stripe"`` is ``{"fake": "stripe"}``; ``"notion"`` is ``{"personality": "notion"}``."""
    if isinstance(value, str):
        return {"personality": value} if value in PERSONALITIES else {"fake": value}
    return value


def _host(value: str) -> str:
    if value != SMTP_HOST and not _HOST.match(value):
        raise Problem(
            f"{value!r} is not a host; write the host name only, as the workflow's URLs name "
            "it ('api.stripe.com', no scheme, port or path), or 'smtp' for the Send Email node"
        )
    return value.lower()


Host = Annotated[str, AfterValidator(_host)]
Upstreams = dict[Host, Annotated[UpstreamSpec, BeforeValidator(_shorthand)]]


# type or credential name -> data laid over the harness's fill; {} only asks the harness to
# create and bind a credential of a fillable type that the file does not reference.
Credentials = dict[str, dict[str, Any]]


def check_upstreams(upstreams: dict[str, UpstreamSpec]) -> None:
    """What only makes sense together: SMTP is mail's and mail is SMTP's."""
    for host, spec in upstreams.items():
        if (host == SMTP_HOST) != (spec.fake == "mail"):
            raise Problem(
                f"the 'mail' fake answers the Send Email node's SMTP, mapped as 'smtp'; map "
                f"{host!r} to {'mail' if host == SMTP_HOST else 'stripe or record'}",
                host,
            )
        if spec.fake != "record" and (
            spec.templates
            or spec.reads
            or spec.idempotency_header
            or spec.personality
            or spec.collections
        ):
            raise Problem(
                "templates, reads, idempotency_header, personality and collections are the "
                "record fake's; drop them or use fake 'record'",
                host,
            )
        if spec.personality and spec.idempotency_header:
            honoured = PERSONALITIES[spec.personality].idempotency_header
            if (honoured or "").lower() != spec.idempotency_header.lower():
                keeps = f"replays creates by {honoured!r}" if honoured else "keeps no such keys"
                raise Problem(
                    f"the {spec.personality} service {keeps}, so its fake ignores "
                    f"{spec.idempotency_header!r} as the service would: drop idempotency_header "
                    "(the fake knows the service's own header), and guard the effect another "
                    "way if the service has none",
                    f"{host}.idempotency_header",
                )
        for name, collection in spec.collections.items():
            if not collection.writes:
                raise Problem(
                    f"collection {name!r} names no write, so its reads would list nothing; "
                    'add the route that creates its records, e.g. "writes": ["POST /items"]',
                    f"{host}.collections.{name}.writes",
                )
