"""The Redis link of the worker running the execution turns slow: each command it sends
(upstream) reaches Redis one lock duration late, so a lock renewal lands after the lock ran
out, and a live worker's stall sweep may fail the job. The latency is the stack's own
``QUEUE_WORKER_LOCK_DURATION``; held for its stall detection time (see ``toxic_link``).
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.engine.faults.base import FaultContext, register
from harness.engine.faults.toxic_link import ToxicLink, slow, timing_ms


@dataclass
class LockSlowLink(ToxicLink):
    def inject(self, ctx: FaultContext) -> None:
        lock_ms = timing_ms(ctx.stack.config, "QUEUE_WORKER_LOCK_DURATION")
        self.toxic = slow(lock_ms, ("upstream",))
        super().inject(ctx)


register("redis_slow", lambda: LockSlowLink(("target_redis",), slow(0, ("upstream",))))
