"""SIGKILL the webhook processor (``n8n webhook``) while it holds a synchronous webhook whose
effect committed: the caller's connection dies, the worker still finishes the execution
(probe ``webhook_processor_kill``), and a sender that retries sends the event again.

Runs on a stack with a webhook processor (need ``webhook_processor``): production webhooks
reach the workflow through it, not through main.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.engine.faults.base import register
from harness.engine.faults.main_kill import ProcessKill
from harness.errors import SetupError

if TYPE_CHECKING:
    from harness.stack.n8n import N8nProcess
    from harness.stack.stack import Stack


def webhook_processor(stack: Stack) -> N8nProcess:
    if stack.webhook is None:
        raise SetupError(
            "this case needs a stack with a webhook processor (`n8n webhook`); the harness "
            "starts one for cases that need it, or give --n8n-webhook-processor"
        )
    return stack.webhook


@register("webhook_processor_kill")
class WebhookProcessorKill(ProcessKill):
    offers = frozenset({"webhook_crash"})
    needs = frozenset({"webhook_processor"})

    def process(self, stack: Stack) -> N8nProcess:
        return webhook_processor(stack)
