"""Faults on the delivery side: the same event arrives again, or is retried by an operator.

They touch no process; the crash point says when the extra delivery happens.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.faults.base import FaultContext, NoAction, register
from harness.workload import Delivery


@dataclass
class DeliveryFault(NoAction):
    name: str
    delivery: Delivery = Delivery.SENDER_RETRY

    def proof(self, ctx: FaultContext) -> str | None:
        entries = [e for e in ctx.journal.entries if e.kind == "delivery.extra"]
        return f"{entries[0].what} at {entries[0].at:.3f}" if entries else None


register("concurrent_duplicates")(
    lambda: DeliveryFault("concurrent_duplicates", Delivery.CONCURRENT)
)
register("late_redelivery")(lambda: DeliveryFault("late_redelivery", Delivery.REDELIVER))
