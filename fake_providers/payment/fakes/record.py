"""The `record` fake: a generic recording REST upstream (Notion, Airtable, a team's backend).

- Every non-GET request is a commit (effect "record", or the Upstream's `effect`) unless it
  matches `reads`, or `effects` is configured and it matches none of them (then it is recorded
  but no commit, and meets no fault or barrier).
- Answers come from the first matching `templates` entry (status, JSON body with `{{id}}`,
  `{{number}}` (the id as an integer) and `{{field}}` substituted), else the request's JSON
  echoed with an `id`. A read's template gets `{{records}}`, the records it lists, so a
  listing takes the API's own shape (`{"items": "{{records}}"}`).
- GET <path> answers {"results": [records posted to <path>], "has_more": false}, filtered by
  query parameters that name record fields; GET <path>/<id> answers one record (404 if the
  collection has records but not that one). A `reads` route answers the same listing. A
  free-text parameter (`term`, `q`, ... : `documents.FREE_TEXT`) keeps the records whose
  text holds its value.
- A read of <path>/search lists <path> (a CRM's search endpoint, e.g. HubSpot's
  POST /crm/v3/objects/deals/search), filtered by query parameters and by the EQ filters of a
  JSON body's `filterGroups` (HubSpot's search body); a field is looked up in the record and
  under its `properties`.
- With `idempotency_header`, a repeated header value replays the first answer (pipeline);
  a personality's collections honour the service's own header only (Zendesk's
  Idempotency-Key), as the service ignores any other.
- With `collections` (the Upstream's own, or its `personality`'s, fake_providers.personalities)
  the fake remembers as the service does (`collections.py`): a write lands in a collection, the
  service's own reads list it (filtered, shaped and paged by the personality), a PATCH/PUT/DELETE
  changes what later reads return and commits nothing, and a write to an identity already
  stored is an upsert, not a second commit (or a 409, where the service has a unique key).
  Every request is still an attempt in the evidence.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ...personalities import personality
from ...personalities.base import Answer, Personality
from ...personalities.documents import descend, matching, text
from ...upstreams import Collection, RouteTemplate, Upstream
from ..kinds import Outcome
from ..pipeline import EffectPipeline, EffectResult, json_response, unique
from ..problems import ProblemError
from ..runtime import ProviderRuntime
from ..store import ObjectRow, StoredResponse
from .collections import DELETED, Target, find, id_maker, live, storage_id, stored, target_of
from .explain import attempt_start
from .inbound import UnreadableBody, UpstreamRequest, read_upstream_request
from .seeding import seeded_id

_PLACEHOLDER = re.compile(r"\{\{\s*([\w.\-]+)\s*\}\}")
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class RecordFake:
    def __init__(self, runtime: ProviderRuntime) -> None:
        self.runtime = runtime
        self.pipeline = EffectPipeline(runtime)

    async def handle(self, request: Request, upstream: Upstream) -> Response:
        received_at = self.runtime.clock()
        try:
            inbound = await read_upstream_request(request, self.runtime.config.max_body_bytes)
        except UnreadableBody as exc:
            return JSONResponse({"error": "bad_request", "message": str(exc)}, 400)
        except ProblemError as exc:
            return exc.to_response()
        method, path = inbound.method, inbound.path
        kind = personality(upstream.personality)
        collections = upstream.collections or kind.collections
        if collections:
            target = await target_of(
                collections,
                kind,
                method,
                path,
                lambda name: stored(self.runtime, upstream.host, name),
            )
            if target is not None:
                return await self._remember(upstream, kind, target, inbound, received_at)
            other = kind.other(inbound)
            if other is not None:
                return _answer(other)
        template = upstream.template_for(method, path)
        if method in _SAFE_METHODS or upstream.is_read(method, path):
            found = await self._read(upstream, inbound)
            if template is None or isinstance(found, Response):
                return found if isinstance(found, Response) else _listing(found)
            fields = {"id": "", **dict(inbound.query), **_fields(inbound.params)}
            return _to_response(render(template, {**fields, "records": found}))
        observed = upstream.is_effect_route(method, path)
        key = _idempotency_key(inbound, upstream.idempotency_header)
        start = attempt_start(
            upstream.effect_kind("record"), key, upstream.reference, inbound, received_at
        )

        def effect_result(now: float) -> EffectResult:
            generated = uuid.uuid4()
            given = seeded_id(inbound.params)
            record_id = str(generated) if given is None else str(given)
            body = inbound.params
            record = {**body, "id": record_id} if isinstance(body, dict) else {"id": record_id}
            if not isinstance(body, dict) and inbound.raw_body:
                record["body"] = (
                    body if body is not None else inbound.raw_body.decode("utf-8", "replace")
                )
            # {{number}}: the same record's id as an integer, for APIs whose ids are numbers.
            number = generated.int % 900_000_000 + 100_000_000
            fields = {**_fields(body), "id": record_id, "number": number}
            answer = render(template, fields) if template else json_response(200, record)
            return EffectResult(
                record_id,
                answer,
                commits=True,
                outcome=Outcome.COMMITTED,
                objects=[ObjectRow(upstream.host, path, record_id, record, now)],
            )

        return await self.pipeline.run(
            start, effect_result, observed=True if observed is None else observed
        )

    async def _remember(
        self,
        upstream: Upstream,
        kind: Personality,
        target: Target,
        inbound: UpstreamRequest,
        received_at: float,
    ) -> Response:
        """A request on a collection: reads answer what was written, writes remember."""
        collection, host = target.collection, upstream.host
        searched = target.role == "read" and any(
            route.matches(inbound.method, inbound.path) for route in kind.searched
        )
        lag = kind.index_lag_s if searched else None
        records = live(await stored(self.runtime, host, target.kind, lag))
        template = upstream.template_for(inbound.method, inbound.path)
        if target.role == "read" or (target.role == "item" and inbound.method == "GET"):
            if target.role == "item":
                one = find(records, target.item)
                if one is None:
                    return _not_found(target.item)
                return _answer(kind.fetched(collection, inbound, [one]))
            found = kind.select(collection, inbound, records)
            if template is not None:
                fields = {"id": "", **dict(inbound.query), **_fields(inbound.params)}
                return _to_response(render(template, {**fields, "records": found}))
            return _answer(kind.listing(collection, inbound, found))
        if target.role == "write":
            make_id = id_maker(upstream, target.kind)

            def documents() -> tuple[list[dict[str, Any]], Answer]:
                written = kind.store(collection, inbound, make_id)
                if written and (given := seeded_id(inbound.params)) is not None:
                    written[0] = {**written[0], "id": given}  # the id the trigger names
                return written, kind.created(collection, inbound, written)

            def refused(written: list[dict[str, Any]]) -> Answer | None:
                return kind.conflict(collection, inbound, written)

            def upserted(written: list[dict[str, Any]]) -> Answer | None:
                return kind.upserted(collection, inbound, written)

            default = kind.new_effect(collection, inbound, records)
        else:
            if target.role == "item":
                one = find(records, target.item)
                chosen = [one] if one else []
            else:
                chosen = kind.select(collection, inbound, records)
            if target.role == "item" and not chosen:
                return _not_found(target.item)
            gone = inbound.method == "DELETE"

            def documents() -> tuple[list[dict[str, Any]], Answer]:
                changed = [
                    {**d, DELETED: True} if gone else kind.update(collection, inbound, d)
                    for d in chosen
                ]
                return changed, kind.updated(collection, inbound, changed)

            def refused(written: list[dict[str, Any]]) -> Answer | None:
                return None

            upserted = refused
            default = False  # a change to records already there is not a new effect
        observed = upstream.is_effect_route(inbound.method, inbound.path)
        effect = _effect(upstream, upstream.collections or kind.collections, target)
        # Only a create, and only by the service's own header (if it has one).
        key = _idempotency_key(inbound, kind.idempotency_header) if target.role == "write" else None
        start = attempt_start(effect, key, upstream.reference, inbound, received_at)

        def effect_result(now: float) -> EffectResult:
            written, answer = documents()
            first = str(written[0].get("id", "")) if written else ""
            objects = [
                ObjectRow(host, target.kind, storage_id(kind, collection, d), d, now)
                for d in written
            ]
            if template is not None:
                fields = {**_fields(inbound.params), "id": first, "records": written}
                response = render(template, fields)
            else:
                response = stored_answer(answer)
            conflict = refused(written)
            existing = upserted(written) if template is None else None
            return EffectResult(
                first,
                response,
                commits=bool(written),
                outcome=Outcome.COMMITTED,
                objects=objects,
                upsert=conflict is None,
                settle_check=unique(stored_answer(conflict)) if conflict is not None else None,
                upserted=stored_answer(existing) if existing is not None else None,
            )

        return await self.pipeline.run(
            start, effect_result, observed=default if observed is None else observed
        )

    async def _read(
        self, upstream: Upstream, inbound: UpstreamRequest
    ) -> list[dict[str, Any]] | Response:
        """The records a read lists (or one record / a 404 as the answer itself)."""
        path = inbound.path.rstrip("/") or "/"
        if path.endswith("/search"):
            return await self._search(upstream, path.removesuffix("/search") or "/", inbound)
        here = await self.runtime.db(lambda store: store.objects(upstream.host, path))
        parent, _, last = path.rpartition("/")
        if not here and parent:
            siblings = await self.runtime.db(lambda store: store.objects(upstream.host, parent))
            if siblings:
                match = [row.document for row in siblings if row.id == last]
                if match:
                    return JSONResponse(match[-1])
                return JSONResponse({"error": "not_found", "message": f"no record {last}"}, 404)
        return matching([row.document for row in here], inbound.query)

    async def _search(
        self, upstream: Upstream, collection: str, inbound: UpstreamRequest
    ) -> list[dict[str, Any]]:
        rows = await self.runtime.db(lambda store: store.objects(upstream.host, collection))
        documents = [row.document for row in rows]
        return matching(documents, inbound.query, _eq_filters(inbound.params))


def _idempotency_key(inbound: UpstreamRequest, header: str | None) -> str | None:
    """The request's value of ``header`` (None: no header named, or none sent)."""
    return (inbound.headers.get(header.lower()) or None) if header else None


