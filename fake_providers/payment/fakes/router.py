"""Routing by Host header: a host configured as an upstream goes to its fake, every other host
(loopback, `provider`, a container name) to the bundled JSON API, unchanged.

The intercepting proxy keeps the original `Host: api.stripe.com` when it forwards to the
provider, so the Host header (port stripped) names the upstream the workflow meant to call.
"""

from __future__ import annotations

from typing import Protocol

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from ...upstreams import Upstream
from ..problems import ProblemError
from ..runtime import ProviderRuntime
from ..triggers import TRIGGERS
from .inbound import UnreadableBody, read_upstream_request
from .record import RecordFake
from .stripe import StripeFake

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


class HttpFake(Protocol):
    async def handle(self, request: Request, upstream: Upstream) -> Response: ...


def host_of(header: str) -> str:
    """`api.stripe.com:443` -> `api.stripe.com`; `[::1]:80` -> `::1`; lower-cased."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else header[1:]
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class UpstreamHostRouter:
    """ASGI middleware in front of the bundled public app."""

    def __init__(self, app: ASGIApp, runtime: ProviderRuntime) -> None:
        self.app = app
        self.runtime = runtime
        self.fakes: dict[str, HttpFake] = {
            "stripe": StripeFake(runtime),
            "record": RecordFake(runtime),
        }

    def upstream_for(self, scope: Scope) -> Upstream | None:
        host = host_of(Headers(scope=scope).get("host", ""))
        if host in LOOPBACK_HOSTS:
            return None
        upstream = self.runtime.upstreams.get(host)
        return upstream if upstream is not None and upstream.fake in self.fakes else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        upstream = self.upstream_for(scope) if scope["type"] == "http" else None
        if upstream is None:
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive)
        response = await self._registration(request, upstream)
        if response is None:
            response = await self.fakes[upstream.fake].handle(request, upstream)
        await response(scope, receive, send)

    async def _registration(self, request: Request, upstream: Upstream) -> Response | None:
        """A service trigger's webhook registration on its fake's host, else None."""
        path = request.url.path
        trigger = next(
            (t for t in TRIGGERS.values() if t.fake == upstream.fake and t.owns(path)), None
        )
        if trigger is None:
            return None
        try:
            inbound = await read_upstream_request(request, self.runtime.config.max_body_bytes)
        except (UnreadableBody, ProblemError) as exc:
            return Response(str(exc), status_code=400)
        return await trigger.register(inbound, upstream, self.runtime)
