"""Delivery plans: HOW the sender sends. One module per plan (or family), registering by name;
``harness.engine.registry`` finds the modules, so a new plan is one new file here."""

from harness.engine.deliveries.base import DELIVERIES, DeliveryPlan, get_delivery, known_deliveries

__all__ = ["DELIVERIES", "DeliveryPlan", "get_delivery", "known_deliveries"]
