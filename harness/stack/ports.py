"""Ports on 127.0.0.1: free ones chosen at run time, fixed ones checked before use.

A free port is one that binds now, but it is only free until someone binds it, and a stack
binds its ~30 ports seconds later. So it is drawn below the kernel's ephemeral range
(``ip_local_port_range``), where no outgoing connection takes it in the meantime (a CI run saw
one take a proxy's port between the choice and Toxiproxy's listen); where that range leaves no
room below it, the kernel's own choice (port 0). Several stacks start at once on one
machine (``pytest -n 2``, other users' runs), so each port handed out is also *reserved*: a
file ``<tmp>/n8n-chaos-ports/<port>`` created exclusively, holding the pid of the process
that took it. Another harness process skips a port whose holder is alive; a dead holder's
reservation is taken over. Within one process a port is never handed out twice.
"""

from __future__ import annotations

import contextlib
import os
import random
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from harness.errors import PortInUse

HOST = "127.0.0.1"

_lock = threading.Lock()
_handed_out: set[int] = set()
_collectors: list[list[int]] = []


@contextlib.contextmanager
def collect_ports() -> Iterator[list[int]]:
    """Every port ``free_port`` hands out inside the block is appended to the list (so a
    stack can release exactly its own with ``release_ports`` when it ends)."""
    taken: list[int] = []
    with _lock:
        _collectors.append(taken)
    try:
        yield taken
    finally:
        with _lock:
            _collectors.remove(taken)


def reservations_dir() -> Path:
    env = os.environ.get("N8N_CHAOS_PORTS_DIR")
    path = Path(env) if env else Path(tempfile.gettempdir()) / "n8n-chaos-ports"
    if not path.is_dir():
        with contextlib.suppress(FileExistsError):
            path.mkdir(parents=True)
            path.chmod(0o1777)  # shared by every user's runs, like /tmp
    return path


def _holder_alive(entry: Path) -> bool:
    try:
        pid = int(entry.read_text().strip() or "0")
    except (OSError, ValueError):
        return False
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's live process
    return True


def _reserve(port: int, directory: Path) -> bool:
    """Claim the port for this process; False if a live process holds it."""
    entry = directory / str(port)
    for _ in range(2):
        try:
            fd = os.open(entry, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            if _holder_alive(entry):
                return False
            with contextlib.suppress(OSError):
                entry.unlink()  # a dead holder: take it over (a racer may do the same)
            continue
        except OSError:
            return True  # no place to reserve in: the kernel's choice alone
        with os.fdopen(fd, "w") as handle:
            handle.write(str(os.getpid()))
        return True
    return False


_LOWEST = 20000  # below it, well-known services' ports
_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def _below_ephemeral() -> tuple[int, int] | None:
    """The ports from _LOWEST up to the kernel's ephemeral range; None when too few."""
    try:
        first = int(_EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return (_LOWEST, first) if first - _LOWEST >= 2000 else None


def free_port() -> int:
    """A port that was free a moment ago, reserved for this process (see module doc)."""
    directory = reservations_dir()
    below = _below_ephemeral()
    for _ in range(200):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind((HOST, random.randrange(*below) if below else 0))
            except OSError:
                continue  # taken (or in TIME_WAIT): draw another
            port = int(sock.getsockname()[1])
        with _lock:
            if port in _handed_out:
                continue
            if not _reserve(port, directory):
                continue
            _handed_out.add(port)
            for collector in _collectors:
                collector.append(port)
            return port
    raise PortInUse("ports", f"no free port found on {HOST} after 200 tries")


def release_ports(ports: list[int]) -> None:
    """Give up this process's reservations (after the stack that used them ended)."""
    directory = reservations_dir()
    with _lock:
        for port in ports:
            _handed_out.discard(port)
            entry = directory / str(port)
            with contextlib.suppress(OSError, ValueError):
                if int(entry.read_text().strip()) == os.getpid():
                    entry.unlink()


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


# The kernel's socket tables: which connections a port has, as the OS sees them (a fault's
# proof, a crash point's choice of worker), not as any process says.
_ESTABLISHED = "01"


def established_to(port: int, tables: tuple[Path, ...] | None = None) -> int:
    """Client sockets in state ESTABLISHED whose remote port is ``port`` (/proc/net/tcp*)."""
    tables = tables or (Path("/proc/net/tcp"), Path("/proc/net/tcp6"))
    count = 0
    for table in tables:
        try:
            lines = table.read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()  # sl, local, remote, state, ...
            if len(fields) > 3 and fields[3] == _ESTABLISHED and _port(fields[2]) == port:
                count += 1
    return count


def _port(address: str) -> int:
    return int(address.rpartition(":")[2], 16)
