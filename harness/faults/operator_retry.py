"""A worker dies in the window, the sender does not retry, and an operator presses "retry"
on the failed (or crashed) execution through n8n's public API: a new execution re-runs the
failed node with the same input."""

from __future__ import annotations

from harness.faults.base import FaultContext, register
from harness.faults.worker_kill import WorkerKill
from harness.workload import Delivery


@register("operator_retry")
class OperatorRetry(WorkerKill):
    name = "operator_retry"
    delivery = Delivery.OPERATOR_RETRY

    def proof(self, ctx: FaultContext) -> str | None:
        killed = super().proof(ctx)
        retried = [e for e in ctx.journal.entries if e.kind == "delivery.extra"]
        if killed is None or not retried:
            return None
        return f"{killed}; operator retry: {retried[0].data}"
