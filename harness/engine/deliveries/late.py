"""Late redeliveries of an event the workflow already handled:

- late:            after the first delivery got its 2xx (a webhook sender's duplicate);
- late_after_ttl:  one attempt (no sender retry), then, once everything settled, the
                   provider forgets its idempotency keys and the event comes again (with
                   retries). With a crash after the commit, this is what catches a workflow
                   that re-sends an unknown operation without looking it up first.

Proof: the redelivery's time after the first one ended, and for ``late_after_ttl`` the
provider's key TTL read back from the provider (0) while the redelivery runs, and that its
services' search indexes had caught up (every record stored before it is found).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.engine.deliveries.base import Plan, QuietResend, first_answered_ok, register

if TYPE_CHECKING:
    from harness.engine.contract import CaseWorld
    from harness.engine.workload import BackgroundDelivery


@register("late")
class Late(QuietResend):
    # (late_after_ttl does not share: its key expiry is stack-wide)

    def after_settle(self, run: CaseWorld) -> bool:
        first = first_answered_ok(run)
        if first is None:
            return False  # nothing completed to redeliver: no proof
        run.deliver(delivery="late")
        self.fact = f"redelivered after the first delivery's 2xx at {first.ended_at:.3f}"
        return True


@register("late_after_ttl")
class LateAfterTtl(Plan):
    offers = frozenset({"no_sender_retry"})
    accepts = (frozenset({"quiet"}), frozenset({"worker_crash", "response_held"}))
    resends = True

    def start(self, run: CaseWorld) -> BackgroundDelivery:
        return run.start_delivery(retry=False)

    def after_settle(self, run: CaseWorld) -> bool:
        with run.keys_expired():
            health = run.provider.health()
            ttl, indexed = health.get("key_ttl_seconds"), health.get("index_caught_up_at")
            run.journal.record("delivery.late", "keys expired", provider_ttl=ttl, indexed=indexed)
            run.deliver(delivery="late")
        if ttl == 0:
            # A day later: a search-then-create guard finds its record now, a key-only one not.
            searched = " and its search indexes caught up" if indexed is not None else ""
            self.fact = (
                f"redelivered while the provider's key TTL read 0 (every idempotency key "
                f"forgotten){searched}"
            )
        return True
