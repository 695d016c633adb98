"""Request bodies of the public API: reading with a size cap, validation, fingerprints.

Bodies are read and validated by hand (not by FastAPI parameters) so that every bad input gets
a 400/413/415 problem document the provider chooses, and 422 stays reserved for the
idempotency mismatch the IETF draft gives it.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from starlette.requests import Request

from .problems import ProblemError

_NO_CONTROL_CHARS = r"^[^\x00-\x1f\x7f]+$"
ModelT = TypeVar("ModelT", bound=BaseModel)


class ChargeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    amount: int = Field(ge=1, le=99_999_999, description="Amount in minor units (cents).")
    currency: str = Field(pattern=r"^[A-Za-z]{3}$", description="ISO 4217 code.")
    reference: str = Field(
        min_length=1,
        max_length=255,
        pattern=_NO_CONTROL_CHARS,
        description="The caller's business reference; commits are counted per reference.",
    )
    description: str | None = Field(default=None, max_length=1000)
    source: str = Field(
        default="tok_visa",
        min_length=1,
        max_length=64,
        pattern=r"^[A-Za-z0-9_]+$",
        description="Payment source; `tok_chargeDeclined` is declined with a stored 402.",
    )

    @field_validator("currency")
    @classmethod
    def _lower_currency(cls, value: str) -> str:
        return value.lower()


class EmailRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    to: str = Field(min_length=3, max_length=254, pattern=r"^[^@\s]+@[^@\s]+$")
    subject: str = Field(min_length=1, max_length=200, pattern=_NO_CONTROL_CHARS)
    body: str = Field(default="", max_length=10_000)
    reference: str = Field(min_length=1, max_length=255, pattern=_NO_CONTROL_CHARS)


def openapi_json_body(model: type[BaseModel]) -> dict[str, Any]:
    """An `openapi_extra` fragment documenting a hand-validated JSON body."""
    return {
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": model.model_json_schema()}},
        }
    }


async def read_json_body(request: Request, model: type[ModelT], max_bytes: int) -> ModelT:
    _require_json_media_type(request)
    raw = await read_capped(request, max_bytes)
    try:
        document = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        # ValueError covers bad JSON, bad UTF-8 and integers beyond Python's digit limit.
        raise ProblemError(400, "malformed-json", "Malformed JSON", str(exc)[:200]) from exc
    try:
        return model.model_validate(document)
    except ValidationError as exc:
        errors = [
            {"loc": [str(part) for part in error["loc"]], "msg": error["msg"]}
            for error in exc.errors(include_url=False, include_context=False, include_input=False)
        ]
        raise ProblemError(
            400,
            "invalid-body",
            "Invalid request body",
            "the body failed validation",
            errors=errors,
        ) from exc


def fingerprint(method: str, path: str, body: BaseModel) -> str:
    """Stripe compares endpoint and parameters, not bytes: reformatted JSON is the same request."""
    canonical = json.dumps(body.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(f"{method} {path}\n{canonical}".encode()).hexdigest()


def _require_json_media_type(request: Request) -> None:
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type != "application/json" and not media_type.endswith("+json"):
        raise ProblemError(
            415,
            "unsupported-media-type",
            "Unsupported media type",
            "send the body as application/json",
        )


async def read_capped(request: Request, max_bytes: int) -> bytes:
    too_large = ProblemError(
        413, "body-too-large", "Request body too large", f"the limit is {max_bytes} bytes"
    )
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise too_large
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise too_large
        chunks.append(chunk)
    return b"".join(chunks)
