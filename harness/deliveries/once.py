"""once: one delivery, never retried by the sender (n8n's own retries are all there is)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.deliveries.base import Plan, register

if TYPE_CHECKING:
    from harness.case_run import CaseRun
    from harness.workload import BackgroundDelivery


@register("once")
class Once(Plan):
    name = "once"

    def __init__(self) -> None:
        super().__init__()
        self.fact = "one delivery, no sender retry"

    def start(self, run: CaseRun) -> BackgroundDelivery:
        return run.start_delivery(retry=False)
