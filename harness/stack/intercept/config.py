"""What the proxy process is told at start, and the host map it rereads on every request.

Both sides (the harness's launcher and the mitmproxy addon) read these files, so this
module imports only the standard library.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

# Added to every forwarded request: which n8n process's listener it came in on.
VIA_HEADER = "X-N8n-Chaos-Via"
# The loopback names, said once for the harness (the fake providers, which import nothing of
# it, keep their own): a URL's host ("[::1]" as a workflow's URL text writes it).
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
# mitmproxy's name for its CA files in the confdir: <basename>-ca.pem (key), -ca-cert.pem.
CA_BASENAME = "mitmproxy"


@dataclass(frozen=True)
class Listener:
    """One n8n process's proxy port, and where its allowed requests go (HOST:PORT of that
    process's Toxiproxy link to the provider; None when the stack runs no provider)."""

    name: str
    port: int
    upstream: str | None


@dataclass(frozen=True)
class ProxyConfig:
    confdir: Path  # mitmproxy's confdir: the run's CA lives here
    hosts_file: Path
    journal: Path
    listeners: tuple[Listener, ...]

    @property
    def ca_cert(self) -> Path:
        """The run's CA certificate (made by the proxy process at start): n8n trusts it."""
        return self.confdir / f"{CA_BASENAME}-ca-cert.pem"

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON: the proxy's config file, and what an attached run rebuilds from."""
        return {
            "confdir": str(self.confdir),
            "hosts_file": str(self.hosts_file),
            "journal": str(self.journal),
            "listeners": [asdict(listener) for listener in self.listeners],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProxyConfig:
        return cls(
            confdir=Path(data["confdir"]),
            hosts_file=Path(data["hosts_file"]),
            journal=Path(data["journal"]),
            listeners=tuple(Listener(**item) for item in data["listeners"]),
        )

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(self.as_dict(), indent=2) + "\n")

    @classmethod
    def read(cls, path: Path) -> ProxyConfig:
        return cls.from_dict(json.loads(path.read_text()))


def write_hosts(path: Path, hosts: set[str] | frozenset[str] | list[str]) -> None:
    """Replace the host map atomically: a request sees the old map or the new, never half."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"hosts": sorted({h.lower() for h in hosts})}) + "\n")
    tmp.replace(path)


class HostMap:
    """The hosts that have a fake, reread whenever the file was replaced (checked by stat on
    every request: a few microseconds, and an update is seen by the very next request)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._seen: tuple[int, int, int] | None = None
        self._hosts: frozenset[str] = frozenset()

    def hosts(self) -> frozenset[str]:
        try:
            st = self.path.stat()
        except FileNotFoundError:
            self._seen, self._hosts = None, frozenset()
            return self._hosts
        key = (st.st_ino, st.st_mtime_ns, st.st_size)
        if key != self._seen:
            data = json.loads(self.path.read_text())
            self._hosts = frozenset(str(h).lower() for h in data.get("hosts", []))
            self._seen = key
        return self._hosts
