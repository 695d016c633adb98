"""Internal: the sender of a workflow started by a service's own trigger node
(harness.workflow.service_triggers): the service's fake delivers each attempt, signed, to the URL
n8n registered with it, and retries on the service's own (compressed) backoff."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from fake_providers.payment.control import (
    ControlRequestRejected,
    ProviderControl,
    ProviderUnreachable,
)
from fake_providers.payment.triggers import ServiceTrigger
from harness.engine.workload import DeliveryAttempt, History, Sender, SenderPolicy, classify
from harness.errors import SetupError


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
