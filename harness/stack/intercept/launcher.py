"""The intercepting proxy as a part of the stack (harness side): its files, process, env.

Every n8n process gets its own listener, so one process's outbound traffic can be told
apart (journal, ``X-N8n-Chaos-Via``) and cut alone (its Toxiproxy link to the provider).
"""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path

import harness
from harness.errors import ServiceError
from harness.stack.intercept.config import Listener, ProxyConfig, write_hosts
from harness.stack.intercept.journal import JournalEntry, read_journal
from harness.stack.ports import HOST
from harness.stack.process import ManagedProcess
from harness.stack.readiness import Readiness
from harness.stack.run import RunContext

NO_PROXY = "127.0.0.1,localhost,::1"
SERVER_MODULE = "harness.stack.intercept.server"


def _accepts(port: int) -> bool:
    with socket.create_connection((HOST, port), timeout=1.0):
        return True


def _harness_only_path(folder: Path) -> Path:
    """A folder holding only a link to the caller's own ``harness`` package (a checkout or
    the installed one): the venv's python imports it, and no other package of the caller's
    environment (its newer h11 or cryptography) shadows mitmproxy's own."""
    path = folder / "pythonpath"
    path.mkdir(exist_ok=True)
    link = path / "harness"
    if not link.is_symlink():
        link.symlink_to(Path(harness.__file__).resolve().parent, target_is_directory=True)
    return path


class InterceptProxy:
    """The run's proxy: its config (listeners, host map, journal, CA) and its process.

    Made with ``for_run`` by the stack that starts it; an attached run rebuilds it from the
    owner's ``attach.json`` (``ProxyConfig.from_dict``) with the owner's process handle."""

    def __init__(
        self, config: ProxyConfig, process: ManagedProcess, python: Path | None = None
    ) -> None:
        self.config = config
        self.process = process
        self.ca_cert = config.ca_cert
        self.dir = config.confdir.parent
        self._config_path = self.dir / "config.json"
        self._python = python  # None: this side never starts the proxy (attached)

    @classmethod
    def for_run(
        cls,
        run: RunContext,
        listeners: Mapping[str, tuple[int, str | None]],
        python: Path,
    ) -> InterceptProxy:
        """``listeners``: n8n process name -> (its proxy port, HOST:PORT its allowed requests
        go to, or None); ``python``: the interpreter of mitmproxy's venv (``Installation``).
        The proxy is a process on the host with either backend (containers of the compose
        backend use host networking, so they reach its 127.0.0.1 listeners)."""
        folder = run.run_dir / "intercept"
        folder.mkdir(parents=True, exist_ok=True)
        config = ProxyConfig(
            confdir=folder / "confdir",
            hosts_file=folder / "hosts.json",
            journal=folder / "journal.jsonl",
            listeners=tuple(Listener(n, port, up) for n, (port, up) in listeners.items()),
        )
        argv = [str(python), "-m", SERVER_MODULE, "--config", str(folder / "config.json")]
        env = {"PYTHONUNBUFFERED": "1", "PYTHONPATH": str(_harness_only_path(folder))}
        return cls(config, run.process("intercept", argv, env, on_host=True), python)

    def prepare(self) -> None:
        """Write the config and an empty host map; before the process starts (the process
        makes the CA in the confdir, a folder only this user can read)."""
        self.config.confdir.mkdir(parents=True, exist_ok=True)
        self.config.confdir.chmod(0o700)
        self.config.write(self._config_path)
        if not self.config.hosts_file.exists():
            write_hosts(self.config.hosts_file, [])

    def make_ca(self) -> None:
        """Make the run's CA now, before the proxy starts: a container bind-mounts the
        certificate when it is created, so the file must exist by then (compose backend).
        The proxy process finds it and keeps it."""
        if self.ca_cert.exists():
            return
        assert self._python is not None, "an attached run never makes the warm stack's CA"
        self.prepare()
        argv = [str(self._python), "-m", SERVER_MODULE, "--config", str(self._config_path)]
        env = {**self.process.env, "PATH": os.environ.get("PATH", "")}
        done = subprocess.run(
            [*argv, "--make-ca"], env=env, capture_output=True, text=True, timeout=120
        )
        if done.returncode != 0 or not self.ca_cert.exists():
            raise ServiceError(
                "intercept", f"making the run's CA failed (exit {done.returncode})", done.stderr
            )

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
