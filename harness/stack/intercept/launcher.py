"""The intercepting proxy as a part of the stack (harness side): its files, process, env.

Every n8n process gets its own listener, so one process's outbound traffic can be told
apart (journal, ``X-N8n-Chaos-Via``) and cut alone (its Toxiproxy link to the provider).
"""

from __future__ import annotations

import socket
from collections.abc import Iterable, Mapping
from pathlib import Path

import harness
from harness.stack.intercept.config import Listener, ProxyConfig, write_hosts
from harness.stack.intercept.journal import JournalEntry, read_journal
from harness.stack.ports import HOST
from harness.stack.process import ManagedProcess
from harness.stack.readiness import Readiness
from harness.stack.run import RunContext

NO_PROXY = "127.0.0.1,localhost,::1"


def _accepts(port: int) -> bool:
    with socket.create_connection((HOST, port), timeout=1.0):
        return True


class InterceptProxy:
    """``listeners``: n8n process name -> (its proxy port, HOST:PORT its allowed requests go
    to, or None); ``python``: the interpreter of mitmproxy's venv (``Installation``)."""

    def __init__(
        self,
        run: RunContext,
        listeners: Mapping[str, tuple[int, str | None]],
        python: Path,
    ) -> None:
        self.dir = run.run_dir / "intercept"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.config = ProxyConfig(
            confdir=self.dir / "confdir",
            hosts_file=self.dir / "hosts.json",
            journal=self.dir / "journal.jsonl",
            listeners=tuple(Listener(n, port, up) for n, (port, up) in listeners.items()),
        )
        self.ca_cert = self.config.ca_cert
        config_path = self.dir / "config.json"
        argv = [str(python), "-m", "harness.stack.intercept.server", "--config", str(config_path)]
        env = {"PYTHONUNBUFFERED": "1", "PYTHONPATH": str(self._harness_only_path())}
        self.process: ManagedProcess = run.process("intercept", argv, env)
        self._config_path = config_path

    def _harness_only_path(self) -> Path:
        """A folder holding only a link to the caller's own ``harness`` package (a checkout or
        the installed one): the venv's python imports it, and no other package of the
        caller's environment (its newer h11 or cryptography) shadows mitmproxy's own."""
        folder = self.dir / "pythonpath"
        folder.mkdir(exist_ok=True)
        link = folder / "harness"
        if not link.is_symlink():
            link.symlink_to(Path(harness.__file__).resolve().parent, target_is_directory=True)
        return folder

    def prepare(self) -> None:
        """Write the config and an empty host map; before the process starts (the process
        makes the CA in the confdir, a folder only this user can read)."""
        self.config.confdir.mkdir(parents=True, exist_ok=True)
        self.config.confdir.chmod(0o700)
        self.config.write(self._config_path)
        if not self.config.hosts_file.exists():
            write_hosts(self.config.hosts_file, [])

    @property
    def addresses(self) -> dict[str, str]:
        """n8n process name -> HOST:PORT of its listener."""
        return {item.name: f"{HOST}:{item.port}" for item in self.config.listeners}

    def env_for(self, name: str) -> dict[str, str]:
        """What an n8n process needs to send its outbound HTTP(S) through its listener."""
        url = f"http://{self.addresses[name]}"
        env = {"NO_PROXY": NO_PROXY, "no_proxy": NO_PROXY, "NODE_EXTRA_CA_CERTS": str(self.ca_cert)}
        for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
            env[var] = env[var.lower()] = url
        # n8n's default, set explicitly: workers and webhook processors use the proxy too.
        env["N8N_OUTBOUND_PROXY_MODE"] = "all"
        return env

    def set_hosts(self, hosts: Iterable[str]) -> None:
        """The hosts that have a fake; takes effect with the next request (atomic replace)."""
        write_hosts(self.config.hosts_file, list(hosts))

    def journal(self) -> list[JournalEntry]:
        return read_journal(self.config.journal)

    def readiness(self) -> Readiness:
        """Every listener accepts (the process made the CA before it listens)."""
        ports = [item.port for item in self.config.listeners]
        return Readiness("intercept", lambda: all(_accepts(p) for p in ports), self.process)
