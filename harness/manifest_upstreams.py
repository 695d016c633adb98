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
``{"body_regex": "regex"}``. A route is ``"POST /v1/payment_intents*"`` (method, a space, an
fnmatch glob on the path) or ``"/v1/x"`` (any method). ``harness.upstream_config`` turns these
models into the fakes' ``fake_providers.upstreams.Upstream`` objects.

``credentials`` is the data of credentials the harness cannot fill itself (keyed by the
credential's type or name, see ``harness.credential_fill``).
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field

from harness.manifest_base import HTTP_METHODS, Problem, StrictModel

FAKE_KINDS = ("stripe", "record", "mail")
REFERENCE_KINDS = ("form", "json", "header", "path", "query", "subject", "body_regex")
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
    if len(value) != 1 or next(iter(value)) not in REFERENCE_KINDS:
        raise Problem(
            f"{value!r} is not a reference; write one of "
            + ", ".join(f'{{"{k}": ...}}' for k in REFERENCE_KINDS)
        )
    ((kind, where),) = value.items()
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


Reference = Annotated[dict[str, str], AfterValidator(_reference)]


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
        description="stripe (Stripe's API), record (any REST API), mail (SMTP)"
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


def _shorthand(value: Any) -> Any:
    """``"stripe"`` is ``{"fake": "stripe"}``."""
    return {"fake": value} if isinstance(value, str) else value


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
        if spec.fake != "record" and (spec.templates or spec.reads or spec.idempotency_header):
            raise Problem(
                "templates, reads and idempotency_header are the record fake's; drop them or "
                "use fake 'record'",
                host,
            )
