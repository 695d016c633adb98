"""A tiny HTTP upstream for stack tests: echoes what it got, or holds a request on cue.

The ``Host`` header it echoes is the address the caller used, i.e. the Toxiproxy proxy of
the worker that ran the workflow, which tells the test which worker did the work.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class UpstreamState:
    requests: list[dict[str, str]] = field(default_factory=list)
    held: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, path: str) -> int:
        with self.lock:
            return sum(1 for r in self.requests if r["path"] == path)

    def last(self, path: str) -> dict[str, str]:
        with self.lock:
            return [r for r in self.requests if r["path"] == path][-1]


def _handler(state: UpstreamState) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode(errors="replace")
            record = {"path": self.path, "host": self.headers.get("Host", ""), "body": body}
            with state.lock:
                state.requests.append(record)
            if self.path == "/hold":
                state.held.set()
                state.release.wait(timeout=120)  # bounded: never outlives a test by much
            payload = json.dumps({"echo": record}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: object) -> None:
            del format, args

    return Handler


@contextmanager
def running_upstream() -> Iterator[tuple[str, UpstreamState]]:
    state = UpstreamState()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}", state
    finally:
        state.release.set()
        server.shutdown()
        server.server_close()
