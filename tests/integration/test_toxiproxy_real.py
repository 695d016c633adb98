"""The Toxiproxy client against a real toxiproxy-server (v2.12) and a local HTTP upstream.

The binary is found through ``N8N_CHAOS_TOXIPROXY_BIN``, then ``toxiproxy-server`` on PATH,
then ``/tmp/gobin/server`` (what ``go install .../cmd/server@v2.12.0`` produces). Without one
the module is skipped. Each assertion checks that a fault *landed* (an error, a delay at least
as long as the injected latency, a request counted upstream), never a performance budget.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from harness.stack.install import TOXIPROXY_VERSION, default_cache_dir
from harness.stack.toxiproxy import (
    Proxy,
    ToxiproxyClient,
    ToxiproxyConflict,
    ToxiproxyError,
    ToxiproxyNotFound,
)

pytestmark = pytest.mark.integration

READY_DEADLINE_S = 10.0
REQUEST_TIMEOUT_S = 5.0
FALLBACK_BIN = str(default_cache_dir() / "toxiproxy" / TOXIPROXY_VERSION / "toxiproxy-server")


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def find_toxiproxy_server() -> str:
    """The server binary to use, or skip the module saying where we looked."""
    env = os.environ.get("N8N_CHAOS_TOXIPROXY_BIN")
    if env:
        if not _executable(env):
            pytest.skip(f"N8N_CHAOS_TOXIPROXY_BIN={env!r} is not an executable file")
        return env
    found = shutil.which("toxiproxy-server")
    if found:
        return found
    if _executable(FALLBACK_BIN):
        return FALLBACK_BIN
    pytest.skip(
        "no toxiproxy-server: set N8N_CHAOS_TOXIPROXY_BIN, put toxiproxy-server on PATH, or "
        f"`go install github.com/Shopify/toxiproxy/v2/cmd/server@v2.12.0` to {FALLBACK_BIN}"
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


# -- upstream -------------------------------------------------------------------------------------


@dataclass
class Upstream:
    """A tiny HTTP/1.1 server that counts the requests it received and the peer of each."""

    server: ThreadingHTTPServer
    peers: list[tuple[str, int]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def address(self) -> str:
        host, port = self.server.server_address[:2]
        return f"{host!s}:{port}"

    @property
    def count(self) -> int:
        with self.lock:
            return len(self.peers)


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # resets and truncations are what these tests provoke


def _handler(upstream_ref: list[Upstream]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            upstream = upstream_ref[0]
            with upstream.lock:  # counted before any response byte is written
                upstream.peers.append(self.client_address[:2])
            body = f"echo {self.path}".encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


@pytest.fixture(scope="module")
def upstream() -> Iterator[Upstream]:
    ref: list[Upstream] = []
    server = _QuietServer(("127.0.0.1", 0), _handler(ref))
    ref.append(Upstream(server))
    thread = threading.Thread(target=server.serve_forever, name="upstream", daemon=True)
    thread.start()
    yield ref[0]
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


# -- toxiproxy-server -----------------------------------------------------------------------------


def _start_server(binary: str, log_path: Path) -> tuple[subprocess.Popen[bytes], ToxiproxyClient]:
    port = free_port()
    with log_path.open("ab") as log:
        proc = subprocess.Popen(
            [binary, "-host", "127.0.0.1", "-port", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    client = ToxiproxyClient(f"http://127.0.0.1:{port}", timeout=REQUEST_TIMEOUT_S)
    deadline = time.monotonic() + READY_DEADLINE_S
    try:
        while True:
            if proc.poll() is not None:
                tail = log_path.read_text(errors="replace")[-2000:]
                raise RuntimeError(f"toxiproxy-server exited with {proc.returncode}:\n{tail}")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"toxiproxy-server not ready within {READY_DEADLINE_S}s")
            try:
                client.wait_ready(min(0.5, remaining))
                return proc, client
            except ToxiproxyError:
                continue
    except BaseException:
        client.close()
        _stop(proc)
        raise


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


@pytest.fixture(scope="module")
def toxiproxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ToxiproxyClient]:
    binary = find_toxiproxy_server()
    log_path = tmp_path_factory.mktemp("toxiproxy") / "server.log"
    proc, client = _start_server(binary, log_path)
    try:
        yield client
    finally:
        client.close()
        _stop(proc)


@pytest.fixture
def proxy(
    toxiproxy: ToxiproxyClient, upstream: Upstream, request: pytest.FixtureRequest
) -> Iterator[Proxy]:
    name = re.sub(r"\W+", "_", request.node.name)[:60]
    toxiproxy.reset()
    created = toxiproxy.create_proxy(name, upstream.address)
    try:
        yield created
    finally:
        toxiproxy.reset()
        toxiproxy.delete_proxy(name)


def url(proxy: Proxy, path: str = "/ping") -> str:
    return f"http://{proxy.listen_host}:{proxy.listen_port}{path}"


def get(proxy: Proxy, path: str = "/ping") -> httpx.Response:
    # A fresh connection per call, so each request gets a new link through the proxy.
    return httpx.get(url(proxy, path), timeout=REQUEST_TIMEOUT_S)


def causes(exc: BaseException | None) -> Iterator[BaseException]:
    while exc is not None:
        yield exc
        exc = exc.__cause__ or exc.__context__


# -- tests ----------------------------------------------------------------------------------------


def test_version_and_listen_port_zero_is_resolved(toxiproxy: ToxiproxyClient, proxy: Proxy) -> None:
    assert toxiproxy.version()  # "git" for a plain `go install`, else the release number
    assert proxy.listen_host == "127.0.0.1"
    assert proxy.listen_port != 0
    assert toxiproxy.proxies()[proxy.name].listen == proxy.listen
    assert toxiproxy.proxy(proxy.name).listen_port == proxy.listen_port


def test_traffic_flows(proxy: Proxy, upstream: Upstream) -> None:
    before = upstream.count
    response = get(proxy, "/hello")
    assert (response.status_code, response.text) == (200, "echo /hello")
    assert upstream.count == before + 1


def test_latency_toxic_delays_the_response(proxy: Proxy) -> None:
    latency_ms = 300
    with proxy.toxic("latency", latency=latency_ms) as toxic:
        assert toxic.attributes == {"latency": latency_ms, "jitter": 0}
        started = time.perf_counter()
        response = get(proxy)
        elapsed = time.perf_counter() - started
    assert response.status_code == 200
    assert elapsed >= latency_ms / 1000
    assert proxy.toxics() == []


def test_new_toxic_applies_to_an_already_open_connection(proxy: Proxy, upstream: Upstream) -> None:
    latency_ms = 300
    with httpx.Client(timeout=REQUEST_TIMEOUT_S) as keep_alive:
        assert keep_alive.get(url(proxy)).status_code == 200
        first_link = upstream.peers[-1]
        with proxy.toxic("latency", latency=latency_ms):
            started = time.perf_counter()
            assert keep_alive.get(url(proxy)).status_code == 200
            elapsed = time.perf_counter() - started
        # Same toxiproxy -> upstream socket: the request went over the link opened before.
        assert upstream.peers[-1] == first_link
    assert elapsed >= latency_ms / 1000


def test_update_toxic_changes_attributes_in_place(proxy: Proxy) -> None:
    proxy.add_toxic("latency", name="slow", latency=10)
    updated = proxy.update_toxic("slow", jitter=5, toxicity=0.5)
    assert (updated.attributes, updated.toxicity) == ({"latency": 10, "jitter": 5}, 0.5)
    assert proxy.toxics() == [updated]


def test_reset_peer_downstream_resets_after_upstream_got_the_request(
    proxy: Proxy, upstream: Upstream
) -> None:
    before = upstream.count
    with proxy.toxic("reset_peer", timeout=0), pytest.raises(httpx.ReadError) as info:
        get(proxy)
    assert any(isinstance(exc, ConnectionResetError) for exc in causes(info.value))  # an RST
    assert upstream.count == before + 1
    assert get(proxy).status_code == 200  # removed on exit


def test_limit_data_zero_drops_the_reply_but_upstream_received_the_request(
    proxy: Proxy, upstream: Upstream
) -> None:
    before = upstream.count
    with (
        proxy.toxic("limit_data", bytes=0),
        pytest.raises(httpx.RemoteProtocolError, match="without sending a response"),
    ):
        get(proxy)
    assert upstream.count == before + 1  # the side effect happened, the reply was lost
    assert get(proxy).status_code == 200


def test_down_refuses_connections_then_traffic_works_again(
    toxiproxy: ToxiproxyClient, proxy: Proxy
) -> None:
    with proxy.down():
        assert toxiproxy.proxy(proxy.name).enabled is False
        with pytest.raises(httpx.ConnectError):
            get(proxy)
    assert proxy.enabled is True
    assert toxiproxy.proxy(proxy.name).listen_port == proxy.listen_port  # same port after
    assert get(proxy).status_code == 200


def test_disable_closes_an_already_open_connection(proxy: Proxy) -> None:
    with socket.create_connection((proxy.listen_host, proxy.listen_port), timeout=5) as raw:
        raw.sendall(b"GET /raw HTTP/1.1\r\nHost: upstream\r\n\r\n")
        reply = b""
        while not reply.endswith(b"echo /raw"):  # headers and body may arrive apart
            chunk = raw.recv(4096)
            assert chunk, f"connection closed early after {reply!r}"
            reply += chunk
        with proxy.down():
            try:
                closed = raw.recv(4096) == b""  # EOF without sending anything more
            except ConnectionResetError:
                closed = True
    assert closed


def test_reset_removes_toxics_and_reenables(toxiproxy: ToxiproxyClient, proxy: Proxy) -> None:
    proxy.add_toxic("latency", latency=1000)
    proxy.add_toxic("limit_data", stream="upstream", bytes=0)
    proxy.disable()
    assert len(proxy.toxics()) == 2

    toxiproxy.reset()

    assert proxy.toxics() == []
    assert toxiproxy.proxy(proxy.name).enabled is True
    started = time.perf_counter()
    assert get(proxy).status_code == 200
    assert time.perf_counter() - started < 1.0  # the 1000 ms latency toxic is gone


def test_toxic_context_tolerates_reset_inside_the_block(
    toxiproxy: ToxiproxyClient, proxy: Proxy
) -> None:
    with proxy.toxic("latency", latency=10):
        toxiproxy.reset()  # removes the toxic; the 404 on exit is ignored
    assert proxy.toxics() == []


def test_server_errors_are_typed(toxiproxy: ToxiproxyClient, proxy: Proxy) -> None:
    with pytest.raises(ToxiproxyConflict, match="proxy already exists"):
        toxiproxy.create_proxy(proxy.name, proxy.upstream)
    with pytest.raises(ToxiproxyNotFound, match="proxy not found"):
        toxiproxy.proxy("no_such_proxy")
    with pytest.raises(ToxiproxyNotFound, match="toxic not found"):
        proxy.remove_toxic("no_such_toxic")
    with pytest.raises(ToxiproxyError, match="invalid toxic type") as info:
        proxy.add_toxic("no_such_type")
    assert info.value.status == 400
    proxy.add_toxic("latency", latency=1)
    with pytest.raises(ToxiproxyConflict, match="toxic already exists"):
        proxy.add_toxic("latency", latency=1)


def test_populate_is_idempotent_only_with_the_resolved_port(
    toxiproxy: ToxiproxyClient, upstream: Upstream
) -> None:
    name = "populate_case"
    try:
        (first,) = toxiproxy.populate([{"name": name, "upstream": upstream.address}])
        assert first.listen_host == "127.0.0.1"  # populate defaults listen like create_proxy
        assert first.listen_port != 0

        (same,) = toxiproxy.populate(
            [{"name": name, "upstream": upstream.address, "listen": first.listen}]
        )
        assert same.listen == first.listen

        # Toxiproxy compares the stored, resolved address with ":0" and replaces the proxy.
        (moved,) = toxiproxy.populate(
            [{"name": name, "upstream": upstream.address, "listen": "127.0.0.1:0"}]
        )
        assert moved.listen_port not in (0, first.listen_port)
    finally:
        toxiproxy.delete_proxy(name)
