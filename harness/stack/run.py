"""One run: its id, its directory (every log lives there), and its reaper."""

from __future__ import annotations

import os
import secrets
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.stack.process import ManagedProcess, RunAs
from harness.stack.reaper import Reaper


def default_runs_root() -> Path:
    return Path(os.environ.get("N8N_CHAOS_RUNS", Path.cwd() / ".n8n-chaos" / "runs"))


def new_run_id() -> str:
    """Sortable by start time, unique across concurrent runs on one machine."""
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


def point_latest(run_dir: Path) -> None:
    """Make ``<parent>/latest`` point at ``run_dir`` (convenience only: a concurrent run may
    win the race, and a failure here never fails a run)."""
    latest = run_dir.parent / "latest"
    tmp = run_dir.parent / f".latest-{os.getpid()}"
    try:
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(run_dir.name)
        tmp.replace(latest)  # atomic: readers never see no `latest`
    except OSError:
        tmp.unlink(missing_ok=True)


@dataclass
class RunContext:
    run_id: str
    run_dir: Path
    reaper: Reaper
    # Set by the compose backend: parts then run as containers (harness.stack.docker), as
    # their images decide (user, work dir): (name, argv, env) -> the part.
    process_factory: Callable[[str, Sequence[str], dict[str, str]], ManagedProcess] | None = None

    @classmethod
    def create(
        cls, runs_root: Path | None = None, link_latest: bool = True, run_dir: Path | None = None
    ) -> RunContext:
        """A new run in ``<runs_root>/<run id>``, or in ``run_dir`` when given (then its
        parent's ``latest`` is left to the caller; a taken ``run_dir`` gets a suffix)."""
        run_id = new_run_id()
        if run_dir is None:
            run_dir = (runs_root or default_runs_root()) / run_id
        else:
            link_latest = False
            base, n = run_dir, 1
            while run_dir.exists():
                n += 1
                run_dir = base.with_name(f"{base.name}-{n}")
        (run_dir / "logs").mkdir(parents=True)
        if link_latest:
            point_latest(run_dir)
        return cls(run_id=run_id, run_dir=run_dir, reaper=Reaper(run_id))

    def process(
        self,
        name: str,
        argv: Sequence[str],
        env: dict[str, str],
        *,
        run_as: RunAs | None = None,
        cwd: Path | None = None,
        on_host: bool = False,
        stop_signal: signal.Signals = signal.SIGTERM,
    ) -> ManagedProcess:
        """A part of the run, as its backend runs parts (``process_factory``); with
        ``on_host``, or with no factory, a child process on this machine (the run's reaper
        ends it)."""
        if self.process_factory is not None and not on_host:
            return self.process_factory(name, argv, env)
        return ManagedProcess(
            name=name,
            argv=argv,
            env=env,
            log_path=self.run_dir / "logs" / f"{name}.log",
            run_id=self.run_id,
            registry=self.reaper,
            run_as=run_as,
            cwd=cwd,
            stop_signal=stop_signal,
        )
