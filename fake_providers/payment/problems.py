"""RFC 7807 problem+json answers, and the handlers that turn framework errors into them.

Every 4xx the provider gives (and the 5xx it gives on purpose) is a problem document, so the
harness and n8n see one error shape.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from ..errors import FakeProviderError

PROBLEM_MEDIA_TYPE = "application/problem+json"
PROBLEM_TYPE_BASE = "https://n8n-chaos.invalid/problems/"


def problem_body(status: int, slug: str, title: str, detail: str, **extra: Any) -> bytes:
    document: dict[str, Any] = {
        "type": PROBLEM_TYPE_BASE + slug,
        "title": title,
        "status": status,
        "detail": detail,
        **extra,
    }
    return json.dumps(document, separators=(",", ":"), sort_keys=True).encode()


def problem_response(
    status: int,
    slug: str,
    title: str,
    detail: str,
    *,
    headers: Mapping[str, str] | None = None,
    **extra: Any,
) -> Response:
    return Response(
        content=problem_body(status, slug, title, detail, **extra),
        status_code=status,
        media_type=PROBLEM_MEDIA_TYPE,
        headers=dict(headers or {}),
    )


class ProblemError(FakeProviderError):
    """Raised inside a handler to answer with a problem document."""

    def __init__(self, status: int, slug: str, title: str, detail: str, **extra: Any) -> None:
        super().__init__(detail)
        self.status = status
        self.slug = slug
        self.title = title
        self.detail = detail
        self.extra = extra

    def to_response(self) -> Response:
        return problem_response(self.status, self.slug, self.title, self.detail, **self.extra)


def install_problem_handlers(app: FastAPI) -> None:
    """Make routing errors, query-parameter errors and ProblemError answer as problem+json."""

    async def on_problem(_: Request, exc: Exception) -> Response:
        assert isinstance(exc, ProblemError)
        return exc.to_response()

    async def on_http_error(_: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        return problem_response(
            exc.status_code,
            f"http-{exc.status_code}",
            str(exc.detail),
            str(exc.detail),
            headers=exc.headers,
        )

    async def on_validation_error(_: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        errors = [
            {"loc": list(error.get("loc", ())), "msg": str(error.get("msg", ""))}
            for error in exc.errors()
        ]
        return problem_response(
            400,
            "invalid-request",
            "Invalid request",
            "request parameters are invalid",
            errors=errors,
        )

    app.add_exception_handler(ProblemError, on_problem)
    app.add_exception_handler(StarletteHTTPException, on_http_error)
    app.add_exception_handler(RequestValidationError, on_validation_error)
