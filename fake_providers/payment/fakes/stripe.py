"""The `stripe` fake: the part of Stripe's API n8n's Stripe node and HTTP Request nodes use.

POST /v1/{customers,payment_intents,charges,refunds,products,prices,payment_links} creates,
POST /v1/payment_intents/{id}/confirm confirms, POST /v1/<kind>/{id} updates;
GET /v1/<kind>/{id} retrieves, GET /v1/<kind> lists, GET /v1/<kind>/search?query=... searches.
Creations and confirms are commits (effect kind: the object name, or the Upstream's `effect`)
unless the Upstream names other `effects` routes; updates are commits only if named there.
Every POST goes through the shared pipeline, so Stripe's idempotency (replay, 400 mismatch,
409 in flight), barriers and the fault plan apply as on the bundled API. A refund and a confirm
are decided again as they settle (`stripe_objects.RECHECKS`, `recheck_confirm`): a charge
refunded in full, or an intent confirmed, refuses the next one, also when both came at once.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ...upstreams import Upstream
from ..keys import InvalidIdempotencyKey, parse_idempotency_key
from ..kinds import Outcome
from ..pipeline import EffectPipeline, EffectResult, json_response
from ..problems import ProblemError
from ..runtime import ProviderRuntime
from ..store import LedgerStore, ObjectRow, StoredResponse
from .collections import stored
from .explain import attempt_start
from .inbound import UnreadableBody, UpstreamRequest, nest_form, read_upstream_request
from .seeding import seeded_id
from .stripe_errors import (
    STRIPE_ANSWERS,
    StripeError,
    check_api_key,
    invalid_request,
    missing_object,
)
from .stripe_objects import (
    CONFIRM_EFFECT,
    KINDS,
    RECHECKS,
    Builder,
    Document,
    Recheck,
    StripeKind,
    not_found_url,
    plan_confirm,
    plan_create,
    plan_update,
    recheck_confirm,
    references,
)
from .stripe_search import INDEX_LAG_S, parse_query

_LIST_CONTROL_PARAMS = frozenset({"limit", "starting_after", "ending_before", "expand", "created"})


class StripeFake:
    def __init__(self, runtime: ProviderRuntime) -> None:
        self.runtime = runtime
        self.pipeline = EffectPipeline(runtime, STRIPE_ANSWERS)

    async def handle(self, request: Request, upstream: Upstream) -> Response:
        received_at = self.runtime.clock()
        try:
            check_api_key(request.headers.get("authorization"))
            try:
                inbound = await read_upstream_request(request, self.runtime.config.max_body_bytes)
            except UnreadableBody as exc:
                raise invalid_request("parameter_invalid_string", str(exc)) from exc
            except ProblemError as exc:
                raise invalid_request("body_too_large", exc.detail) from exc
            return await self._route(inbound, upstream, received_at)
        except StripeError as error:
            return error.to_response()

    async def _route(
        self, inbound: UpstreamRequest, upstream: Upstream, received_at: float
    ) -> Response:
        segments = inbound.path.strip("/").split("/")
        kind = KINDS.get(segments[1]) if len(segments) >= 2 and segments[0] == "v1" else None
        if kind is None:
            raise not_found_url(inbound.method, inbound.path)
        rest, method = segments[2:], inbound.method
        if method == "GET" and not rest:
            return await self._list(upstream, kind, nest_form(inbound.query))
        if method == "GET" and rest == ["search"]:
            return await self._search(upstream, kind, nest_form(inbound.query))
        if method == "GET" and len(rest) == 1:
            return JSONResponse(await self._object(upstream, kind.object, rest[0]))
        if method != "POST" or len(rest) > 2:
            raise not_found_url(method, inbound.path)
        params = inbound.params
        if not isinstance(params, dict):
            raise invalid_request(
                "parameter_invalid_string", "send parameters form-encoded (or as a JSON object)"
            )
        if not rest:
            related = {
                object_id: await self._object(upstream, name, object_id, param)
                for name, object_id, param in references(kind, params)
            }
            build = plan_create(kind, params, related)
            effect, default_observed = kind.object, True
            recheck = RECHECKS.get(kind.collection)
        elif rest[1:] == ["confirm"] and kind.collection == "payment_intents":
            build = plan_confirm(await self._object(upstream, kind.object, rest[0]), params)
            effect, default_observed = CONFIRM_EFFECT, True
            recheck = recheck_confirm
            effect_index = 1  # the intent is not new: the charge it made is the effect
        elif len(rest) == 1:
            build = plan_update(await self._object(upstream, kind.object, rest[0]), params)
            effect, default_observed = f"{kind.object}_update", False
            recheck = None
        else:
            raise not_found_url(method, inbound.path)
        observed = upstream.is_effect_route(method, inbound.path)
        if effect != CONFIRM_EFFECT:
            effect_index = 0
        return await self._process(
            inbound,
            upstream,
            build,
            recheck,
            effect=upstream.effect or effect,
            effect_index=effect_index,
            observed=default_observed if observed is None else observed,
            received_at=received_at,
        )

    async def _process(
        self,
        inbound: UpstreamRequest,
        upstream: Upstream,
        build: Builder,
        recheck: Recheck | None,
        *,
        effect: str,
        effect_index: int,
        observed: bool,
        received_at: float,
    ) -> Response:
        try:
            sent = inbound.headers.get("idempotency-key")
            key = parse_idempotency_key([] if sent is None else [sent])
        except InvalidIdempotencyKey as exc:
            raise invalid_request("idempotency_key_invalid", str(exc)) from exc
        start = attempt_start(effect, key, upstream.reference, inbound, received_at)

        given_id = seeded_id(inbound.params)

        def effect_result(now: float) -> EffectResult:
            documents = build(now)
            if given_id is not None:
                documents[0] = {**documents[0], "id": str(given_id)}
            return EffectResult(
                str(documents[effect_index]["id"]),
                json_response(200, documents[0]),
                commits=True,
                outcome=Outcome.COMMITTED,
                objects=_rows(upstream, documents, now),
                settle_check=None if recheck is None else partial(_rechecked, upstream, recheck),
            )

        return await self.pipeline.run(start, effect_result, observed=observed)

    async def _object(
        self, upstream: Upstream, object_name: str, object_id: str, param: str = "id"
    ) -> Document:
        rows = await self.runtime.db(
            lambda store: store.objects(upstream.host, object_name, object_id)
        )
        if not rows:
            raise missing_object(object_name, object_id, param)
        return rows[0].document

    async def _documents(
        self, upstream: Upstream, kind: StripeKind, index_lag_s: float | None = None
    ) -> list[Document]:
        """Newest first, as Stripe lists; with `index_lag_s`, those its search sees."""
        documents = await stored(self.runtime, upstream.host, kind.object, index_lag_s)
        return documents[::-1]

    async def _list(self, upstream: Upstream, kind: StripeKind, query: Document) -> Response:
        filters = {k: v for k, v in query.items() if k not in _LIST_CONTROL_PARAMS}
        documents = [
            doc
            for doc in await self._documents(upstream, kind)
            if all(str(doc.get(name)) == str(value) for name, value in filters.items())
        ]
        limit = _limit(query)
        return JSONResponse(
            {
                "object": "list",
                "data": documents[:limit],
                "has_more": len(documents) > limit,
                "url": f"/v1/{kind.collection}",
            }
        )

    async def _search(self, upstream: Upstream, kind: StripeKind, query: Document) -> Response:
        text = query.get("query")
        if not isinstance(text, str) or not text.strip():
            raise invalid_request(
                "parameter_missing", "Missing required param: query.", param="query"
            )
        matches = parse_query(text.strip())
        searchable = await self._documents(upstream, kind, INDEX_LAG_S)
        documents = [doc for doc in searchable if matches(doc)]
        limit = _limit(query)
        return JSONResponse(
            {
                "object": "search_result",
                "data": documents[:limit],
                "has_more": len(documents) > limit,
                "next_page": None,
                "url": f"/v1/{kind.collection}/search",
            }
        )


def _rows(upstream: Upstream, documents: list[Document], now: float) -> list[ObjectRow]:
    return [ObjectRow(upstream.host, str(d["object"]), str(d["id"]), d, now) for d in documents]


def _rechecked(
    upstream: Upstream, recheck: Recheck, store: LedgerStore, result: EffectResult
) -> EffectResult | StoredResponse:
    """The write decided again against what is stored as it settles (see `Recheck`)."""

    def lookup(object_name: str, object_id: str) -> Document | None:
        rows = store.objects(upstream.host, object_name, object_id)
        return rows[0].document if rows else None

    try:
        documents = recheck(lookup, [row.document for row in result.objects])
    except StripeError as error:
        return error.stored()
    now = result.objects[0].created_at
    return replace(
        result, response=json_response(200, documents[0]), objects=_rows(upstream, documents, now)
    )


def _limit(query: Document) -> int:
    raw: Any = query.get("limit", "10")
    if not str(raw).isdigit() or not 1 <= int(raw) <= 100:
        raise invalid_request(
            "parameter_invalid_integer", "limit must be an integer from 1 to 100", param="limit"
        )
    return int(raw)
