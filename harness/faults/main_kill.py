"""SIGKILL n8n main while a synchronous webhook is in flight; the caller's connection dies."""

from __future__ import annotations

from harness.faults.base import FaultContext, NoAction, register


@register("main_kill")
class MainKill(NoAction):
    offers = frozenset({"main_crash"})
    needs_window = frozenset({"response_held"})
    loses_answer = True

    def __init__(self) -> None:
        self.fact: str | None = None

    def inject(self, ctx: FaultContext) -> None:
        main = ctx.stack.main
        ctx.journal.record("fault.inject", self.name, pid=main.pid)
        main.kill()
        # The wait status (native) or the container's exit code 137 (compose).
        self.fact = main.process.kill_proof()

    def heal(self, ctx: FaultContext) -> None:
        if not ctx.stack.main.process.running:
            took = ctx.stack.main.restart()
            ctx.journal.record("fault.heal", self.name, ready_s=took)

    def proof(self, ctx: FaultContext) -> str | None:
        del ctx
        return self.fact
