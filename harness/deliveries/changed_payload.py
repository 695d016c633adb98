"""changed_payload: the event is delivered, then the same business key arrives again with
another amount (a reused key, a different request). The promise: one commit, of the
original; the sender gets a definite rejection for the changed one (the oracle: a 2xx to it
is CONTRADICTED); the workflow's ledger says so.

Needs a numeric ``amount`` field in the trigger body.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.deliveries.base import Plan, register

if TYPE_CHECKING:
    from harness.case_run import CaseRun

CHANGED = "changed"  # the delivery name the oracle reads as "another payload"


@register("changed_payload")
class ChangedPayload(Plan):
    name = "changed_payload"
    faults = ("no_fault",)
    needs = frozenset({"amount"})
    resends = True

    def after_settle(self, run: CaseRun) -> bool:
        first = [a for a in run.history.attempts if a.delivery == "d1"]
        if not first or first[-1].outcome != "ok":
            return False
        amount = run.body["amount"]
        changed = {**run.body, "amount": amount + 100}
        run.journal.record("delivery.changed", "amount", original=amount, changed=amount + 100)
        run.deliver(changed, delivery=CHANGED)
        self.fact = f"the same key sent again with amount {amount + 100} instead of {amount}"
        return True
