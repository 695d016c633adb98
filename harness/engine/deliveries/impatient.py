"""impatient: a sender whose own timeout is shorter than the work (an API gateway, a client
library) gives up and sends the event again while the first execution is still running.

The plan holds the first effect request at the provider once it committed (its answer held;
``hold_point``) until the sender, having timed out, sent again and got an answer (a status,
not a timeout) to a retry; then it lets the first go. The retry thus meets the first
execution in flight (the ledger's "claimed"; ``meets_in_flight`` holds the request before
its commit, where the provider answers its key 409). The promise: the retry is
answered "in flight" (409, 429, 5xx: the sender tries again) or with the final outcome,
never a definite failure for an effect that then commits (the oracle's CONTRADICTED), and
the effect happens once.

Proof, from n8n's own rows: the retry's execution ran while the first one was running.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, ClassVar

from fake_providers.payment import Barrier
from fake_providers.payment import CrashPoint as ProviderPoint
from harness.engine.crashpoints.base import REACH_S, hold_at
from harness.engine.deliveries.base import QuietResend, max_overlap, register
from harness.engine.workload import BackgroundDelivery, DeliveryAttempt

if TYPE_CHECKING:
    from harness.engine.contract import CaseWorld

GIVE_UP_S = 5.0  # the sender's own timeout per attempt, far below the held work
RETRY_ANSWERED_S = 60.0  # how long the retry may take to be answered


@register("impatient")
class Impatient(QuietResend):
    # A workflow that answers before its work never keeps this sender waiting.
    needs = frozenset({"sync_answer"})
    # Where the provider holds the first effect request (the barrier's point).
    hold_point: ClassVar[ProviderPoint] = ProviderPoint.COMMITTED

    def __init__(self) -> None:
        super().__init__()
        self.run: CaseWorld | None = None
        self.held: Barrier | None = None

    def start(self, run: CaseWorld) -> BackgroundDelivery:
        self.run = run
        held = self.held = hold_at(run, self.hold_point)  # released by the plan, not expiry
        sender = run.start_delivery(retry=True, attempt_timeout_s=GIVE_UP_S)

        def overlap_then_release() -> None:
            try:
                if run.wait_for(
                    f"the first effect request to reach {self.hold_point.value}",
                    lambda: held.info().reached,
                    REACH_S,
                    lambda: sender.done,
                ):
                    run.journal.record(f"delivery.{self.name}", "first held", timeout_s=GIVE_UP_S)
                    run.wait_for(
                        "the impatient sender's retry to be answered",
                        lambda: bool(_answered_retries(run)),
                        RETRY_ANSWERED_S,
                        lambda: sender.done,
                    )
            finally:
                held.release()
                run.journal.record(f"delivery.{self.name}", "first released", at=time.time())
            sender.join(RETRY_ANSWERED_S * 4)

        return BackgroundDelivery(overlap_then_release)

    def proof(self) -> str | None:
        if self.run is None:
            return None
        rows = self.run.executions()
        overlap = max_overlap(rows)
        retried = _answered_retries(self.run)
        if overlap < 2 or not retried:
            return None
        return (
            f"the sender gave up after {GIVE_UP_S:.0f} s and sent again; n8n's rows show "
            f"{overlap} of {len(rows)} executions running at one instant; the retry "
            f"was answered {retried[0].status}"
        )


def _answered_retries(run: CaseWorld) -> list[DeliveryAttempt]:
    """The sender's retries that got an answer from the workflow (not a timeout of their own)."""
    return [a for a in run.attempts("d1") if a.number >= 2 and a.status is not None]
