"""Faults the provider injects into the first attempt for the case's key (its fault plan):
slower than the HTTP node's timeout after committing, or a 500 after committing."""

from __future__ import annotations

from dataclasses import dataclass

from fake_providers.payment import FaultKind
from harness.faults.base import FaultContext, NoAction, register


@dataclass
class ProviderFault(NoAction):
    name: str
    kind: FaultKind
    hang_ms: int = 0

    def prepare(self, ctx: FaultContext) -> None:
        control = ctx.stack.require_provider().control
        fault = control.add_fault(
            self.kind, reference_prefix=ctx.reference, attempts=(1,), hang_ms=self.hang_ms or 30000
        )
        ctx.journal.record(
            "fault.inject", self.name, provider_fault=fault.id, fault_kind=str(self.kind)
        )

    def heal(self, ctx: FaultContext) -> None:
        # The plan's hit counts are the proof; read them before the plan is cleared.
        control = ctx.stack.require_provider().control
        hits = sum(f.hits for f in control.faults() if f.reference_prefix == ctx.reference)
        if hits:
            ctx.journal.record("fault.landed", self.name, provider_hits=hits)
        control.clear_faults()

    def proof(self, ctx: FaultContext) -> str | None:
        self.heal(ctx)  # idempotent; records the hits if the plan is still there
        landed = [e for e in ctx.journal.entries if e.kind == "fault.landed"]
        if not landed:
            return None
        return f"provider applied {self.kind} to {landed[0].data['provider_hits']} attempt(s)"


# The HTTP nodes of the bundled workflows time out after 10 s; the provider hangs 15 s.
register("provider_slow")(
    lambda: ProviderFault("provider_slow", FaultKind.COMMIT_THEN_HANG, hang_ms=15000)
)
register("provider_5xx")(lambda: ProviderFault("provider_5xx", FaultKind.COMMIT_THEN_ERROR))
