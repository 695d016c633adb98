"""The control case: no fault at all. It must PASS for every workflow that promises anything."""

from __future__ import annotations

from harness.engine.faults.base import FaultContext, NoAction, register


@register("no_fault")
class NoFault(NoAction):
    offers = frozenset({"quiet"})
    shares_stack = True

    def proof(self, ctx: FaultContext) -> str | None:
        del ctx
        return "nothing to land"
