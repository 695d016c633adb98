"""One direction only: Redis's answers to the worker running the execution are dropped
(downstream), its commands still arrive. Its lock renewals and its "job done" land in Redis,
but the worker never hears back, so it waits on each command. Held for the stack's stall
detection time; heal as in ``toxic_link``.
"""

from harness.engine.faults.base import register
from harness.engine.faults.toxic_link import ToxicLink, silent

register("worker_redis_deaf", lambda: ToxicLink(("target_redis",), silent(("downstream",))))
