"""Redis 7 (the Debian ``redis-server``) on its own port, no persistence."""

from __future__ import annotations

from pathlib import Path

import redis

from harness.stack.ports import HOST
from harness.stack.process import ManagedProcess
from harness.stack.readiness import Readiness
from harness.stack.run import RunContext


class RedisServer:
    def __init__(self, binary: Path, run: RunContext, port: int) -> None:
        self.port = port
        data_dir = run.run_dir / "redis"
        data_dir.mkdir(exist_ok=True)
        self.process: ManagedProcess = run.process(
            "redis",
            [
                str(binary),
                "--bind",
                HOST,
                "--port",
                str(port),
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(data_dir),
                "--protected-mode",
                "yes",
            ],
            env={},
        )

    def url(self, port: int | None = None) -> str:
        return f"redis://{HOST}:{port or self.port}/0"

    def readiness(self) -> Readiness:
        def probe() -> bool:
            client = redis.Redis(host=HOST, port=self.port, socket_timeout=2)
            try:
                return bool(client.ping())
            finally:
                client.close()

        return Readiness("redis", probe, self.process)
