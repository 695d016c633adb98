"""One worker only (the one running the case's execution) loses Redis silently while the
others keep it: its lock is not renewed, and a live worker's stall sweep may fail the job the
cut-off worker goes on with. Held for the stack's stall detection time (lock + stall check
+ 2 s), so the sweep has its chance; heal as in ``toxic_link``.
"""

from harness.engine.faults.base import register
from harness.engine.faults.toxic_link import ToxicLink, silent

register("worker_redis_silent", lambda: ToxicLink(("target_redis",), silent()))
