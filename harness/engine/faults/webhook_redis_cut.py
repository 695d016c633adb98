"""The webhook processor's link to Redis is down for 14 s while it holds a synchronous
webhook whose effect committed: past n8n's 10 s threshold the processor exits (probe
``webhook_redis_cut``), the worker's result never reaches the caller, and the heal restarts
the processor. Proof: Toxiproxy's own word that ``webhook_redis`` was disabled.
"""

from __future__ import annotations

from typing import ClassVar

from harness.engine.faults.base import FaultContext, register
from harness.engine.faults.link_outage import LinkOutage
from harness.engine.faults.webhook_processor_kill import webhook_processor
from harness.stack.toxiproxy import Proxy

OUTAGE_S = 14.0


class WebhookLinkOutage(LinkOutage):
    needs: ClassVar[frozenset[str]] = frozenset({"webhook_processor"})


def _webhook_redis(ctx: FaultContext) -> list[Proxy]:
    webhook_processor(ctx.stack)  # a clear error on a stack without one
    return [ctx.stack.proxies["webhook_redis"]]


register("webhook_redis_cut", lambda: WebhookLinkOutage(_webhook_redis, OUTAGE_S))
