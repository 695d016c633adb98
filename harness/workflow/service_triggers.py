"""Internal: Workflows started by a service's own trigger node (the Stripe Trigger, ...): the
sender is the service's fake.

n8n registers such a node's webhook with the service when the workflow is activated (in the
main process, through the run's intercepting proxy to the fake named for the service's host);
the fake keeps the endpoint and its secret. Each attempt of a delivery plan is then one signed
delivery by the fake to the URL n8n registered (``ProviderControl.deliver_event``), so "the
service sent the event again" is a case like any redelivery; the retries follow the service's
own backoff (compressed), not the webhook sender's. The personalities (registration API,
signature, backoff) are ``fake_providers.payment.triggers``, one module each.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from fake_providers.payment.triggers import ServiceTrigger
from harness.errors import SetupError
from harness.stack.triggers import SERVICE_TRIGGER_TYPES

if TYPE_CHECKING:
    from harness.stack.stack import Stack

# n8n's own trigger nodes that are no webhook (schedules, the editor, other workflows, n8n
# events): a workflow may hold them beside its one driven trigger.
NOT_WEBHOOK_TRIGGERS = frozenset(
    f"n8n-nodes-base.{name}"
    for name in (
        "manualTrigger",
        "scheduleTrigger",
        "cron",
        "interval",
        "errorTrigger",
        "executeWorkflowTrigger",
        "n8nTrigger",
        "workflowTrigger",
        "localFileTrigger",
        "emailReadImap",
    )
)


def unserved_trigger(nodes: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A service trigger node the harness has no fake for (its webhook would never be called)."""
    return next(
        (
            node
            for node in nodes
            if str(node.get("type", "")).endswith("Trigger")
            and node.get("type") not in NOT_WEBHOOK_TRIGGERS
            and node.get("type") not in SERVICE_TRIGGER_TYPES
            and not node.get("disabled", False)
        ),
        None,
    )


def unserved_message(where: str, node: Mapping[str, Any]) -> str:
    known = ", ".join(sorted(SERVICE_TRIGGER_TYPES))
    return (
        f"{where}: node {node.get('name')!r} ({node.get('type')}) is a trigger the harness "
        f"has no fake service for (it serves {known} and Webhook/Form Trigger nodes); start "
        "the workflow with a Webhook node for the test, or add the service's trigger fake "
        "in fake_providers/payment/triggers/"
    )


def check_registered(stack: Stack, trigger: ServiceTrigger, url: str | None) -> None:
    """The proof that activation reached the fake: it holds an endpoint for ``url``."""
    registered = stack.require_provider().control.trigger_endpoints(trigger.name)
    if not any(doc.get("url") == url for doc in registered):
        urls = ", ".join(str(doc.get("url")) for doc in registered) or "none"
        raise SetupError(
            f"the {trigger.node_type} node was activated but the {trigger.name} fake holds no "
            f"webhook endpoint for {url} (it holds: {urls}); map the service's host to the "
            f"{trigger.fake} fake in the manifest's upstreams and see the main log"
        )