def stored_answer(answer: Answer) -> StoredResponse:
    """A personality's answer as bytes; no body (204, 202) when it says None."""
    if answer.body is None:
        return StoredResponse(answer.status, [], b"")
    body = json.dumps(answer.body, separators=(",", ":")).encode()
    return StoredResponse(answer.status, [("content-type", "application/json")], body)


def _answer(answer: Answer) -> Response:
    return _to_response(stored_answer(answer))


def _effect(upstream: Upstream, collections: tuple[Collection, ...], target: Target) -> str:
    """A commit's effect kind: the manifest's `effect`; else `record` where the host keeps one
    kind of record; else the kind it is (`contacts` and `mail` on SendGrid, `deals` and
    `contacts` on HubSpot): a contact and its welcome mail are two effects once each, not one
    effect twice."""
    if upstream.effect:
        return upstream.effect
    if len(collections) == 1 and not collections[0].per_path:
        return "record"
    return target.kind.removeprefix("c:").rstrip("/").rsplit("/", 1)[-1]


def _not_found(record_id: str) -> Response:
    return JSONResponse({"error": "not_found", "message": f"no record {record_id}"}, 404)


def _listing(records: list[dict[str, Any]]) -> Response:
    return JSONResponse({"results": records, "has_more": False})


def _eq_filters(params: Any) -> list[tuple[str, str]]:
    """The EQ filters of a HubSpot-style search body:
    {"filterGroups": [{"filters": [{"propertyName": p, "operator": "EQ", "value": v}]}]}."""
    groups = params.get("filterGroups") if isinstance(params, dict) else None
    found = []
    for group in groups if isinstance(groups, list) else []:
        filters = group.get("filters") if isinstance(group, dict) else None
        for item in filters if isinstance(filters, list) else []:
            if isinstance(item, dict) and item.get("operator", "EQ") == "EQ":
                found.append((str(item.get("propertyName")), text(item.get("value"))))
    return found


def render(template: RouteTemplate, fields: dict[str, Any]) -> StoredResponse:
    """The template's body with placeholders filled; `"{{x}}"` alone keeps x's JSON type."""

    def fill(node: Any) -> Any:
        if isinstance(node, dict):
            return {fill(name): fill(value) for name, value in node.items()}
        if isinstance(node, list):
            return [fill(item) for item in node]
        if not isinstance(node, str):
            return node
        whole = _PLACEHOLDER.fullmatch(node.strip())
        if whole is not None:
            return _lookup(fields, whole.group(1))
        return _PLACEHOLDER.sub(lambda m: text(_lookup(fields, m.group(1))), node)

    body = json.dumps(fill(template.parsed_body()), separators=(",", ":")).encode()
    return StoredResponse(template.status, [("content-type", "application/json")], body)


def _fields(params: Any) -> dict[str, Any]:
    return dict(params) if isinstance(params, dict) else {}


def _lookup(fields: dict[str, Any], name: str) -> Any:
    return fields[name] if name in fields else descend(fields, name.split("."))


def _to_response(stored: StoredResponse) -> Response:
    return Response(stored.body, stored.status, headers=dict(stored.headers))
