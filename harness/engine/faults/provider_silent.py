"""The link from the worker running the execution to the provider goes silent (sockets kept)
once the provider committed and before its answer left: the HTTP node hears nothing until
its own timeout (10 s in the bundled workflows). Held 5 s past that timeout; the heal closes
the held connection (see ``toxic_link``).
"""

from harness.engine.faults.base import register
from harness.engine.faults.toxic_link import NODE_TIMEOUT_S, ToxicLink, silent

register(
    "provider_silent",
    lambda: ToxicLink(
        ("target_provider",), silent(), hold_s=NODE_TIMEOUT_S + 5.0, loses_answer=True
    ),
)
