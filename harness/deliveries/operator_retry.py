"""operator_retry: one delivery, no sender retry; once the crash settled, an operator presses
"retry" on the failed execution through n8n's public API; if that does not complete the
work, the operator re-sends the event by hand.

Proof: n8n's answer to the retry request (the new execution's id, or its refusal).
Finding (n8n 2.40.7): the retry of an execution whose worker died ends at once as `error`
without running a node.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.deliveries.base import Plan, register
from harness.errors import HarnessError

if TYPE_CHECKING:
    from harness.contract import CaseWorld
    from harness.workload import BackgroundDelivery

SETTLE_S = 60.0


@register("operator_retry")
class OperatorRetry(Plan):
    offers = frozenset({"no_sender_retry", "operator"})
    accepts = (frozenset({"worker_crash", "response_held"}),)
    resends = True

    def start(self, run: CaseWorld) -> BackgroundDelivery:
        return run.start_delivery(retry=False)

    def after_settle(self, run: CaseWorld) -> bool:
        failed = [e for e in run.executions() if e["status"] in ("error", "crashed")]
        if failed:
            target = failed[0]["id"]
            try:
                retried = run.retry_execution(target)
                self.fact = f"n8n started retry execution {retried.get('id')} of {target}"
                run.journal.record(
                    "delivery.operator",
                    "api retry",
                    execution=target,
                    new_execution=retried.get("id"),
                )
            except HarnessError as exc:  # a refusal is n8n's answer too: kept as evidence
                self.fact = f"n8n refused the retry of {target}: {str(exc)[:200]}"
                run.journal.record(
                    "finding", "operator retry refused", execution=target, error=str(exc)[:300]
                )
            run.settle(SETTLE_S, "operator retry")
        retries = [e for e in run.executions() if e["mode"] == "retry"]
        if not any(e["status"] == "success" for e in retries):
            run.journal.record(
                "finding",
                "operator retry did not complete the work",
                retries=[(e["id"], e["status"]) for e in retries],
            )
            run.deliver(delivery="operator")
            self.fact = (self.fact or "no failed execution to retry") + "; re-sent by hand"
        return True
