"""SIGKILL n8n main while a synchronous webhook is in flight; the caller's connection dies.

``ProcessKill`` is the shape of every such fault: which n8n process dies is its one choice
(``process``); the kernel's wait status (or the container's exit code) is the proof.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.engine.faults.base import FaultContext, NoAction, register

if TYPE_CHECKING:
    from harness.stack.n8n import N8nProcess
    from harness.stack.stack import Stack


class ProcessKill(NoAction):
    """SIGKILL one n8n process at the crash point; the heal restarts it."""

    needs_window = frozenset({"response_held"})
    loses_answer = True

    def __init__(self) -> None:
        self.fact: str | None = None

    def process(self, stack: Stack) -> N8nProcess:
        raise NotImplementedError

    def inject(self, ctx: FaultContext) -> None:
        target = self.process(ctx.stack)
        ctx.journal.record("fault.inject", self.name, process=target.name, pid=target.pid)
        target.kill()
        # The wait status (native) or the container's exit code 137 (compose).
        self.fact = target.process.kill_proof()

    def heal(self, ctx: FaultContext) -> None:
        target = self.process(ctx.stack)
        if not target.process.running:
            took = target.restart()
            ctx.journal.record("fault.heal", self.name, process=target.name, ready_s=took)

    def proof(self, ctx: FaultContext) -> str | None:
        del ctx
        return self.fact


@register("main_kill")
class MainKill(ProcessKill):
    offers = frozenset({"main_crash"})

    def process(self, stack: Stack) -> N8nProcess:
        return stack.main
