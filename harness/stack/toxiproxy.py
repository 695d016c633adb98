"""A small typed client for the Toxiproxy 2.x HTTP API (tested against v2.12.0).

Toxiproxy is a TCP proxy with an HTTP control API (default port 8474). This module drives
that API with httpx; it neither starts nor stops the server process.

Objects::

    ToxiproxyClient    one server: version(), proxies(), proxy(), create_proxy(),
                       delete_proxy(), populate(), reset(), wait_ready()
    Proxy              one proxy: add_toxic(), update_toxic(), remove_toxic(), toxics(),
                       disable(), enable(), and the context managers toxic() and down()
    Toxic              a frozen snapshot of one toxic as the server reported it

Errors, grouped by cause::

    ToxiproxyError            any failed API call (.status, .message, .method, .path)
    ├─ ToxiproxyUnavailable   server unreachable, or 503 on every attempt (.status None or 503)
    ├─ ToxiproxyNotFound      404: no such proxy or toxic
    └─ ToxiproxyConflict      409: a proxy or toxic with that name already exists

The error classes live in ``harness.errors`` (re-exported here). Any other non-2xx status
raises the base ``ToxiproxyError`` with that status. Passing a value that Toxiproxy would accept
but that makes no sense (a toxicity outside [0, 1]) raises ``ConfigError``, not a
``ToxiproxyError``.

Retries: a request that gets HTTP 503 (Shopify/toxiproxy#500) or a connection-level error is
retried up to ``retries`` more times with a short doubling backoff. A 503 comes from the server's
request timeout handler, so the retried operation *may* already have taken effect: a retried
create can then answer 409 and a retried delete 404.

Behaviour of the server worth knowing (observed on v2.12.0):

* Listen port 0 is resolved when the proxy starts listening, and the real ``host:port`` is
  stored and returned. A proxy created *disabled* keeps ``:0`` until it is enabled.
* ``POST /populate`` compares the stored (resolved) listen address with the requested one, so
  populating a ``:0`` proxy again replaces it and moves it to a new port.
* A new toxic also applies to connections that are already open; disabling a proxy closes them.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal, NotRequired, Self, TypedDict

import httpx

from harness import loopback
from harness.errors import (
    ConfigError,
    ToxiproxyConflict,
    ToxiproxyError,
    ToxiproxyNotFound,
    ToxiproxyUnavailable,
)

__all__ = [
    "Proxy",
    "ProxyConfig",
    "Stream",
    "Toxic",
    "ToxiproxyClient",
    "ToxiproxyConflict",
    "ToxiproxyError",
    "ToxiproxyNotFound",
    "ToxiproxyUnavailable",
]

logger = logging.getLogger(__name__)

Stream = Literal["upstream", "downstream"]
"""``upstream`` is client to server, ``downstream`` server to client (Toxiproxy's default)."""

_RETRYABLE_TRANSPORT_ERRORS: tuple[type[httpx.TransportError], ...] = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.RemoteProtocolError,
    httpx.ReadError,
    httpx.WriteError,
)
_MAX_BACKOFF_S = 1.0
_DEFAULT_LISTEN = "127.0.0.1:0"


class ProxyConfig(TypedDict):
    """One entry of ``populate()``; the same shape as Toxiproxy's ``-config`` JSON file."""

    name: str
    upstream: str
    listen: NotRequired[str]
    enabled: NotRequired[bool]


@dataclass(frozen=True)
class Toxic:
    """One toxic as the server reported it. Attribute units follow Toxiproxy (ms, KB/s, bytes)."""

    name: str
    type: str
    stream: Stream
    toxicity: float
    attributes: dict[str, int | float] = field(default_factory=dict)

    @classmethod
    def _from_json(cls, data: Mapping[str, Any]) -> Toxic:
        stream = data.get("stream", "downstream")
        return cls(
            name=str(data["name"]),
            type=str(data["type"]),
            stream="upstream" if stream == "upstream" else "downstream",
            toxicity=float(data.get("toxicity", 1.0)),
            attributes=dict(data.get("attributes") or {}),
        )


