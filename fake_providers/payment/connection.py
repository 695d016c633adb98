"""Ending a connection with no HTTP response at all, which plain ASGI cannot express.

ASGI gives an app no handle on the socket, and uvicorn answers 500 for an app that returns
without responding. `expose_transport` wraps the whole app and copies uvicorn's transport
(reachable as the owner of the `send` it hands the app) into the scope; `DroppedConnection` is a
response that closes (FIN) or aborts (RST) that transport and then waits until the server has
seen the disconnect, so the server stays silent instead of writing its own 500.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from typing import Any

from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from ..errors import FakeProviderError

TRANSPORT_SCOPE_KEY = "fake_provider.transport"
_DISCONNECT_WAIT_SECONDS = 5.0


class ConnectionDropUnsupported(FakeProviderError):
    """The server running the app does not expose a socket (e.g. an in-process test client)."""


def expose_transport(app: ASGIApp) -> ASGIApp:
    async def with_transport(scope: Scope, receive: Receive, send: Send) -> None:
        owner = getattr(send, "__self__", None)  # uvicorn's per-request cycle object
        transport = getattr(owner, "transport", None)
        if transport is not None:
            scope[TRANSPORT_SCOPE_KEY] = transport
        await app(scope, receive, send)

    return with_transport


class DroppedConnection(Response):
    def __init__(self, *, reset: bool) -> None:
        super().__init__(status_code=599)  # never sent
        self.reset = reset

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        transport: Any = scope.get(TRANSPORT_SCOPE_KEY)
        if transport is None:
            raise ConnectionDropUnsupported("commit_then_close/reset need a real uvicorn socket")
        if self.reset:
            sock = transport.get_extra_info("socket")
            if sock is not None:
                # Linger 0 makes close() send RST instead of FIN.
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            transport.abort()
        else:
            transport.close()
        try:
            async with asyncio.timeout(_DISCONNECT_WAIT_SECONDS):
                while (await receive())["type"] != "http.disconnect":
                    pass
        except TimeoutError:
            pass
