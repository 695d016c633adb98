"""retry: one delivery, retried by the sender on anything not definite (timeout, reset, 409,
429, 5xx), like a webhook provider; the fault heals before the first retry."""

from __future__ import annotations

from harness.engine.deliveries.base import Plan, register


@register("retry")
class Retry(Plan):
    offers = frozenset({"baseline", "sender_retry"})
    accepts = None
    shares_stack = True  # the case's own deliveries (and barrier) only

    def __init__(self) -> None:
        super().__init__()
        self.fact = "one delivery, retried until definite"
