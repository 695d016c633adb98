"""Main's Redis link goes silent (sockets kept) while a committed answer is held: the worker
finishes, but main never hears the job's result, so a caller waiting on the last node is
not answered until the heal (or its own timeout). Held for the stack's stall detection time;
heal as in ``toxic_link``.
"""

from harness.engine.faults.base import register
from harness.engine.faults.toxic_link import ToxicLink, silent

register("main_redis_silent", lambda: ToxicLink(("main_redis",), silent(), loses_answer=True))
