"""operator_retry: one delivery, no sender retry; once the crash settled, an operator presses
"retry" on the failed execution through n8n's public API; if that does not complete the
work, the operator re-sends the event by hand.

Proof: n8n's answer to the retry request (the new execution's id, or its refusal).
What n8n does (2.40.7): an execution whose worker died after the commit ends as ``error``
(the stall sweep gave its job up) or ``crashed`` (a restarted worker's recovery marked it), and
nothing re-runs it. A retry of the ``error`` one, the matrix's usual origin, ends at once with
the same error and charges nothing, so the re-send by hand is what the workflow meets; a retry
of a ``crashed`` one (probe ``concurrent_operator_retry``) or of a node's failure runs the
workflow again, charge included. The case line names each execution's end either way.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, ClassVar

from harness.engine.deliveries.base import Plan, register, release_together
from harness.errors import HarnessError

if TYPE_CHECKING:
    from harness.engine.contract import CaseWorld
    from harness.engine.workload import BackgroundDelivery

SETTLE_S = 60.0
# The operators' calls are released together; each waits this long for the others.
BARRIER_S = 30.0


@register("operator_retry")
class OperatorRetry(Plan):
    offers = frozenset({"no_sender_retry", "operator"})
    accepts = (frozenset({"worker_crash", "response_held"}),)
    resends = True
    operators: ClassVar[int] = 1  # how many operators press "retry" at the same instant

    def start(self, run: CaseWorld) -> BackgroundDelivery:
        return run.start_delivery(retry=False)

    def after_settle(self, run: CaseWorld) -> bool:
        failed = [e for e in run.executions() if e["status"] in ("error", "crashed")]
        if failed:
            answers = self._press_retry(run, str(failed[0]["id"]))
            self.fact = "; ".join(answers)
            run.settle(SETTLE_S, "operator retry")
        retries = [e for e in run.executions() if e["mode"] == "retry"]
        if not any(e["status"] == "success" for e in retries):
            run.journal.record(
                "finding",
                "operator retry did not complete the work",
                retries=[(e["id"], e["status"]) for e in retries],
                why=run.failures(retries),  # e.g. n8n's "failed to be processed too many times"
            )
            run.deliver(delivery="operator")
            self.fact = (self.fact or "no failed execution to retry") + "; re-sent by hand"
        return True

    def _press_retry(self, run: CaseWorld, target: str) -> list[str]:
        """Every operator's call, released together; n8n's answer to each, in call order."""
        answers = [""] * self.operators

        def press(operator: int) -> None:
            try:
                retried = run.retry_execution(target)
                answers[operator] = f"n8n started retry execution {retried.get('id')} of {target}"
                kind, what, extra = (
                    "delivery.operator",
                    "api retry",
                    {"new_execution": retried.get("id")},
                )
            except HarnessError as exc:  # a refusal is n8n's answer too: kept as evidence
                answers[operator] = f"n8n refused the retry of {target}: {str(exc)[:200]}"
                kind, what, extra = "finding", "operator retry refused", {"error": str(exc)[:300]}
            run.journal.record(kind, what, operator=operator + 1, execution=target, **extra)

        release_together([partial(press, i) for i in range(self.operators)], BARRIER_S)
        return [a or f"operator {i + 1}'s call got no answer" for i, a in enumerate(answers)]
