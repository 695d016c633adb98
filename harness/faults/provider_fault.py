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
        ctx.stack.require_provider().control.clear_faults()

    def proof(self, ctx: FaultContext) -> str | None:
        # Read before the heal clears the plan: `hits` counts the attempts the fault hit.
        faults = ctx.stack.require_provider().control.faults()
        hits = sum(f.hits for f in faults if f.reference_prefix == ctx.reference)
        return f"provider applied {self.kind} to {hits} attempt(s)" if hits else None


# The HTTP nodes of the bundled workflows time out after 5 s; the provider hangs 12 s.
register("provider_slow")(
    lambda: ProviderFault("provider_slow", FaultKind.COMMIT_THEN_HANG, hang_ms=12000)
)
register("provider_5xx")(lambda: ProviderFault("provider_5xx", FaultKind.COMMIT_THEN_ERROR))
