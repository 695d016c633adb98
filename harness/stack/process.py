"""A child process that belongs to one run: own process group, log file, signals.

Every process is started in a new session (so ``killpg`` also ends its children, e.g. n8n's
task runners), carries ``N8N_CHAOS_RUN=<run id>`` in its environment (so a sweep can find it
even if its group is gone), gets ``PR_SET_PDEATHSIG`` (so it dies with its parent), and is
announced to the run's reaper (so it dies even when the parent was SIGKILLed).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Protocol

from harness.errors import ServiceExited

_PR_SET_PDEATHSIG = 1
RUN_TAG = "N8N_CHAOS_RUN"


class ProcessRegistry(Protocol):
    """Who is told about every process group we start and end (the reaper)."""

    def started(self, pgid: int) -> None: ...

    def ended(self, pgid: int) -> None: ...


@dataclass(frozen=True)
class RunAs:
    """An unprivileged identity to drop to before exec (Postgres refuses to run as root)."""

    uid: int
    gid: int


def child_setup(run_as: RunAs | None, die_with_parent: bool = True) -> Callable[[], None]:
    def setup() -> None:
        if run_as is not None:
            os.setgroups([])
            os.setgid(run_as.gid)
            os.setuid(run_as.uid)
        if die_with_parent:
            # After setuid: a credential change clears the parent-death signal.
            libc = ctypes.CDLL("libc.so.6", use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)

    return setup


@dataclass
class ManagedProcess:
    """One long-running service process; ``start`` may be called again after it ended."""

    name: str
    argv: Sequence[str]
    env: dict[str, str]
    log_path: Path
    run_id: str
    registry: ProcessRegistry
    cwd: Path | None = None
    run_as: RunAs | None = None
    stop_signal: signal.Signals = signal.SIGTERM  # what asks it to shut down cleanly
    last_returncode: int | None = field(default=None, init=False)
    paused: bool = field(default=False, init=False)
    _popen: subprocess.Popen[bytes] | None = field(default=None, init=False, repr=False)

    # -- lifecycle --------------------------------------------------------------------
    def start(self) -> None:
        if self.running:
            return
        with self._start_log(f"{self.name}: {' '.join(self.argv)}") as log:
            if os.sep in self.argv[0] and not os.access(self.argv[0], os.X_OK):
                raise ServiceExited(
                    self.name,
                    f"cannot start: {self.argv[0]} is missing or not executable; "
                    "reinstall the parts with `n8n-chaos install`",
                )
            self._popen = subprocess.Popen(
                list(self.argv),
                env={**self.env, RUN_TAG: self.run_id},
                cwd=self.cwd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                # The parent-death signal fires when the forking *thread* ends, so only a
                # start from the main thread gets it (a fault's timer thread restarts
                # processes too); the reaper covers every process either way.
                preexec_fn=child_setup(
                    self.run_as, threading.current_thread() is threading.main_thread()
                ),
            )
        self.registry.started(self._popen.pid)

    @contextlib.contextmanager
    def _start_log(self, what: str) -> Iterator[BinaryIO]:
        """The log, opened for a start and headed by a line that says what starts."""
        self.last_returncode = None
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            log.write(f"\n=== n8n-chaos: starting {what}\n".encode())
            log.flush()
            yield log

    def stop(self, grace_s: float = 10.0) -> None:
        """``stop_signal`` to the group, then SIGKILL after ``grace_s``; always reaps it."""
        popen = self._popen
        if popen is None:
            return
        if popen.poll() is None:
            self._signal_group(self.stop_signal)
            self._signal_group(signal.SIGCONT)  # a paused process cannot act on it
            with contextlib.suppress(subprocess.TimeoutExpired):
                popen.wait(timeout=grace_s)
        self._signal_group(signal.SIGKILL)  # leftovers of the group, e.g. task runners
        self._reap(popen)

    def kill(self) -> None:
        """SIGKILL, the crash: no shutdown hooks run. The group is reaped."""
        popen = self._popen
        if popen is None:
            return
        self._signal_group(signal.SIGKILL)
        self._reap(popen)

    def pause(self) -> None:
        self._signal_group(signal.SIGSTOP)
        self.paused = self._popen is not None

    def resume(self) -> None:
        self._signal_group(signal.SIGCONT)
        self.paused = False

    def restart(self) -> None:
        self.stop()
        self.start()

    # -- state ------------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        return self._popen.pid if self._popen is not None else None

    @property
    def running(self) -> bool:
        return self._popen is not None and self._popen.poll() is None

    @property
    def returncode(self) -> int | None:
        return self._popen.poll() if self._popen is not None else None

    # -- the outside facts a fault's proof cites (a container answers with its own) ----
    def kill_proof(self) -> str | None:
        """The kernel's word that the last end was a SIGKILL: the reaped wait status."""
        if self.last_returncode == -signal.SIGKILL:
            return f"{self.name} exited by SIGKILL (wait status)"
        return None

    def pause_proof(self) -> str | None:
        """The kernel's word that the process is stopped: state T in /proc."""
        pid = self.pid
        if pid is None:
            return None
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return None
        if stat.rsplit(")", 1)[1].split()[0] != "T":
            return None
        return f"{self.name} (pid {pid}) in state T (/proc)"

    def ensure_running(self) -> None:
        """Raise ServiceExited with the log tail if the process has ended."""
        code = self.returncode if self._popen is not None else self.last_returncode
        if code is not None:
            raise ServiceExited(self.name, f"exited with code {code}", self.log_tail())

    def log_size(self) -> int:
        try:
            return self.log_path.stat().st_size
        except OSError:
            return 0

    def log_since(self, offset: int) -> str:
        """What the process logged after byte ``offset`` (see ``log_size``)."""
        try:
            with self.log_path.open("rb") as log:
                log.seek(offset)
                return log.read().decode(errors="replace")
        except OSError:
            return ""

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def _reap(self, popen: subprocess.Popen[bytes]) -> None:
        # Forget the pid once reaped: signalling it later could hit a recycled pid.
        self.last_returncode = popen.wait()
        self.paused = False
        self.registry.ended(popen.pid)
        self._popen = None

    def _signal_group(self, sig: signal.Signals) -> None:
        if self._popen is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._popen.pid, sig)
