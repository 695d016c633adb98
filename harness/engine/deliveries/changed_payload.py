"""changed_payload: the event is delivered, then the same business key arrives again with
another amount (a reused key, a different request). The promise: one commit, of the
original; the sender gets a definite rejection for the changed one (the oracle: a 2xx to it
is CONTRADICTED); the workflow's ledger says so.

Needs a numeric ``amount`` field in the trigger body.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.engine.deliveries.base import QuietResend, first_answered_ok, register

if TYPE_CHECKING:
    from harness.engine.contract import CaseWorld


@register("changed_payload")
class ChangedPayload(QuietResend):
    needs = frozenset({"amount"})

    def after_settle(self, run: CaseWorld) -> bool:
        if first_answered_ok(run) is None:
            return False
        amount = run.body["amount"]
        changed = {**run.body, "amount": amount + 100}
        run.journal.record("delivery.changed", "amount", original=amount, changed=amount + 100)
        run.deliver(changed, delivery="changed")
        self.fact = f"the same key sent again with amount {amount + 100} instead of {amount}"
        return True
