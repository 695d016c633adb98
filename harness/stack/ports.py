"""Ports on 127.0.0.1: free ones chosen at run time, fixed ones checked before use."""

from __future__ import annotations

import socket

from harness.errors import PortInUse

HOST = "127.0.0.1"


def free_port() -> int:
    """A port that was free a moment ago (the kernel's choice, outside fixed ranges)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def ensure_free(port: int, service: str) -> None:
    """Raise PortInUse, naming the fix, if ``port`` cannot be bound on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError as exc:
            raise PortInUse(
                service,
                f"port {HOST}:{port} is already in use ({exc.strerror}); stop what holds it "
                f"(`ss -ltnp 'sport = :{port}'`) or leave the port unset to get a free one",
            ) from exc
