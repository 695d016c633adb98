"""Which fake answers which upstream host: the config the provider receives over its control API.

Stdlib only (the harness imports it to convert the manifest's `upstreams` field). Every class
round-trips through JSON with `to_json()` / `from_json()`; bad values raise `UpstreamConfigError`
at construction, so a bad manifest fails when it is read, not when a request arrives.

    Upstream(host="api.stripe.com", fake="stripe",
             reference=ReferenceSource("form", "metadata[order_id]"),
             effects=(Route("POST", "/v1/payment_intents*"),))

A `record` upstream may name a built-in `personality` (fake_providers.personalities: Notion,
PostgREST, Sheets, ...) or its own `collections` (what it remembers and the routes that read
it back); a reference may take the key out of a value with a one-group `regex`.

Template bodies are JSON; `{{id}}` and `{{field}}` (a request field, dotted for nesting) are
substituted inside JSON strings after parsing, and a string that is exactly one placeholder
takes the field's value with its JSON type: `{"id": "{{id}}", "amount": "{{amount}}"}`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from fake_providers.errors import FakeProviderError

FAKE_KINDS = ("stripe", "record", "mail")
REFERENCE_KINDS = ("form", "json", "header", "path", "query", "subject", "body_regex")
_REGEX_KINDS = frozenset({"path", "subject", "body_regex"})
# A case's business key inside a longer text (a Slack message with n8n's footer, an SMS, an
# email address): the shape n8n-chaos gives its keys, "<case id>-<10 hex digits>"
# (harness.workflow.manifest.case_key), as one group.
KEY_IN_TEXT = r"([\w.\-]+-[0-9a-f]{10})(?![\w\-])"
# The effect kind of a commit when the Upstream does not name one (stripe names its objects).
DEFAULT_EFFECT = {"stripe": "", "record": "record", "mail": "email"}


class UpstreamConfigError(FakeProviderError, ValueError):
    """An Upstream (or part of one) that cannot work; the message names the field and a fix."""


@dataclass(frozen=True)
class ReferenceSource:
    """Where a request carries the business reference.

    form: a form field as sent ("metadata[order_id]"); json: a JSON pointer ("/order/id");
    header: a header name; query: a query parameter; path, subject, body_regex: a regex whose
    first group (or whole match) is the reference, over the path, the mail subject, the body.
    `regex` (form, json, header, query): the reference is its one group in the value found
    there, so `eq.<key>` (PostgREST) or a key inside a longer string is found.
    """

    kind: str
    where: str
    regex: str = ""

    def __post_init__(self) -> None:
        if self.kind not in REFERENCE_KINDS:
            raise UpstreamConfigError(
                f"reference kind {self.kind!r} is unknown; use one of {', '.join(REFERENCE_KINDS)}"
            )
        if not self.where:
            raise UpstreamConfigError(f"reference {self.kind!r} needs a non-empty 'where'")
        if self.kind == "json" and not self.where.startswith("/"):
            raise UpstreamConfigError(
                f"reference json pointer {self.where!r} must start with '/', e.g. '/order/id'"
            )
        if self.kind in _REGEX_KINDS:
            try:
                re.compile(self.where)
            except re.error as exc:
                raise UpstreamConfigError(
                    f"reference {self.kind} regex {self.where!r} is invalid: {exc}"
                ) from exc
        if self.regex:
            if self.kind in _REGEX_KINDS:
                raise UpstreamConfigError(
                    f"reference {self.kind!r} is a regex already; put the group in 'where'"
                )
            try:
                groups = re.compile(self.regex).groups
            except re.error as exc:
                raise UpstreamConfigError(
                    f"reference regex {self.regex!r} is invalid: {exc}"
                ) from exc
            if groups != 1:
                raise UpstreamConfigError(
                    f"reference regex {self.regex!r} has {groups} groups; capture the key in one"
                )

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "where": self.where, "regex": self.regex}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> ReferenceSource:
        return cls(str(doc["kind"]), str(doc["where"]), str(doc.get("regex") or ""))


@dataclass(frozen=True)
class Route:
    """A method ("*" = any) and an fnmatch glob over the path (no query), e.g. "/v1/pages*"."""

    method: str = "*"
    path: str = "*"

    def __post_init__(self) -> None:
        if not self.method or not self.path:
            raise UpstreamConfigError("a route needs a method ('*' for any) and a path glob")
        object.__setattr__(self, "method", self.method.upper())

    def matches(self, method: str, path: str) -> bool:
        return (self.method == "*" or self.method == method.upper()) and fnmatchcase(
            path, self.path
        )

    def to_json(self) -> dict[str, Any]:
        return {"method": self.method, "path": self.path}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Route:
        return cls(method=str(doc.get("method", "*")), path=str(doc.get("path", "*")))


@dataclass(frozen=True)
class RouteTemplate:
    """How the record fake answers a route: a status and a JSON body template."""

    route: Route
    status: int = 200
    body: str = '{"id": "{{id}}"}'

    def __post_init__(self) -> None:
        if not 100 <= self.status <= 599:
            raise UpstreamConfigError(f"template status {self.status} is not an HTTP status")
        try:
            json.loads(self.body)
        except ValueError as exc:
            raise UpstreamConfigError(
                f"template body for {self.route.method} {self.route.path} is not valid JSON"
                f' ({exc}); put placeholders inside strings, e.g. "{{{{id}}}}"'
            ) from exc

    def parsed_body(self) -> Any:
        return json.loads(self.body)

    def to_json(self) -> dict[str, Any]:
        return {"route": self.route.to_json(), "status": self.status, "body": self.body}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> RouteTemplate:
        body = doc.get("body", '{"id": "{{id}}"}')
        return cls(
            route=Route.from_json(doc["route"]),
            status=int(doc.get("status", 200)),
            body=body if isinstance(body, str) else json.dumps(body),
        )


@dataclass(frozen=True)
class Collection:
    """Records the record fake remembers and the routes that read them back.

    A request on a `writes` route creates a record in the collection (one commit); `reads`
    routes list the collection, filtered as the personality filters (`filters`); GET, PATCH,
    PUT or DELETE on `<a write path>/<id>` reads, changes or removes one record. `identity`
    (a dotted field of the record, e.g. "email" or "properties.email") makes writes upserts:
    a write whose identity is already there updates that record and is not a second effect.
    `per_path`: each write path is its own collection (PostgREST tables, sheets)."""

    name: str
    writes: tuple[Route, ...]
    reads: tuple[Route, ...] = ()
    identity: str = ""
    per_path: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "writes", tuple(self.writes))
        object.__setattr__(self, "reads", tuple(self.reads))
        if not self.writes:
            raise UpstreamConfigError(
                f"collection {self.name!r} has no write route; name the route that creates"
                " its records, e.g. writes: ['POST /v1/pages']"
            )

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "writes": [route.to_json() for route in self.writes],
            "reads": [route.to_json() for route in self.reads],
            "identity": self.identity,
            "per_path": self.per_path,
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Collection:
        return cls(
            name=str(doc["name"]),
            writes=tuple(Route.from_json(r) for r in doc.get("writes") or ()),
            reads=tuple(Route.from_json(r) for r in doc.get("reads") or ()),
            identity=str(doc.get("identity") or ""),
            per_path=bool(doc.get("per_path", False)),
        )


@dataclass(frozen=True)
class Upstream:
    """One intercepted host and the fake that answers it (host "smtp" for the mail fake)."""

    host: str
    fake: str
    reference: ReferenceSource | None = None
    effects: tuple[Route, ...] = ()  # empty: the fake's default effect routes
    reads: tuple[Route, ...] = ()  # record: non-GET routes that are reads, not commits
    templates: tuple[RouteTemplate, ...] = ()
    idempotency_header: str | None = None  # record: optional idempotency by this header
    effect: str = ""  # the commits' effect kind; "" = the fake's default
    personality: str = ""  # record: a built-in service's routes, filters and answers
    collections: tuple[Collection, ...] = ()  # record: what it remembers (or the personality's)

    def __post_init__(self) -> None:
        if self.fake not in FAKE_KINDS:
            raise UpstreamConfigError(
                f"upstream {self.host!r}: fake {self.fake!r} is unknown;"
                f" use one of {', '.join(FAKE_KINDS)}"
            )
        if not self.host or any(c in self.host for c in "/ "):
            raise UpstreamConfigError(
                f"upstream host {self.host!r} must be a bare host name, e.g. 'api.stripe.com'"
            )
        object.__setattr__(self, "host", self.host.lower())
        for name in ("effects", "reads", "templates", "collections"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        if (self.personality or self.collections) and self.fake != "record":
            raise UpstreamConfigError(
                f"upstream {self.host!r}: personality and collections are the record fake's"
            )

    def is_effect_route(self, method: str, path: str) -> bool | None:
        """True/False when `effects` is configured; None: the fake decides (its defaults)."""
        if not self.effects:
            return None
        return any(route.matches(method, path) for route in self.effects)

    def is_read(self, method: str, path: str) -> bool:
        return any(route.matches(method, path) for route in self.reads)

    def template_for(self, method: str, path: str) -> RouteTemplate | None:
        return next((t for t in self.templates if t.route.matches(method, path)), None)

    def effect_kind(self, fake_default: str) -> str:
        return self.effect or DEFAULT_EFFECT[self.fake] or fake_default

    def to_json(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "fake": self.fake,
            "reference": self.reference.to_json() if self.reference else None,
            "effects": [route.to_json() for route in self.effects],
            "reads": [route.to_json() for route in self.reads],
            "templates": [template.to_json() for template in self.templates],
            "idempotency_header": self.idempotency_header,
            "effect": self.effect,
            "personality": self.personality,
            "collections": [collection.to_json() for collection in self.collections],
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Upstream:
        try:
            reference = doc.get("reference")
            return cls(
                host=str(doc["host"]),
                fake=str(doc["fake"]),
                reference=ReferenceSource.from_json(reference) if reference else None,
                effects=tuple(Route.from_json(r) for r in doc.get("effects") or ()),
                reads=tuple(Route.from_json(r) for r in doc.get("reads") or ()),
                templates=tuple(RouteTemplate.from_json(t) for t in doc.get("templates") or ()),
                idempotency_header=doc.get("idempotency_header"),
                effect=str(doc.get("effect") or ""),
                personality=str(doc.get("personality") or ""),
                collections=tuple(Collection.from_json(c) for c in doc.get("collections") or ()),
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise UpstreamConfigError(f"upstream {doc!r} is malformed: {exc!r}") from exc


def upstreams_to_json(upstreams: list[Upstream]) -> list[dict[str, Any]]:
    return [upstream.to_json() for upstream in upstreams]


def upstreams_from_json(docs: list[dict[str, Any]]) -> list[Upstream]:
    """Parse a list; two upstreams for one host is a config error."""
    if not isinstance(docs, list):
        raise UpstreamConfigError("upstreams must be a JSON list of Upstream objects")
    upstreams = [Upstream.from_json(doc) for doc in docs]
    hosts = [upstream.host for upstream in upstreams]
    duplicates = sorted({host for host in hosts if hosts.count(host) > 1})
    if duplicates:
        raise UpstreamConfigError(f"upstream host(s) configured twice: {', '.join(duplicates)}")
    return upstreams
