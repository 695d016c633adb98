"""Routing by Host header: a host configured as an upstream goes to its fake, every other host
(loopback, `provider`, a container name) to the bundled JSON API, unchanged.

The intercepting proxy keeps the original `Host: api.stripe.com` when it forwards to the
provider, so the Host header (port stripped) names the upstream the workflow meant to call.
"""

from __future__ import annotations

from typing import Any, Protocol

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from ...upstreams import Upstream
from ..pipeline import SEEDING
from ..problems import ProblemError
from ..runtime import ProviderRuntime
from ..triggers import TRIGGERS
from .inbound import UnreadableBody, read_upstream_request
from .record import RecordFake
from .seeding import seed_request
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


def http_fakes(runtime: ProviderRuntime) -> dict[str, HttpFake]:
    """The fakes that answer HTTP, by the name an Upstream gives (`fake`)."""
    return {"stripe": StripeFake(runtime), "record": RecordFake(runtime)}


async def seed(
    runtime: ProviderRuntime, host: str, method: str, path: str, body: dict[str, Any]
) -> Response:
    """Serve a seed (`seeding`) on the fake of `host`; its answer, as the workflow's would be."""
    upstream = runtime.upstreams.get(host_of(host))
    fakes = http_fakes(runtime)
    if upstream is None or upstream.fake not in fakes:
        raise ProblemError(
            400,
            "no-such-upstream",
            "No HTTP fake for this host",
            f"{host!r} is not an upstream with an HTTP fake here (set: "
            f"{', '.join(sorted(runtime.upstreams)) or 'none'}); seed a host of the "
            "manifest's upstreams",
        )
    token = SEEDING.set(True)
    try:
        return await fakes[upstream.fake].handle(seed_request(host, method, path, body), upstream)
    finally:
        SEEDING.reset(token)


class UpstreamHostRouter:
    """ASGI middleware in front of the bundled public app."""

    def __init__(self, app: ASGIApp, runtime: ProviderRuntime) -> None:
        self.app = app
        self.runtime = runtime
        self.fakes = http_fakes(runtime)

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
