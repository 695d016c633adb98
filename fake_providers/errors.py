"""The fake providers' own exception root, kept apart from the harness's tree on purpose.

The fake providers are a separate service the harness drives over HTTP; they import nothing
from ``harness``, so their errors hang from this root instead of ``harness.errors.HarnessError``:

    FakeProviderError
    ├── ProviderControlError       payment.control: the control client failed
    │   ├── ProviderUnreachable    no HTTP answer from the control port
    │   ├── ControlRequestRejected the control API answered non-2xx
    │   ├── InvalidControlArgument rejected before sending (also a ValueError)
    │   └── BarrierNotReached      no request reached the barrier in time
    ├── ProviderStartError         payment.launcher: no READY line from the child process
    ├── ProblemError               payment.problems: a handler answers with problem+json
    ├── InvalidIdempotencyKey      payment.keys: unusable Idempotency-Key (also a ValueError)
    ├── ConnectionDropUnsupported  payment.connection: no real socket to close or reset
    ├── UpstreamConfigError    upstreams: a host's fake configured wrongly (also a ValueError)
    ├── StripeError            payment.fakes: the stripe fake answers in Stripe's error shape
    ├── UnreadableBody         payment.fakes.inbound: a request body that cannot be parsed
    └── UndeliverableEvent     payment.triggers: an event a service cannot send (also a ValueError)
"""

from __future__ import annotations


class FakeProviderError(Exception):
    """Root of every error a fake provider or its clients raise on purpose."""
