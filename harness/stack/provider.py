"""The fake payment provider as a part of the stack: a real HTTP server, one process.

Its public port is an upstream of the workflows (reached through each worker's proxy);
its control port is for the harness only and is never proxied.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial

from fake_providers.payment import ProviderControl
from harness import loopback
from harness.stack.ports import HOST
from harness.stack.process import ManagedProcess
from harness.stack.readiness import Readiness
from harness.stack.run import RunContext


@dataclass(frozen=True)
class ProviderSettings:
    # Lenient: a charge without an Idempotency-Key is processed (the naive workflow sends
    # none); with a key, the full idempotency semantics apply.
    lenient: bool = True
    key_ttl_s: float = 24 * 3600.0


class ProviderServer:
    def __init__(
        self,
        run: RunContext,
        port: int,
        control_port: int,
        settings: ProviderSettings,
        smtp_port: int | None = None,
    ) -> None:
        self.port = port
        self.control_port = control_port
        self.smtp_port = smtp_port  # the mail fake (SMTP), for n8n's Send Email node
        self.settings = settings
        self.db_path = run.run_dir / "provider.db"
        argv = [
            sys.executable,
            "-m",
            "fake_providers.payment",
            "--port",
            str(port),
            "--control-port",
            str(control_port),
            "--db",
            str(self.db_path),
            "--key-ttl",
            str(settings.key_ttl_s),
        ]
        if settings.lenient:
            argv.append("--lenient")
        if smtp_port is not None:
            argv += ["--smtp-port", str(smtp_port)]
        self.process: ManagedProcess = run.process("provider", argv, {"PYTHONUNBUFFERED": "1"})
        self.control = ProviderControl(self.control_url)

    @property
    def address(self) -> str:
        return f"{HOST}:{self.port}"

    @property
    def smtp_address(self) -> str | None:
        return None if self.smtp_port is None else f"{HOST}:{self.smtp_port}"

    @property
    def control_url(self) -> str:
        return f"http://{HOST}:{self.control_port}"

    def restore_ttl(self) -> None:
        """Back to this run's key TTL."""
        self.control.set_ttl(self.settings.key_ttl_s)

    @contextmanager
    def keys_expired(self) -> Iterator[None]:
        """A day later for the block: the provider forgets every completed idempotency key
        (TTL 0), and its services' search indexes hold every record stored so far."""
        self.control.set_ttl(0)
        self.control.catch_up_index()
        try:
            yield
        finally:
            self.restore_ttl()

    def readiness(self) -> Readiness:
        url = f"{self.control_url}/_control/health"
        return Readiness("provider", partial(loopback.answers_ok, url), self.process)
