"""changed_payload: the event is delivered, then the same business key arrives again with
another amount (a reused key, a different request). The promise: one commit, of the
original; the sender gets a definite rejection for the changed one (the oracle: a 2xx to it
is CONTRADICTED); the workflow's ledger says so.

Needs a numeric ``amount`` field in the trigger body: a number, or a string of one as Shopify
and PayPal send amounts ("49.90", changed to "149.90").
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from harness.engine.deliveries.base import QuietResend, first_answered_ok, register

if TYPE_CHECKING:
    from harness.engine.contract import CaseWorld


_DECIMAL = re.compile(r"-?\d+(\.\d+)?")
RAISE_BY = 100


def numeric(amount: Any) -> bool:
    """An amount the plan can change: a number, or a decimal number as a string."""
    if isinstance(amount, str):
        return _DECIMAL.fullmatch(amount) is not None
    return isinstance(amount, int | float) and not isinstance(amount, bool)


def raised(amount: int | float | str) -> int | float | str:
    """The amount RAISE_BY more, of the same type (a string keeps its decimals)."""
    if isinstance(amount, str):
        return str(Decimal(amount) + RAISE_BY)
    return amount + RAISE_BY


@register("changed_payload")
class ChangedPayload(QuietResend):
    needs = frozenset({"amount"})

    def after_settle(self, run: CaseWorld) -> bool:
        if first_answered_ok(run) is None:
            return False
        amount = run.body["amount"]
        changed = raised(amount)
        run.journal.record("delivery.changed", "amount", original=amount, changed=changed)
        run.deliver({**run.body, "amount": changed}, delivery="changed")
        self.fact = f"the same key sent again with amount {changed} instead of {amount}"
        return True
