"""The real Toxiproxy server process; every link a fault may cut goes through it."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from harness import loopback
from harness.stack.ports import HOST
from harness.stack.process import ManagedProcess
from harness.stack.readiness import Readiness
from harness.stack.run import RunContext


class ToxiproxyServer:
    def __init__(self, binary: Path, run: RunContext, port: int, seed: int = 0) -> None:
        self.port = port
        self.api_url = f"http://{HOST}:{port}"
        self.process: ManagedProcess = run.process(
            "toxiproxy",
            # -seed makes toxicity rolls and jitter repeatable; it is written in the run state.
            [str(binary), "-host", HOST, "-port", str(port), "-seed", str(seed)],
            env={},
        )

    def readiness(self) -> Readiness:
        url = f"{self.api_url}/version"
        return Readiness("toxiproxy", partial(loopback.answers_ok, url), self.process)
