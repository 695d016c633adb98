"""Serving both apps from one process and one event loop, on 127.0.0.1 only.

Sockets are bound here (port 0 picks a free one) so the real ports are known before uvicorn
starts; `READY {"port": .., "control_port": .., "smtp_port": ..}` goes to stdout once all
servers accept (the mail fake's SMTP server runs on the same loop).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import sys
from collections.abc import Callable, Iterator

import uvicorn
from starlette.types import ASGIApp

from .app import create_app
from .config import HOST, READY_PREFIX, ProviderConfig
from .connection import expose_transport
from .fakes.mail import start_mail_server


class _Server(uvicorn.Server):
    """A uvicorn server that reports readiness by event and leaves signals to `serve`."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = asyncio.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        self.ready.set()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        # Two servers share the process; `serve` installs one handler that stops both.
        yield


def bind(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((HOST, port))
    sock.listen(1024)
    sock.setblocking(False)
    return sock


def ready_line(port: int, control_port: int, smtp_port: int | None = None) -> str:
    document: dict[str, int] = {"port": port, "control_port": control_port}
    if smtp_port is not None:
        document["smtp_port"] = smtp_port
    document["pid"] = os.getpid()
    return READY_PREFIX + json.dumps(document, separators=(",", ":"))


def bind_control(public_port: int, control_port: int | None) -> socket.socket:
    """The control socket: the given port, else the public port + 1 when it is free, else
    any free port (the READY line and the stderr summary say which)."""
    if control_port is not None:
        return bind(control_port)
    if public_port < 65535:
        with contextlib.suppress(OSError):
            return bind(public_port + 1)
    return bind(0)


def summary_line(config: ProviderConfig, port: int, control_port: int, smtp_port: int) -> str:
    """Where everything is, for a person who started the provider by hand."""
    return (
        f"fake payment provider: API http://{HOST}:{port}, control http://{HOST}:{control_port}, "
        f"SMTP {HOST}:{smtp_port}, ledger {config.db_path} (Ctrl-C stops it)"
    )


async def serve(
    config: ProviderConfig,
    port: int,
    control_port: int | None,
    announce: Callable[[str], None] = print,
    *,
    stop_on_stdin_eof: bool = False,
    smtp_port: int = 0,
) -> None:
    """Serve until SIGTERM/SIGINT (or, if asked, until stdin reaches EOF). ``control_port``
    None: the public port + 1, or any free port when that one is taken; ``smtp_port`` 0: any
    free port."""
    provider = create_app(config)
    public_sock = bind(port)
    control_sock = bind_control(public_sock.getsockname()[1], control_port)
    smtp_server = await start_mail_server(provider.runtime, bind(smtp_port))
    servers = [
        _Server(_uvicorn_config(expose_transport(provider.public))),
        _Server(_uvicorn_config(provider.control)),
    ]

    def stop() -> None:
        # Let held requests finish first, so graceful shutdown does not wait on them.
        provider.runtime.interrupt_waits()
        for server in servers:
            server.should_exit = True

    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop)
    if stop_on_stdin_eof:
        _stop_on_eof(loop, sys.stdin.fileno(), stop)
    try:
        tasks = [
            asyncio.create_task(server.serve(sockets=[sock]))
            for server, sock in zip(servers, (public_sock, control_sock), strict=True)
        ]
        ready = asyncio.create_task(_all_ready(servers))
        done, _ = await asyncio.wait([ready, *tasks], return_when=asyncio.FIRST_COMPLETED)
        if ready in done:
            ports = (
                public_sock.getsockname()[1],
                control_sock.getsockname()[1],
                smtp_server.sockets[0].getsockname()[1],
            )
            announce(ready_line(*ports))
            # stdout stays the machine-read READY line; people read stderr.
            print(summary_line(config, *ports), file=sys.stderr, flush=True)
        else:
            ready.cancel()
            stop()
        await asyncio.gather(*tasks)
    finally:
        smtp_server.close()
        provider.close()


def _stop_on_eof(loop: asyncio.AbstractEventLoop, fd: int, stop: Callable[[], None]) -> None:
    """The launcher holds the write end of our stdin: EOF means it died, even by SIGKILL,
    so an orphaned provider never outlives its test run."""

    def on_readable() -> None:
        if not os.read(fd, 4096):
            loop.remove_reader(fd)
            stop()

    loop.add_reader(fd, on_readable)


async def _all_ready(servers: list[_Server]) -> None:
    for server in servers:
        await server.ready.wait()


def _uvicorn_config(app: ASGIApp) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        lifespan="off",  # the runtime is opened and closed by `serve`, not by the apps
        http="h11",
        loop="asyncio",
        log_level="warning",
        access_log=False,
        proxy_headers=False,
        server_header=False,
        timeout_graceful_shutdown=5,
    )


def run(
    config: ProviderConfig,
    port: int,
    control_port: int | None,
    *,
    stop_on_stdin_eof: bool = False,
    smtp_port: int = 0,
) -> None:
    def announce(line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    asyncio.run(
        serve(
            config,
            port,
            control_port,
            announce,
            stop_on_stdin_eof=stop_on_stdin_eof,
            smtp_port=smtp_port,
        )
    )
