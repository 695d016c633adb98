"""Freeze the worker that runs the execution (a GC pause, a frozen VM), thaw it on heal.

Native: SIGSTOP/SIGCONT; compose: the container's cgroup freezer (docker pause/unpause).

While it is stopped its Bull lock is not renewed, so a live worker's stall sweep may fail
the job although the paused worker will go on with it once resumed.
"""

from __future__ import annotations

import time

from harness.engine.faults.base import FaultContext, WorkerFault, register

STOP_CONFIRM_S = 2.0


@register("worker_pause")
class WorkerPause(WorkerFault):
    offers = frozenset({"worker_freeze"})
    needs_window = frozenset({"response_held"})

    def inject(self, ctx: FaultContext) -> None:
        worker = self.target_worker(ctx)
        worker.pause()
        # SIGSTOP is delivered asynchronously: ask the kernel until it says stopped (state T
        # in /proc; for a container, the engine's Paused and the cgroup freezer's state).
        deadline = time.monotonic() + STOP_CONFIRM_S
        while time.monotonic() < deadline:
            if (fact := worker.process.pause_proof()) is not None:
                self.facts.append(fact)
                return
            time.sleep(0.01)
        ctx.journal.record("fault.unconfirmed", self.name, worker=worker.name)

    def heal(self, ctx: FaultContext) -> None:
        for worker in ctx.stack.workers:
            if worker.process.paused:
                worker.resume()
                ctx.journal.record("fault.heal", self.name, worker=worker.name)
