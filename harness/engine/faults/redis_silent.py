"""Every worker's Redis link goes silent (no byte either way, sockets kept) while a committed
answer is held: no worker can renew its lock, report the job done or take a new one, and
nothing tells them. Held for the stack's stall detection time (lock + stall check + 2 s);
the heal removes the toxic, which closes the held connections (see ``toxic_link``).
"""

from harness.engine.faults.base import register
from harness.engine.faults.toxic_link import ToxicLink, silent

register("redis_silent", lambda: ToxicLink(("workers_redis",), silent()))
