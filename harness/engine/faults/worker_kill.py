"""SIGKILL the worker that runs the case's execution: no shutdown hooks, the job's lock lapses."""

from __future__ import annotations

from harness.engine.faults.base import FaultContext, NoAction, register


@register("worker_kill")
class WorkerKill(NoAction):
    offers = frozenset({"worker_crash"})
    needs_window = frozenset({"in_flight"})  # every window of the worker around the effect
    needs = frozenset({"second_worker"})  # a live worker's stall sweep fails the dead one's job
    loses_answer = True
    retry_needs_heal = False  # the live worker serves the retry while this one restarts

    def __init__(self) -> None:
        self.killed: list[str] = []

    def inject(self, ctx: FaultContext) -> None:
        worker = ctx.stack.workers[ctx.target()]
        ctx.journal.record("fault.inject", self.name, worker=worker.name, pid=worker.pid)
        worker.kill()
        # The OS's word, not ours: the wait status of the reaped child (native), or the
        # engine's exit code 137 = 128+SIGKILL of the container (compose).
        if (fact := worker.process.kill_proof()) is not None:
            self.killed.append(fact)

    def heal(self, ctx: FaultContext) -> None:
        for worker in ctx.stack.workers:
            if not worker.process.running:
                took = worker.restart()
                ctx.journal.record("fault.heal", self.name, worker=worker.name, ready_s=took)

    def proof(self, ctx: FaultContext) -> str | None:
        del ctx
        return ", ".join(self.killed) if self.killed else None
