"""The provider's public HTTP API (the port n8n talks to, through the fault proxy).

- POST /v1/charges   idempotent (Idempotency-Key), commits a charge
- GET  /v1/charges   reconciliation by `idempotency_key` or `reference`
- GET  /v1/charges/{id}
- POST /v1/emails    NOT idempotent: every call commits, an Idempotency-Key header is ignored
"""

from __future__ import annotations

import secrets
from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from starlette.responses import JSONResponse, Response

from .keys import MAX_KEY_LENGTH, InvalidIdempotencyKey, parse_idempotency_key
from .kinds import Effect, Outcome
from .payloads import ChargeRequest, EmailRequest, fingerprint, openapi_json_body, read_json_body
from .pipeline import EffectPipeline, EffectResult, json_response
from .problems import PROBLEM_MEDIA_TYPE, ProblemError, problem_body
from .runtime import ProviderRuntime
from .store import AttemptStart, ChargeRow, Row, StoredResponse

DECLINED_SOURCE = "tok_chargeDeclined"
CHARGES_PATH = "/v1/charges"
EMAILS_PATH = "/v1/emails"

_KEY_PARAMETER = {
    "name": "Idempotency-Key",
    "in": "header",
    "description": "Bare token or RFC 8941 quoted string, 1..255 printable ASCII characters.",
    "schema": {
        "type": "string",
        "minLength": 1,
        "maxLength": MAX_KEY_LENGTH,
        "pattern": "^[!#-~][!-~]*$",
    },
}
_CHARGE_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"description": "Invalid body, missing or malformed Idempotency-Key"},
    402: {"description": "Card declined (stored and replayed)"},
    409: {"description": "Same key still in progress"},
    413: {"description": "Body too large"},
    415: {"description": "Body is not JSON"},
    422: {"description": "Same key, different payload"},
    429: {"description": "Injected rate limit"},
}


def build_public_router(runtime: ProviderRuntime) -> APIRouter:
    router = APIRouter()
    pipeline = EffectPipeline(runtime)
    max_body = runtime.config.max_body_bytes

    async def reject(
        effect: Effect,
        key: str | None,
        reference: str | None,
        received_at: float,
        error: ProblemError,
    ) -> Response:
        await runtime.db(
            lambda store: store.record_rejected(
                effect, key, reference, error.status, error.detail, received_at, runtime.clock()
            )
        )
        return error.to_response()

    @router.post(
        CHARGES_PATH,
        openapi_extra={"parameters": [_KEY_PARAMETER], **openapi_json_body(ChargeRequest)},
        responses=_CHARGE_ERRORS,
    )
    async def create_charge(request: Request) -> Response:
        received_at = runtime.clock()
        key: str | None = None
        body: ChargeRequest | None = None
        try:
            key = _idempotency_key(request)
            body = await read_json_body(request, ChargeRequest, max_body)
            if key is None and not runtime.config.lenient:
                raise ProblemError(
                    400,
                    "idempotency-key-missing",
                    "Idempotency-Key required",
                    "POST /v1/charges requires an Idempotency-Key header",
                )
        except ProblemError as error:
            reference = body.reference if body else None
            return await reject(Effect.CHARGE, key, reference, received_at, error)
        start = AttemptStart(
            Effect.CHARGE, key, body.reference, fingerprint("POST", CHARGES_PATH, body), received_at
        )
        return await pipeline.run(start, lambda now: _charge_effect(body, key, now))

    @router.get(CHARGES_PATH)
    async def list_charges(
        idempotency_key: str | None = None,
        reference: str | None = None,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    ) -> JSONResponse:
        rows = await runtime.db(
            lambda store: store.charges(reference=reference, key=idempotency_key, limit=limit)
        )
        data = [_charge_document(row) for row in rows]
        return JSONResponse({"object": "list", "data": data, "has_more": False})

    @router.get(CHARGES_PATH + "/{charge_id}", responses={404: {"description": "No such charge"}})
    async def get_charge(charge_id: str) -> JSONResponse:
        row = await runtime.db(lambda store: store.charge(charge_id))
        if row is None:
            raise ProblemError(404, "no-such-charge", "No such charge", charge_id[:255])
        return JSONResponse(_charge_document(row))

    @router.post(
        EMAILS_PATH,
        openapi_extra=openapi_json_body(EmailRequest),
        responses={400: {"description": "Invalid body"}},
    )
    async def send_email(request: Request) -> Response:
        received_at = runtime.clock()
        try:
            body = await read_json_body(request, EmailRequest, max_body)
        except ProblemError as error:
            return await reject(Effect.EMAIL, None, None, received_at, error)
        start = AttemptStart(
            Effect.EMAIL, None, body.reference, fingerprint("POST", EMAILS_PATH, body), received_at
        )
        return await pipeline.run(start, lambda now: _email_effect(body, now))

    @router.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok", "api": "public"}

    return router


def _idempotency_key(request: Request) -> str | None:
    try:
        return parse_idempotency_key(request.headers.getlist("idempotency-key"))
    except InvalidIdempotencyKey as exc:
        raise ProblemError(
            400, "invalid-idempotency-key", "Invalid Idempotency-Key", str(exc)
        ) from exc


def _charge_effect(body: ChargeRequest, key: str | None, now: float) -> EffectResult:
    declined = body.source == DECLINED_SOURCE
    charge = ChargeRow(
        id="ch_" + secrets.token_hex(12),
        amount=body.amount,
        currency=body.currency,
        reference=body.reference,
        status="failed" if declined else "succeeded",
        description=body.description,
        idempotency_key=key,
        created_at=now,
    )
    document = _charge_document(asdict(charge))
    if declined:
        # A decline is a completed request: stored and replayed, but nothing was committed.
        response = StoredResponse(
            402,
            [("content-type", PROBLEM_MEDIA_TYPE)],
            problem_body(
                402, "card-declined", "Card declined", "the card was declined", charge=document
            ),
        )
        return EffectResult(
            charge.id, response, commits=False, outcome=Outcome.DECLINED_402, charge=charge
        )
    return EffectResult(
        charge.id,
        json_response(200, document),
        commits=True,
        outcome=Outcome.COMMITTED,
        charge=charge,
    )


def _email_effect(body: EmailRequest, now: float) -> EffectResult:
    email_id = "em_" + secrets.token_hex(12)
    document = {
        "id": email_id,
        "object": "email",
        "to": body.to,
        "subject": body.subject,
        "reference": body.reference,
        "status": "sent",
        "created": int(now),
    }
    return EffectResult(
        email_id, json_response(200, document), commits=True, outcome=Outcome.COMMITTED
    )


def _charge_document(row: Row) -> dict[str, Any]:
    return {
        "id": row["id"],
        "object": "charge",
        "amount": row["amount"],
        "currency": row["currency"],
        "reference": row["reference"],
        "status": row["status"],
        "description": row["description"],
        "idempotency_key": row["idempotency_key"],
        "created": int(row["created_at"]),
    }
