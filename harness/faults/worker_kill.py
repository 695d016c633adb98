"""SIGKILL the worker that runs the case's execution: no shutdown hooks, the job's lock lapses."""

from __future__ import annotations

from harness.faults.base import FaultContext, NoAction, register


@register("worker_kill")
class WorkerKill(NoAction):
    name = "worker_kill"

    def inject(self, ctx: FaultContext) -> None:
        worker = ctx.stack.workers[ctx.target()]
        ctx.journal.record("fault.inject", self.name, worker=worker.name, pid=worker.pid)
        worker.kill()

    def heal(self, ctx: FaultContext) -> None:
        for worker in ctx.stack.workers:
            if not worker.process.running:
                took = worker.restart()
                ctx.journal.record("fault.heal", self.name, worker=worker.name, ready_s=took)
