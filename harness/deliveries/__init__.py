"""Delivery plans (HOW the sender sends), one module each, registered by name. A new plan is
one new module here plus its line below."""

from harness.deliveries import (  # noqa: F401 - imported for their registrations
    changed_payload,
    concurrent,
    late,
    once,
    operator_retry,
    retry,
)
from harness.deliveries.base import DELIVERIES, DeliveryPlan, get_delivery, known_deliveries

__all__ = ["DELIVERIES", "DeliveryPlan", "get_delivery", "known_deliveries"]
