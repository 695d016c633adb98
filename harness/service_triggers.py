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

import time
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from fake_providers.payment.control import (
    ControlRequestRejected,
    ProviderControl,
    ProviderUnreachable,
)
from fake_providers.payment.triggers import TRIGGERS, ServiceTrigger
from harness.errors import SetupError
from harness.workload import DeliveryAttempt, History, Sender, SenderPolicy, classify

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
SERVICE_TRIGGER_TYPES = {trigger.node_type: trigger for trigger in TRIGGERS.values()}


def trigger_of(node_type: str) -> ServiceTrigger | None:
    return SERVICE_TRIGGER_TYPES.get(node_type)


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
        f"{where}: node {node.get('name')!r} is a {node.get('type')}, a service trigger the "
        f"harness has no fake for (it serves {known} and Webhook/Form Trigger nodes); add a "
        "personality in fake_providers/payment/triggers/ or start the workflow with a Webhook "
        "node for the test"
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


class ServiceSender(Sender):
    """The service's fake as the sender: each attempt is one signed delivery to ``url`` (the
    URL n8n registered), each retry waits the service's backoff."""

    def __init__(
        self,
        trigger: ServiceTrigger,
        provider: ProviderControl,
        url: str,
        history: History,
        policy: SenderPolicy,
    ) -> None:
        policy = replace(policy, max_attempts=len(trigger.retry_delays_s) + 1)
        super().__init__(url, "POST", history, policy)
        self.trigger = trigger
        self.provider = provider

    def attempt(self, body: dict[str, Any], delivery: str, number: int) -> DeliveryAttempt:
        started = time.time()
        try:
            sent = self.provider.deliver_event(
                self.trigger.name, self.url, body, self.policy.attempt_timeout_s
            )
        except ControlRequestRejected as exc:
            raise SetupError(
                f"the {self.trigger.name} fake cannot deliver the event: {exc}; check that the "
                f"workflow's {self.trigger.node_type} node registered (main log in the run "
                "directory) and that the manifest's trigger.body is a whole event"
            ) from exc
        except ProviderUnreachable as exc:
            raise SetupError(f"the {self.trigger.name} fake is unreachable: {exc}") from exc
        status = sent.get("status")
        detail = f"{self.trigger.name} delivery {sent.get('event')} to {sent.get('endpoint')}: "
        result = DeliveryAttempt(
            delivery,
            number,
            started,
            time.time(),
            classify(status),
            status,
            (detail + str(sent.get("detail", "")))[:2000],
        )
        self.history.add(result)
        return result

    def settled(self, attempt: DeliveryAttempt) -> bool:
        """A service resends on every non-2xx (a 4xx too), not only on the unsure ones."""
        return attempt.outcome == "ok"

    def retry_wait_s(self, number: int) -> float:
        delays = self.trigger.retry_delays_s
        return float(delays[min(number, len(delays)) - 1])
