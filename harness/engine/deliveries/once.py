"""once: one delivery, never retried by the sender (n8n's own retries are all there is)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.engine.deliveries.base import Plan, register

if TYPE_CHECKING:
    from harness.engine.contract import CaseWorld
    from harness.engine.workload import BackgroundDelivery


@register("once")
class Once(Plan):
    offers = frozenset({"no_sender_retry"})
    # Only where n8n's own retries decide (a sender retry would change nothing else).
    accepts = (frozenset({"refuses_effect"}),)
    shares_stack = True  # the case's own deliveries (and barrier) only

    def __init__(self) -> None:
        super().__init__()
        self.fact = "one delivery, no sender retry"

    def start(self, run: CaseWorld) -> BackgroundDelivery:
        return run.start_delivery(retry=False)
