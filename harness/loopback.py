"""Internal: HTTP to the parts of the stack. Every address is plain HTTP on 127.0.0.1, so a client
skips TLS set-up (about 35 ms a client, 250 ms the first in a process: most of an attached
run's start) and ignores proxy settings from the environment (an ``HTTP_PROXY`` must never
carry the stack's traffic off the machine)."""

from __future__ import annotations

import ssl
from typing import Any

import httpx

# Our servers (uvicorn, n8n's Node) close an idle kept-alive connection after 5 s; a client
# that reuses it at that instant gets "Server disconnected without sending a response"
# (seen in CI on the provider's control port). Dropping idle connections much sooner leaves
# no such instant.
LIMITS = httpx.Limits(keepalive_expiry=1.0)
# One context for every client: ``verify=False`` makes httpx build a fresh SSLContext per
# client (8 ms of CPU on a loaded machine, against 0.1 ms; readiness polls make a client
# each). Nothing here speaks TLS: it is never used, only never rebuilt.
_NO_TLS = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
_NO_TLS.check_hostname = False
_NO_TLS.verify_mode = ssl.CERT_NONE


def client(**kwargs: Any) -> httpx.Client:
    """An ``httpx.Client`` for loopback addresses (``base_url``, ``timeout``, ``headers``...)."""
    return httpx.Client(verify=_NO_TLS, trust_env=False, limits=LIMITS, **kwargs)


def request(method: str, url: str, **kwargs: Any) -> httpx.Response:
    """One request with a short-lived loopback client (``httpx.request``'s arguments)."""
    with client() as http:
        return http.request(method, url, **kwargs)


def get(url: str, **kwargs: Any) -> httpx.Response:
    return request("GET", url, **kwargs)


def post(url: str, **kwargs: Any) -> httpx.Response:
    return request("POST", url, **kwargs)


def answers_ok(url: str, timeout_s: float = 2.0) -> bool:
    """A readiness probe: ``GET url`` answers 200 (a refused connection raises: not yet)."""
    return get(url, timeout=timeout_s).status_code == 200
