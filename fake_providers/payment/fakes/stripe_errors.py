"""Stripe's error body `{"error": {"type", "code", "message", ...}}`, the pipeline's answers
in that shape, and the API-key check (any `sk_test_`/`rk_test_` key, Bearer or Basic)."""

from __future__ import annotations

import base64
import json
from typing import Any

from starlette.responses import Response

from fake_providers.errors import FakeProviderError

from ..pipeline import PipelineAnswers
from ..store import StoredResponse

TEST_KEY_PREFIXES = ("sk_test_", "rk_test_")


class StripeError(FakeProviderError):
    def __init__(
        self,
        status: int,
        error_type: str,
        code: str,
        message: str,
        *,
        param: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.document: dict[str, Any] = {"type": error_type, "code": code, "message": message}
        if param is not None:
            self.document["param"] = param

    def body(self) -> bytes:
        return json.dumps({"error": self.document}, separators=(",", ":")).encode()

    def to_response(self) -> Response:
        return Response(self.body(), self.status, media_type="application/json")

    def stored(self) -> StoredResponse:
        return StoredResponse(self.status, [("content-type", "application/json")], self.body())


def invalid_request(code: str, message: str, *, param: str | None = None) -> StripeError:
    return StripeError(400, "invalid_request_error", code, message, param=param)


def missing_object(object_name: str, object_id: str, param: str = "id") -> StripeError:
    return StripeError(
        404,
        "invalid_request_error",
        "resource_missing",
        f"No such {object_name}: '{object_id}'",
        param=param,
    )


def check_api_key(authorization: str | None) -> None:
    if not authorization:
        raise StripeError(
            401,
            "invalid_request_error",
            "api_key_missing",
            "You did not provide an API key. You need to provide your API key in the"
            " Authorization header, using Bearer auth (e.g. 'Authorization: Bearer"
            " YOUR_SECRET_KEY').",
        )
    scheme, _, credentials = authorization.partition(" ")
    key = credentials.strip()
    if scheme.lower() == "basic":
        try:
            key = base64.b64decode(key).decode().partition(":")[0]
        except ValueError:
            key = ""
    elif scheme.lower() != "bearer":
        key = ""
    if not key.startswith(TEST_KEY_PREFIXES):
        shown = key[:8] + "*" * max(0, len(key) - 12) + key[-4:] if len(key) > 12 else "***"
        raise StripeError(
            401,
            "invalid_request_error",
            "api_key_invalid",
            f"Invalid API Key provided: {shown} (n8n-chaos fakes take only sk_test_ keys)",
        )


STRIPE_ANSWERS = PipelineAnswers(
    mismatch=lambda: StripeError(
        400,
        "idempotency_error",
        "idempotency_key_reused",
        "Keys for idempotent requests can only be used with the same parameters they were"
        " first used with. Try using a key other than this one if you meant to execute a"
        " different request.",
    ).to_response(),
    in_flight=lambda: StripeError(
        409,
        "invalid_request_error",
        "idempotency_key_in_use",
        "There is currently another in-progress request using this Idempotent Key (that"
        " probably means you submitted twice, and the other request is still going"
        " through). Please retry that request later.",
    ).to_response(),
    error_before_commit=lambda: StripeError(
        500, "api_error", "api_error", "injected fault: error_before_commit"
    ).to_response(),
    rate_limited=lambda: StripeError(
        429,
        "invalid_request_error",
        "rate_limit",
        "Too many requests hit the API too quickly (injected fault: rate_limited).",
    ).to_response(),
    error_after_commit=StripeError(
        500, "api_error", "api_error", "injected fault: commit_then_error"
    ).stored(),
    reset=lambda: StripeError(
        503, "api_error", "provider_reset", "the fake was reset while this request was in flight"
    ).to_response(),
)
