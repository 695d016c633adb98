"""The run's reaper: nothing a run started outlives it (testcontainers' Ryuk, as a process).

The harness starts ``python -m harness.stack.reaper RUN_ID`` with a pipe on stdin and tells
it, one line each, every process group it starts (``+PGID``) and ends (``-PGID``). When the
pipe closes, because the harness is done or because it died (even by SIGKILL), the reaper
SIGKILLs every group still listed, then every process whose environment carries
``N8N_CHAOS_RUN=RUN_ID``, and exits. It ignores SIGINT so a Ctrl-C in the terminal cannot
take it down before it has done its job. When the owner died without saying goodbye
(``=done``), the reaper also removes the run's Postgres data dir from the temp dir (an owner
that closes normally has removed it as its stacks stopped).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from harness.errors import HarnessBug
from harness.stack.process import RUN_TAG


def tagged_pids(run_id: str) -> list[int]:
    """Pids of live processes whose environment carries this run's tag."""
    needle = f"{RUN_TAG}={run_id}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def sweep(run_id: str, groups: set[int], deadline_s: float = 10.0) -> None:
    """SIGKILL the groups, then every tagged process until none is left (bounded)."""
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
    end = time.monotonic() + deadline_s
    while (left := tagged_pids(run_id)) and time.monotonic() < end:
        for pid in left:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)  # a killed process needs a moment to leave /proc


def remove_run_data(run_id: str) -> None:
    """The run's Postgres data dirs in the temp dir (``n8n-chaos-pg-<run id>-*``), and its
    sockets when a long run dir put them there (``harness.front.attach.protocol.socket_path``)."""
    temp = Path(tempfile.gettempdir())
    for path in temp.glob(f"n8n-chaos-pg-{run_id}-*"):
        shutil.rmtree(path, ignore_errors=True)
    for path in temp.glob(f"n8n-chaos-{run_id}-*.sock"):
        path.unlink(missing_ok=True)


def main(argv: list[str]) -> int:
    run_id = argv[1]
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    groups: set[int] = set()
    owner_closed = False
    containers = False
    for line in sys.stdin:
        op, pgid = line[:1], line[1:].strip()
        if line.strip() == DONE:
            owner_closed = True
            continue
        if line.strip() == CONTAINERS:
            containers = True
            continue
        if not pgid.isdigit():
            continue
        if op == "+":
            groups.add(int(pgid))
        elif op == "-":
            groups.discard(int(pgid))
    sweep(run_id, groups)
    if containers:
        remove_containers(run_id)
    if not owner_closed:
        remove_run_data(run_id)
    return 0


def remove_containers(run_id: str) -> None:
    """The run's compose project, by label (the owner's `docker compose down` never ran, or
    did and this finds nothing)."""
    try:
        from harness.stack.docker.engine import remove_run

        remove_run(run_id)
    except Exception as exc:  # the engine is gone too: nothing more a reaper can do
        print(f"reaper: could not remove the containers of run {run_id}: {exc}", file=sys.stderr)


DONE = "=done"
CONTAINERS = "=containers"


class Reaper:
    """The harness side: starts the reaper process and keeps it informed."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self._lock = threading.Lock()
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "harness.stack.reaper", run_id],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            start_new_session=True,
            text=True,
            env={k: v for k, v in os.environ.items() if k != RUN_TAG},
        )

    @property
    def pid(self) -> int:
        return self._proc.pid

    def started(self, pgid: int) -> None:
        self._send(f"+{pgid}")

    def ended(self, pgid: int) -> None:
        self._send(f"-{pgid}")

    def uses_containers(self) -> None:
        """The run has a compose project: the reaper removes it too (by the run's label)."""
        self._send(CONTAINERS)

    def close(self, timeout_s: float = 10.0) -> None:
        """Let the reaper sweep and exit; wait for it so the sweep is done when we return."""
        if self._proc.stdin is not None and not self._proc.stdin.closed:
            self._send(DONE)
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()

    def _send(self, line: str) -> None:
        assert self._proc.stdin is not None
        with self._lock:  # processes are started from several threads (heals, timers)
            try:
                self._proc.stdin.write(line + "\n")
                self._proc.stdin.flush()
            except (BrokenPipeError, ValueError):
                pass  # the reaper is gone or closed; its sweep already ran


class OwnersReaper(Reaper):
    """The reaper of a run that another process owns (a run attached to the stack of
    `n8n-chaos up`): that process announces every group it starts to its own reaper, so
    this side starts no reaper and is told nothing; it only knows the reaper's pid."""

    def __init__(self, run_id: str, pid: int) -> None:  # no super(): nothing is spawned
        self.run_id = run_id
        self._pid = pid

    @property
    def pid(self) -> int:
        return self._pid

    def started(self, pgid: int) -> None:
        raise HarnessBug(f"an attached run started process group {pgid} itself")

    def ended(self, pgid: int) -> None:
        del pgid

    def uses_containers(self) -> None:
        raise HarnessBug("an attached run never starts containers")

    def close(self, timeout_s: float = 10.0) -> None:
        del timeout_s  # the owner closes its reaper when `down` ends the stack


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
