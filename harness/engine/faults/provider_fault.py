"""Faults the provider applies to the workflow's effect request itself (its fault plan, for
the case's reference and the workflow's effect kind only: a lookup never meets them).

- response_drop: commit, then close the connection without an answer (the answer is lost);
- provider_slow: commit, then hang 15 s, past the HTTP node's 10 s timeout (a workflow whose
                 calls wait longer, as most service nodes do, is answered in time);
- provider_5xx:  commit, then answer 500 (stored with its key: a retry with the key gets it
                 again, as Stripe replays a 500 once its endpoint began executing);
- provider_5xx_before: the first attempt fails with 500 before committing, before the service
                 began its work (its edge briefly failing, the commonest fault in production),
                 so nothing is saved for its key; later attempts go through. A
                 workflow that marks the event done before the effect (a claim first) answers
                 the sender's retry "done" and never makes it: LOST;
- provider_down: every attempt fails with 500 before committing; one delivery, no sender
                 retry: n8n's own retries run out and the workflow's Error Workflow must run.

The fault stays planted until an effect request met it (``met``), also when the workflow
acknowledged the sender first; the provider's hit count is the proof.
"""

from __future__ import annotations

from contextlib import suppress
from dataclasses import dataclass
from typing import ClassVar

from fake_providers.payment import ControlRequestRejected, FaultKind
from harness.engine.faults.base import FaultContext, NoAction, register


@dataclass
class ProviderFault(NoAction):
    kind: FaultKind
    hang_ms: int = 0
    every_attempt: bool = False
    loses_answer: ClassVar[bool] = True
    offers: ClassVar[frozenset[str]] = frozenset({"provider_fault"})
    # The provider's fault plan is keyed by the case's reference: other cases never meet it.
    shares_stack: ClassVar[bool] = True

    def __post_init__(self) -> None:
        self.hits = 0

    def prepare(self, ctx: FaultContext) -> None:
        control = ctx.stack.require_provider().control
        fault = control.add_fault(
            self.kind,
            reference_prefix=ctx.reference,
            effect=ctx.effect,
            attempts=None if self.every_attempt else (1,),
            hang_ms=self.hang_ms or 30000,
        )
        ctx.journal.record(
            "fault.inject", self.name, provider_fault=fault.id, fault_kind=str(self.kind)
        )

    def met(self, ctx: FaultContext) -> bool:
        control = ctx.stack.require_provider().control
        hits = sum(f.hits for f in control.faults() if f.reference_prefix == ctx.reference)
        self.hits = max(self.hits, hits)
        return self.hits > 0

    def heal(self, ctx: FaultContext) -> None:
        self.met(ctx)  # the plan's hit counts are the proof: read them before clearing it
        control = ctx.stack.require_provider().control
        for fault in control.faults():  # this case's rules only: others may share the stack
            if fault.reference_prefix == ctx.reference:
                with suppress(ControlRequestRejected):  # a concurrent heal removed it first
                    control.remove_fault(fault.id)

    def proof(self, ctx: FaultContext) -> str | None:
        del ctx
        if not self.hits:
            return None
        return f"the provider applied {self.kind} to {self.hits} effect attempt(s)"


@dataclass
class ProviderDown(ProviderFault):
    offers: ClassVar[frozenset[str]] = frozenset({"provider_fault", "refuses_effect"})
    # n8n's own retries must be all there is: a sender retry would hide the Error Workflow.
    needs_plan: ClassVar[frozenset[str]] = frozenset({"no_sender_retry"})
    needs: ClassVar[frozenset[str]] = frozenset({"error_workflow"})
    loses_answer: ClassVar[bool] = False
    effect_possible: ClassVar[bool] = False


@dataclass
class ProviderBefore(ProviderFault):
    # Nothing committed: a naive workflow's retry makes the one effect, no duplicate.
    loses_answer: ClassVar[bool] = False


HANG_S = 15.0  # past the bundled HTTP nodes' 10 s timeout


@dataclass
class ProviderSlow(ProviderFault):
    # The answer is lost only where the workflow's call gives up before the hang ends.
    loses_answer_needs: ClassVar[frozenset[str]] = frozenset({"call_timeout"})


register(
    "provider_slow", lambda: ProviderSlow(FaultKind.COMMIT_THEN_HANG, hang_ms=int(HANG_S * 1000))
)
register("provider_5xx", lambda: ProviderFault(FaultKind.COMMIT_THEN_ERROR))
register("provider_5xx_before", lambda: ProviderBefore(FaultKind.ERROR_BEFORE_COMMIT))
register("response_drop", lambda: ProviderFault(FaultKind.COMMIT_THEN_CLOSE))
register("provider_down", lambda: ProviderDown(FaultKind.ERROR_BEFORE_COMMIT, every_attempt=True))
