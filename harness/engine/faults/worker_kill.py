"""SIGKILL the worker that runs the case's execution: no shutdown hooks, the job's lock lapses."""

from __future__ import annotations

from harness.engine.faults.base import FaultContext, WorkerFault, register


@register("worker_kill")
class WorkerKill(WorkerFault):
    offers = frozenset({"worker_crash"})
    needs_window = frozenset({"in_flight"})  # every window of the worker around the effect
    retry_needs_heal = False  # the live worker serves the retry while this one restarts

    def inject(self, ctx: FaultContext) -> None:
        worker = self.target_worker(ctx)
        worker.kill()
        # The OS's word, not ours: the wait status of the reaped child (native), or the
        # engine's exit code 137 = 128+SIGKILL of the container (compose).
        if (fact := worker.process.kill_proof()) is not None:
            self.facts.append(fact)

    def heal(self, ctx: FaultContext) -> None:
        for worker in list(ctx.stack.workers):
            if not worker.process.running:  # the spare takes its place, if the stack has one
                how = ctx.stack.replace_worker(worker)
                ctx.journal.record("fault.heal", self.name, worker=worker.name, replaced=how)
