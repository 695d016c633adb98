"""SIGSTOP the worker that runs the execution (a GC pause, a frozen VM), SIGCONT on heal.

While it is stopped its Bull lock is not renewed, so a live worker's stall sweep may fail
the job although the paused worker will go on with it once resumed.
"""

from __future__ import annotations

from harness.faults.base import FaultContext, NoAction, register


@register("worker_pause")
class WorkerPause(NoAction):
    name = "worker_pause"

    def inject(self, ctx: FaultContext) -> None:
        worker = ctx.stack.workers[ctx.target()]
        ctx.journal.record("fault.inject", self.name, worker=worker.name, pid=worker.pid)
        worker.pause()

    def heal(self, ctx: FaultContext) -> None:
        for worker in ctx.stack.workers:
            if worker.process.paused:
                worker.resume()
                ctx.journal.record("fault.heal", self.name, worker=worker.name)
