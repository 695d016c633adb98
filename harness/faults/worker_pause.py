"""SIGSTOP the worker that runs the execution (a GC pause, a frozen VM), SIGCONT on heal.

While it is stopped its Bull lock is not renewed, so a live worker's stall sweep may fail
the job although the paused worker will go on with it once resumed.
"""

from __future__ import annotations

import time
from pathlib import Path

from harness.faults.base import FaultContext, NoAction, register

STOP_CONFIRM_S = 2.0


def _proc_state(pid: int | None) -> str | None:
    """The kernel's state letter of a process (T = stopped), or None if it is gone."""
    if pid is None:
        return None
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[0]


@register("worker_pause")
class WorkerPause(NoAction):
    name = "worker_pause"
    crashpoints = ("after_commit",)
    needs = frozenset({"second_worker"})
    loses_answer = True

    def __init__(self) -> None:
        self.stopped: list[str] = []

    def inject(self, ctx: FaultContext) -> None:
        worker = ctx.stack.workers[ctx.target()]
        ctx.journal.record("fault.inject", self.name, worker=worker.name, pid=worker.pid)
        worker.pause()
        # SIGSTOP is delivered asynchronously: ask the kernel until it says stopped (T).
        deadline = time.monotonic() + STOP_CONFIRM_S
        while time.monotonic() < deadline:
            state = _proc_state(worker.pid)
            if state == "T":
                self.stopped.append(f"{worker.name} (pid {worker.pid}) in state T")
                return
            time.sleep(0.01)
        ctx.journal.record("fault.unconfirmed", self.name, proc_state=_proc_state(worker.pid))

    def heal(self, ctx: FaultContext) -> None:
        for worker in ctx.stack.workers:
            if worker.process.paused:
                worker.resume()
                ctx.journal.record("fault.heal", self.name, worker=worker.name)

    def proof(self, ctx: FaultContext) -> str | None:
        del ctx
        return f"/proc showed {', '.join(self.stopped)}" if self.stopped else None
