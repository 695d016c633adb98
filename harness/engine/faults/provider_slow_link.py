"""The provider's committed answer to the worker running the execution is delayed 15 s on
the wire (downstream ``latency``), past the HTTP node's own 10 s timeout: the node gives up on
a charge that happened. Held 2 s past the delay; the heal removes the toxic (see
``toxic_link``).
"""

from harness.engine.faults.base import register
from harness.engine.faults.toxic_link import NODE_TIMEOUT_S, ToxicLink, slow

LATENCY_S = NODE_TIMEOUT_S + 5.0

register(
    "provider_slow_link",
    lambda: ToxicLink(
        ("target_provider",),
        slow(int(LATENCY_S * 1000), ("downstream",)),
        hold_s=LATENCY_S + 2.0,
        loses_answer=True,
    ),
)
