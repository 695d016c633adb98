"""Where an intercepted request's time goes: one new connection per request, as n8n makes
them, timed phase by phase from a raw socket, with the proxy process's CPU time beside it.

Phases: ``connect`` (TCP to the listener), ``tunnel`` (CONNECT sent until the proxy's
``200``), ``tls`` (the handshake with the proxy's leaf certificate) and ``exchange`` (the
request until the whole answer: the proxy opens its connection to the Toxiproxy link,
forwards, relays the answer and journals it). The same request straight to the link is the
baseline. ``proxy_cpu_ms`` is the proxy process's user+system CPU per request over the run
(from /proc): when it is about the added latency, the proxy's own work is the cost, not
waiting on a socket.
"""

from __future__ import annotations

import os
import socket
import ssl
import statistics
import time
from pathlib import Path
from typing import Any

from _common import load

from harness.stack.stack import Stack

REQUEST = (
    "GET {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer sk_test_bench\r\n"
    "Connection: close\r\n\r\n"  # as Node's agents without keep-alive (n8n's) send it
)


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _open(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _read_answer(sock: socket.socket) -> bytes:
    """The head and a Content-Length body: done when the body is complete, as Node's client
    is, not when the proxy gets round to closing (the fake always sends Content-Length)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length and (chunk := sock.recv(65536)):
        body += chunk
    return head


def _status(head: bytes) -> int:
    return int(head.split(b" ", 2)[1])


def _direct(port: int, request: bytes) -> tuple[dict[str, float], int]:
    started = time.perf_counter()
    with _open(port) as sock:
        connected = time.perf_counter()
        sock.sendall(request)
        answer = _read_answer(sock)
    done = time.perf_counter()
    return {"connect": connected - started, "exchange": done - connected}, _status(answer)


def _proxied(
    port: int, host: str, request: bytes, trust: ssl.SSLContext
) -> tuple[dict[str, float], int]:
    started = time.perf_counter()
    sock = _open(port)
    connected = time.perf_counter()
    sock.sendall(f"CONNECT {host}:443 HTTP/1.1\r\nHost: {host}:443\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(4096)
    tunnelled = time.perf_counter()
    with trust.wrap_socket(sock, server_hostname=host) as tls:
        handshaken = time.perf_counter()
        tls.sendall(request)
        answer = _read_answer(tls)
    done = time.perf_counter()
    phases = {
        "connect": connected - started,
        "tunnel": tunnelled - connected,
        "tls": handshaken - tunnelled,
        "exchange": done - handshaken,
    }
    return phases, _status(answer)


def _medians_ms(samples: list[dict[str, float]]) -> dict[str, float]:
    def ms(values: list[float]) -> float:
        return round(statistics.median(values) * 1000, 2)

    phases = {name: ms([s[name] for s in samples]) for name in samples[0]}
    return phases | {"total": ms([sum(s.values()) for s in samples])}


def phase_latency(stack: Stack, host: str, path: str, requests: int) -> dict[str, Any]:
    """Alternating direct and intercepted requests through worker0's listener and link."""
    intercept = stack.intercept
    assert intercept is not None and intercept.process.pid is not None
    link = stack.listen_ports["worker0_provider"]
    listener = int(intercept.addresses["worker0"].rpartition(":")[2])
    trust = ssl.create_default_context(cafile=str(intercept.ca_cert))
    request = REQUEST.format(path=path, host=host).encode()
    samples: dict[str, list[dict[str, float]]] = {"direct": [], "intercepted": []}
    statuses: dict[str, set[int]] = {"direct": set(), "intercepted": set()}
    for _ in range(5):  # warm up: the proxy's leaf certificate
        _proxied(listener, host, request, trust)
    result: dict[str, Any] = {"requests": requests, "load_before": load()}
    cpu_before = _cpu_s(intercept.process.pid)
    for _ in range(requests):
        for name, (phases, status) in (
            ("direct", _direct(link, request)),
            ("intercepted", _proxied(listener, host, request, trust)),
        ):
            samples[name].append(phases)
            statuses[name].add(status)
    cpu = _cpu_s(intercept.process.pid) - cpu_before
    direct, intercepted = _medians_ms(samples["direct"]), _medians_ms(samples["intercepted"])
    return result | {
        "direct_ms": direct,
        "intercepted_ms": intercepted,
        "added_median_ms": round(intercepted["total"] - direct["total"], 2),
        "proxy_cpu_ms": round(cpu * 1000 / requests, 2),
        "statuses": {name: sorted(codes) for name, codes in statuses.items()},
        "load_after": load(),
    }