@contextmanager
def _undo_on_exit(undo: Callable[[], None], what: str) -> Iterator[None]:
    """Run ``undo`` after the block. If the block raised, an undo failure is logged and the
    block's own exception propagates; a failing undo never hides the root cause."""
    try:
        yield
    except BaseException:
        try:
            undo()
        except Exception:
            logger.exception("toxiproxy: could not %s", what)
        raise
    undo()


def _check_toxicity(toxicity: float) -> None:
    # The server stores any float without complaint (3.0 is accepted as-is).
    if not 0.0 <= toxicity <= 1.0:
        raise ConfigError(f"toxicity must be within [0, 1], got {toxicity!r}")


class Proxy:
    """A handle on one proxy. Fields reflect the last server answer about it."""

    __slots__ = ("_client", "enabled", "listen", "name", "upstream")

    def __init__(
        self, client: ToxiproxyClient, *, name: str, listen: str, upstream: str, enabled: bool
    ) -> None:
        self._client = client
        self.name = name
        self.listen = listen
        self.upstream = upstream
        self.enabled = enabled

    @classmethod
    def _from_json(cls, client: ToxiproxyClient, data: Mapping[str, Any]) -> Proxy:
        return cls(
            client,
            name=str(data["name"]),
            listen=str(data["listen"]),
            upstream=str(data["upstream"]),
            enabled=bool(data.get("enabled", True)),
        )

    def __repr__(self) -> str:
        return (
            f"Proxy(name={self.name!r}, listen={self.listen!r}, "
            f"upstream={self.upstream!r}, enabled={self.enabled!r})"
        )

    @property
    def listen_host(self) -> str:
        """Host part of ``listen`` without IPv6 brackets (``[::]:1234`` gives ``::``)."""
        host, _, _ = self.listen.rpartition(":")
        return host.removeprefix("[").removesuffix("]")

    @property
    def listen_port(self) -> int:
        """Port part of ``listen``; 0 only for a proxy created disabled with port 0."""
        return int(self.listen.rpartition(":")[2])

    @property
    def _path(self) -> str:
        return f"/proxies/{self.name}"

    # -- toxics ---------------------------------------------------------------------------

    def add_toxic(
        self,
        type: str,
        *,
        stream: Stream = "downstream",
        toxicity: float = 1.0,
        name: str | None = None,
        **attributes: int | float,
    ) -> Toxic:
        """Add a toxic, e.g. ``add_toxic("latency", latency=500, jitter=50)``.

        ``name`` defaults on the server to ``<type>_<stream>``. The toxic also applies to
        connections that are already open.
        """
        _check_toxicity(toxicity)
        body: dict[str, Any] = {
            "type": type,
            "stream": stream,
            "toxicity": toxicity,
            "attributes": attributes,
        }
        if name is not None:
            body["name"] = name
        return Toxic._from_json(self._client._call("POST", f"{self._path}/toxics", body))

    def update_toxic(
        self, name: str, *, toxicity: float | None = None, **attributes: int | float
    ) -> Toxic:
        """Change a toxic in place; attributes not given keep their value.

        The stream of a toxic cannot be changed (the server ignores it); remove and re-add.
        """
        body: dict[str, Any] = {}
        if toxicity is not None:
            _check_toxicity(toxicity)
            body["toxicity"] = toxicity
        if attributes:
            body["attributes"] = attributes
        return Toxic._from_json(self._client._call("PATCH", f"{self._path}/toxics/{name}", body))

    def remove_toxic(self, name: str) -> None:
        self._client._call("DELETE", f"{self._path}/toxics/{name}")

    def toxics(self) -> list[Toxic]:
        data = self._client._call("GET", f"{self._path}/toxics")
        return [Toxic._from_json(t) for t in data or []]

    @contextmanager
    def toxic(
        self,
        type: str,
        *,
        stream: Stream = "downstream",
        toxicity: float = 1.0,
        name: str | None = None,
        **attributes: int | float,
    ) -> Iterator[Toxic]:
        """Add a toxic for the duration of the block; it is removed on exit, also on error.

        A toxic that is already gone on exit (e.g. after ``reset()``) is not an error.
        """
        added = self.add_toxic(type, stream=stream, toxicity=toxicity, name=name, **attributes)

        def remove() -> None:
            with suppress(ToxiproxyNotFound):
                self.remove_toxic(added.name)

        with _undo_on_exit(remove, f"remove toxic {added.name!r} from proxy {self.name!r}"):
            yield added

    @contextmanager
    def down(self) -> Iterator[Proxy]:
        """Disable the proxy (clients get connection refused) for the block, then re-enable."""
        self.disable()
        with _undo_on_exit(self.enable, f"re-enable proxy {self.name!r}"):
            yield self

    # -- enable / disable -------------------------------------------------------------------

    def disable(self) -> None:
        """Stop listening and close open connections; new clients get connection refused."""
        self._set_enabled(False)

    def enable(self) -> None:
        self._set_enabled(True)

    def _set_enabled(self, enabled: bool) -> None:
        data = self._client._call("PATCH", self._path, {"enabled": enabled})
        self.listen = str(data["listen"])
        self.enabled = bool(data["enabled"])


