"""after_commit: the provider committed the effect and holds its response on a barrier; the
fault strikes, then the harness lets the response go (into whatever is left of the caller).

Proof, from the provider's barrier record: the request was held from its commit until the
harness released it (state ``released``, not ``hold_expired``), and the strike lies inside.

A timed fault (an outage) keeps the response held until it healed, but never longer than
``RELEASE_AFTER_S``: the workflows' HTTP nodes time out after 10 s, and a longer hold would
make the case "client timeout + outage". Which of the two happened is journaled.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from fake_providers.payment import BarrierState
from harness.engine.crashpoints.base import HeldAtCommit, committed_and_running, held_at, register
from harness.engine.journal import since

if TYPE_CHECKING:
    from harness.engine.contract import CaseWorld
    from harness.engine.workload import BackgroundDelivery

RELEASE_AFTER_S = 9.0
RELEASE_CONFIRM_S = 10.0


@register("after_commit")
class AfterCommit(HeldAtCommit):
    # The committed answer is held while the fault strikes: where process kills, freezes and
    # link outages are judged.
    offers = frozenset({"in_flight", "committed", "response_held"})

    def strike(self, run: CaseWorld, delivery: BackgroundDelivery) -> None:
        barrier = self.barrier
        assert barrier is not None
        reached, _ = committed_and_running(run, barrier, delivery)
        # No worker needed by every fault (main_kill, outages): strike while it is held.
        if not reached or barrier.info().state is not BarrierState.HOLDING:
            return
        struck = time.time()
        run.inject()
        healed = run.wait_timed_heal(at_most_s=RELEASE_AFTER_S)
        if not healed:
            run.journal.record(
                "crashpoint.interleaving",
                self.name,
                note=f"response released {RELEASE_AFTER_S:.0f} s into the outage, before its heal",
            )
        barrier.release()
        run.wait_for(
            "the provider to let the held response go",
            lambda: barrier.info().state is not BarrierState.HOLDING,
            RELEASE_CONFIRM_S,
        )
        info = barrier.info()
        if info.state is BarrierState.RELEASED and held_at(info, struck):
            self.fact = (
                f"the provider held {info.effect_id} from its commit at {info.reached_at:.3f} "
                f"until the harness released it {since(info.reached_at, info.ended_at)} later; "
                f"the fault struck {since(info.reached_at, struck)} after the commit"
            )
