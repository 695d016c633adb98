"""meets_in_flight: the sender's own retry reaches the service while the service is still
processing the first request with the workflow's idempotency key, so the service's "in
progress" answer (Stripe's 409 ``idempotency_key_in_use``, the bundled provider's and the
record fake's 409) reaches the workflow.

``impatient`` with the first effect request held as the provider received it (its key
claimed, nothing committed) instead of after its commit: the sender gives up, sends again,
and the retry's execution finds the operation unfinished; its request with the same key is
answered 409. The promise: the retry is answered "in flight" (409, 429, 5xx: the sender
tries again) or with the final outcome, never a definite failure for an effect that then
commits (the oracle's CONTRADICTED), and the effect happens once.

Proof, from the provider's barrier record and attempt log: a request with the held key was
answered 409 between the first request's arrival and its release by the harness.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fake_providers.payment import CrashPoint as ProviderPoint
from harness.engine.deliveries.base import register
from harness.engine.deliveries.impatient import Impatient
from harness.engine.journal import since

if TYPE_CHECKING:
    from fake_providers.payment.control import Attempt


@register("meets_in_flight")
class MeetsInFlight(Impatient):
    hold_point = ProviderPoint.RECEIVED
    # Only a request with the first one's idempotency key is answered "in progress".
    needs = Impatient.needs | {"idempotency_key"}

    def proof(self) -> str | None:
        if self.run is None or self.held is None:
            return None
        info = self.held.info()
        start, end, key = info.reached_at, info.ended_at, info.reached_key
        if start is None or end is None or key is None:
            return None
        met: Attempt | None = next(
            (
                a
                for a in self.run.provider.attempts(key=key)
                if a.id != info.attempt_id
                and a.http_status == 409
                and start <= a.received_at <= end
            ),
            None,
        )
        if met is None:
            return None
        return (
            f"the provider held the first request with key {key!r} from {start:.3f} until "
            f"the harness released it {since(start, end)} later; attempt {met.id} with that key "
            f"was answered 409 {since(start, met.received_at)} after the first was held"
        )
