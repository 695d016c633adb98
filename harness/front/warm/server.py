"""The warm runner's process: ``python -m harness.front.warm.server SOCKET``, started by ``up``.

It imports once what every run needs, then forks per connection; the fork becomes the
client's ``n8n-chaos run`` (``harness.front.warm.protocol`` says how). It stays single-threaded
until it forks: a fork copies only the calling thread, so a lock another thread held would
stay locked forever in the child.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import pkgutil
import signal
import socket
import socketserver
import sys
import tempfile
import threading
from pathlib import Path
from typing import BinaryIO

from harness.front.warm.protocol import (
    ACCEPTED,
    EXIT,
    INTERRUPT,
    REFUSED,
    STD_FDS,
    Request,
    harness_dir,
)

# Not imported before the fork, each for its reason:
NOT_PRELOADED = (
    "harness.front.cli",  # its console is made for the terminal it starts in: the client's
    "harness.front.plugin",  # pytest imports a -p plugin itself, to rewrite its asserts
    "harness.terminal.reporter",  # ... and those it names in pytest_plugins
    "harness.front.suite",  # the test module pytest collects
    "harness.__main__",  # runs the CLI when imported
    "harness.front.warm",  # this runner
    "harness.stack.docker",  # the compose backend's docker SDK: runs here are native
    # The proxy's own side runs in mitmproxy's venv (harness.stack.intercept.server).
    "harness.stack.intercept.addon",
    "harness.stack.intercept.server",
)
LIBRARIES = (
    "pytest",
    # allure_pytest.plugin and xdist.plugin themselves are -p plugins (see harness.front.plugin
    # above); what they import is not.
    "allure_commons",
    "allure_pytest.listener",
    "allure_pytest.utils",
    "execnet",
    "click",
    "rich.console",
    "rich.live",
    "rich.table",
    "httpx",
    "redis",
    "redis.asyncio",
    "psycopg",
    "pydantic",
)


def preload() -> list[str]:
    """Import what a run imports; returns what could not be (logged, never fatal: a module
    missing here is imported by the run itself, a little later)."""
    from _pytest.config import default_plugins

    names = [*LIBRARIES, *(f"_pytest.{name}" for name in default_plugins)]
    import harness

    for module in pkgutil.walk_packages(harness.__path__, "harness."):
        if not module.name.startswith(NOT_PRELOADED):
            names.append(module.name)
    failed = []
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as exc:  # a broken optional import must not stop the runner
            failed.append(f"{name}: {exc}")
    return failed


class _Handler(socketserver.BaseRequestHandler):
    """Runs in the fork: take the client's terminal, run its command, report the exit."""

    request: socket.socket
    server: _Server

    def handle(self) -> None:
        conn = self.request
        _, fds, _, _ = socket.recv_fds(conn, 1, len(STD_FDS))
        reader = conn.makefile("rb")
        request = Request.parse(reader.readline())
        why = refusal(request, fds)
        if why is not None:
            for fd in fds:
                os.close(fd)
            conn.sendall(f"{REFUSED} {why}\n".encode())
            return
        self.server.socket.close()  # the fork serves its one client only
        conn.sendall(f"{ACCEPTED}\n".encode())
        sys.stdout.flush()
        with open(os.dup(1), "w", buffering=1) as log:  # the runner's log; fd 1 goes on loan
            print(f"run {os.getpid()}: {' '.join(request.argv[1:])} in {request.cwd}", file=log)
            code = run_here(request, fds, reader)
            print(f"run {os.getpid()}: exit {code}", file=log)
        conn.sendall(f"{EXIT} {code}\n".encode())


def refusal(request: Request, fds: list[int]) -> str | None:
    if len(fds) != len(STD_FDS):
        return f"expected {len(STD_FDS)} file descriptors (stdin, stdout, stderr), got {len(fds)}"
    if os.path.realpath(request.executable) != os.path.realpath(sys.executable):
        return f"it runs {sys.executable}, the client {request.executable}"
    if os.path.realpath(request.harness_dir) != os.path.realpath(harness_dir()):
        return f"it runs the harness in {harness_dir()}, the client {request.harness_dir}"
    return None


def run_here(request: Request, fds: list[int], reader: BinaryIO) -> int:
    """Become the client's process (terminal, folder, environment, argv) and run its
    command; a Ctrl-C of the client arrives as SIGINT, as it would in its own process."""
    for target, fd in zip(STD_FDS, fds, strict=True):
        os.dup2(fd, target)
        os.close(fd)
    # Streams made anew: line-buffered, as the client's own are on a terminal.
    sys.stdin = _stream(0, "r", request.encoding)
    sys.stdout = _stream(1, "w", request.encoding)
    sys.stderr = _stream(2, "w", request.encoding)
    # faulthandler and pytest's capture look at the originals.
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr  # type: ignore[misc]
    os.chdir(request.cwd)
    os.umask(request.umask)  # evidence files get the client's permissions
    os.environ.clear()
    os.environ.update(request.env)
    tempfile.tempdir = None  # found again from the client's TMPDIR
    sys.argv = list(request.argv)
    done = threading.Event()
    threading.Thread(target=_relay_interrupts, args=(reader, done), daemon=True).start()
    code = 0
    try:
        from harness.front.cli import main

        main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except KeyboardInterrupt:
        code = 130
    finally:
        done.set()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
    return code


def _stream(fd: int, mode: str, encoding: str) -> io.TextIOWrapper:
    stream = open(  # noqa: SIM115  # lives as long as the process
        fd, mode, buffering=1, encoding=encoding, errors="backslashreplace", closefd=False
    )
    assert isinstance(stream, io.TextIOWrapper)
    return stream


def _relay_interrupts(reader: BinaryIO, done: threading.Event) -> None:
    """The client's Ctrl-C, and its end (a client that died takes its run with it)."""
    for line in reader:
        if line.strip() == INTERRUPT.encode():
            os.kill(os.getpid(), signal.SIGINT)
    if not done.is_set():
        os.kill(os.getpid(), signal.SIGINT)


class _Server(socketserver.ForkingMixIn, socketserver.UnixStreamServer):
    def __init__(self, path: Path) -> None:
        super().__init__(str(path), _Handler, bind_and_activate=False)
        path.unlink(missing_ok=True)
        self.server_bind()
        path.chmod(0o600)  # before listening: only this user may run in this process
        self.server_activate()


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m harness.front.warm.server SOCKET", file=sys.stderr)
        return 2
    for line in preload():
        print(f"warm runner: not preloaded: {line}", flush=True)
    if threading.active_count() != 1:  # see the module's docstring
        print("warm runner: a preloaded module started a thread; not serving", flush=True)
        return 1
    server = _Server(Path(argv[1]))
    print(f"warm runner: serving {argv[1]} (pid {os.getpid()})", flush=True)
    with server:
        server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
