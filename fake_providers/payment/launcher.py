"""Starting the provider as a child process and reading its real ports from the READY line.

Used by the test fixture and the benchmark; the harness may use it or read READY itself.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from ..errors import FakeProviderError
from .config import HOST, READY_PREFIX


class ProviderStartError(FakeProviderError):
    """The provider exited or stayed silent instead of printing its READY line."""


@dataclass
class ProviderProcess:
    process: subprocess.Popen[str]
    port: int
    control_port: int
    db_path: Path
    log_path: Path
    _stdout_lines: queue.Queue[str | None] = field(repr=False, default_factory=queue.Queue)
    smtp_port: int = 0  # the mail fake's SMTP port (127.0.0.1)

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def control_url(self) -> str:
        return f"http://{HOST}:{self.control_port}"

    def stop(self, timeout: float = 10.0) -> int:
        """SIGTERM, then SIGKILL if it does not exit within `timeout`; returns the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
        return self._reap()

    def kill(self) -> int:
        """SIGKILL: a crash, no graceful shutdown."""
        if self.process.poll() is None:
            self.process.kill()
        return self._reap()

    def _reap(self) -> int:
        code = self.process.wait()
        if self.process.stdin is not None:
            self.process.stdin.close()
        return code

    def __enter__(self) -> ProviderProcess:
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()


def launch(
    db_path: Path,
    *,
    port: int = 0,
    control_port: int = 0,
    smtp_port: int = 0,
    key_ttl_seconds: float | None = None,
    lenient: bool = False,
    log_path: Path | None = None,
    ready_timeout: float = 15.0,
    stop_with_parent: bool = True,
) -> ProviderProcess:
    """Start `python -m fake_providers.payment` and wait (bounded) for its READY line.

    With `stop_with_parent` the child's stdin is a pipe from this process; when this process
    dies (even by SIGKILL) the pipe closes and the provider shuts down on its own.
    stderr goes to `log_path` (default: the db path with suffix .log)."""
    log_path = log_path or db_path.with_suffix(".log")
    command = [
        sys.executable,
        "-m",
        "fake_providers.payment",
        "--port",
        str(port),
        "--control-port",
        str(control_port),
        "--smtp-port",
        str(smtp_port),
        "--db",
        str(db_path),
    ]
    if key_ttl_seconds is not None:
        command += ["--key-ttl", str(key_ttl_seconds)]
    if lenient:
        command.append("--lenient")
    if stop_with_parent:
        command.append("--stop-on-stdin-eof")
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            stdin=subprocess.PIPE if stop_with_parent else subprocess.DEVNULL,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    lines: queue.Queue[str | None] = queue.Queue()
    assert process.stdout is not None
    # A reader thread keeps draining stdout after READY, so the child never blocks on a pipe.
    threading.Thread(target=_pump, args=(process.stdout, lines), daemon=True).start()
    try:
        ports = _await_ready(lines, ready_timeout)
    except ProviderStartError as exc:
        if process.poll() is None:
            process.kill()
        process.wait()
        if process.stdin is not None:
            process.stdin.close()
        tail = log_path.read_text(errors="replace")[-2000:]
        raise ProviderStartError(f"{exc}; exit code {process.returncode}; log:\n{tail}") from exc
    return ProviderProcess(
        process,
        ports["port"],
        ports["control_port"],
        db_path,
        log_path,
        lines,
        smtp_port=ports["smtp_port"],
    )


def _pump(stream: IO[str], lines: queue.Queue[str | None]) -> None:
    with stream:
        for line in stream:
            lines.put(line.rstrip("\n"))
    lines.put(None)  # EOF: the process closed stdout, normally because it exited


def _await_ready(lines: queue.Queue[str | None], timeout: float) -> dict[str, int]:
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ProviderStartError(f"no READY line within {timeout} s")
        try:
            line = lines.get(timeout=remaining)
        except queue.Empty:
            continue
        if line is None:
            raise ProviderStartError("provider exited before READY")
        if line.startswith(READY_PREFIX):
            document = json.loads(line[len(READY_PREFIX) :])
            return {
                "port": int(document["port"]),
                "control_port": int(document["control_port"]),
                "smtp_port": int(document.get("smtp_port", 0)),
            }