class ToxiproxyClient:
    """Client for one Toxiproxy server, e.g. ``ToxiproxyClient("http://127.0.0.1:8474")``."""

    def __init__(
        self,
        base_url: str,
        timeout: float = 5.0,
        *,
        retries: int = 2,
        backoff_s: float = 0.1,
    ) -> None:
        if retries < 0 or backoff_s < 0:
            raise ConfigError("retries and backoff_s must not be negative")
        self.base_url = base_url.rstrip("/")
        self._retries = retries
        self._backoff_s = backoff_s
        self._http = loopback.client(base_url=self.base_url, timeout=timeout)

    def __repr__(self) -> str:
        return f"ToxiproxyClient({self.base_url!r})"

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def wait_ready(self, deadline_s: float, *, poll_s: float = 0.05) -> str:
        """Poll ``GET /version`` until it answers or ``deadline_s`` seconds pass.

        Returns the version string; raises ``ToxiproxyUnavailable`` on expiry.
        """
        start = time.monotonic()
        last: ToxiproxyError | None = None
        while True:
            try:
                return self._version(retries=0)
            except ToxiproxyUnavailable as exc:
                last = exc
            elapsed = time.monotonic() - start
            if elapsed >= deadline_s:
                raise ToxiproxyUnavailable(
                    f"not ready after {elapsed:.2f}s (deadline {deadline_s}s): {last}",
                    status=last.status,
                    method="GET",
                    path="/version",
                ) from last
            time.sleep(min(poll_s, max(0.0, deadline_s - elapsed)))

    # -- server ------------------------------------------------------------------------------

    def version(self) -> str:
        """The server version, e.g. ``"2.12.0"`` (``"git"`` for a plain ``go install``)."""
        return self._version(retries=self._retries)

    def _version(self, *, retries: int) -> str:
        data = self._call("GET", "/version", retries=retries)
        if isinstance(data, Mapping):  # {"version": ...} on 2.12; older servers may send text
            return str(data.get("version", ""))
        return str(data).strip()

    def reset(self, keep: tuple[str, str] | None = None) -> None:
        """Re-enable every proxy and remove every toxic (``POST /reset``); ``keep``, a
        (proxy, toxic) pair, stays in place (its proxy is enabled like the others)."""
        if keep is None:
            self._call("POST", "/reset")
            return
        for name, proxy in (self._call("GET", "/proxies") or {}).items():
            if not proxy.get("enabled", True):
                self._call("PATCH", f"/proxies/{name}", {"enabled": True})
            for toxic in proxy.get("toxics") or []:
                if (name, toxic["name"]) != keep:
                    self._call("DELETE", f"/proxies/{name}/toxics/{toxic['name']}")

    # -- proxies -----------------------------------------------------------------------------

    def proxies(self) -> dict[str, Proxy]:
        data = self._call("GET", "/proxies")
        return {name: Proxy._from_json(self, p) for name, p in (data or {}).items()}

    def proxy(self, name: str) -> Proxy:
        return Proxy._from_json(self, self._call("GET", f"/proxies/{name}"))

    def create_proxy(
        self, name: str, upstream: str, listen: str = _DEFAULT_LISTEN, *, enabled: bool = True
    ) -> Proxy:
        """Create a proxy; with port 0 the returned ``Proxy.listen`` has the real port."""
        body = {"name": name, "upstream": upstream, "listen": listen, "enabled": enabled}
        return Proxy._from_json(self, self._call("POST", "/proxies", body))

    def delete_proxy(self, name: str) -> None:
        self._call("DELETE", f"/proxies/{name}")

    def populate(self, configs: Iterable[ProxyConfig]) -> list[Proxy]:
        """Create or replace proxies in one call (``POST /populate``).

        A config without ``listen`` gets ``127.0.0.1:0`` as in ``create_proxy`` (the server's
        own default is every interface). Proxies whose listen and upstream already match are
        left alone, so pass the resolved ``listen`` to keep a port-0 proxy in place. The server
        validates the whole list before changing anything.
        """
        body = [{"listen": _DEFAULT_LISTEN, **config} for config in configs]
        data = self._call("POST", "/populate", body)
        return [Proxy._from_json(self, p) for p in (data or {}).get("proxies") or []]

    # -- transport ---------------------------------------------------------------------------

    def _call(
        self, method: str, path: str, body: object = None, *, retries: int | None = None
    ) -> Any:
        """Send one API request, retrying 503 and connection errors; return decoded JSON."""
        attempts = 1 + (self._retries if retries is None else retries)
        content = None if body is None else json.dumps(body).encode()
        headers = {} if body is None else {"Content-Type": "application/json"}
        for attempt in range(attempts):
            last_try = attempt == attempts - 1
            try:
                response = self._http.request(method, path, content=content, headers=headers)
            except _RETRYABLE_TRANSPORT_ERRORS as exc:
                if last_try:
                    raise ToxiproxyUnavailable(
                        f"{type(exc).__name__}: {exc}", method=method, path=path
                    ) from exc
            except httpx.TransportError as exc:
                raise ToxiproxyUnavailable(
                    f"{type(exc).__name__}: {exc}", method=method, path=path
                ) from exc
            else:
                if response.status_code != 503 or last_try:
                    return _decode(response, method, path)
            time.sleep(min(self._backoff_s * 2**attempt, _MAX_BACKOFF_S))
        raise AssertionError("unreachable")  # pragma: no cover


def _decode(response: httpx.Response, method: str, path: str) -> Any:
    status = response.status_code
    text = response.text
    try:
        data: Any = json.loads(text) if text.strip() else None
    except ValueError:
        data = text
    if 200 <= status < 300:
        return data
    # Errors are {"error": "...", "status": N} served as text/plain; 404 for an unknown
    # route is the plain text "404 page not found"; a 503 from the timeout handler is empty.
    if isinstance(data, Mapping) and "error" in data:
        message = str(data["error"])
    else:
        message = text.strip() or response.reason_phrase
    error_type: type[ToxiproxyError] = {
        404: ToxiproxyNotFound,
        409: ToxiproxyConflict,
        503: ToxiproxyUnavailable,
    }.get(status, ToxiproxyError)
    raise error_type(message, status=status, method=method, path=path)
