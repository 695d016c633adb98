"""after_response: the provider's response reaches the worker while the worker's links to
Postgres (n8n's and the ledger's) are held by a toxic; the fault strikes before n8n or the
workflow can write anything down.

Proof: the provider's `responded` barrier says it handed the response over before the
strike, and Toxiproxy lists the holding toxics on those links at the strike.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from fake_providers.payment import Barrier
from fake_providers.payment import CrashPoint as ProviderPoint
from harness.engine.crashpoints.base import Window, committed_and_running, hold_at, register
from harness.engine.journal import since
from harness.stack.toxiproxy import Proxy

if TYPE_CHECKING:
    from harness.engine.contract import CaseWorld
    from harness.engine.workload import BackgroundDelivery

TOXIC = "hold_write"


@register("after_response")
class AfterResponse(Window):
    offers = frozenset({"in_flight", "committed"})
    # A Respond to Webhook node right after the effect answers through Redis, not held here.
    loses_answer_needs = frozenset({"answer_after_write"})

    def __init__(self) -> None:
        super().__init__()
        self.committed: Barrier | None = None
        self.responded: Barrier | None = None
        self.held: list[Proxy] = []

    def arm(self, run: CaseWorld) -> None:
        self.committed = hold_at(run, ProviderPoint.COMMITTED)
        self.responded = hold_at(run, ProviderPoint.RESPONDED)

    def strike(self, run: CaseWorld, delivery: BackgroundDelivery) -> None:
        committed, responded = self.committed, self.responded
        assert committed is not None and responded is not None
        _, worker = committed_and_running(run, committed, delivery)
        if worker is None:
            return
        self.held = run.write_links(worker)
        for proxy in self.held:
            proxy.add_toxic("timeout", stream="upstream", name=TOXIC, timeout=0)
        committed.release()
        if not run.wait_for(
            "the response to be handed over", lambda: responded.info().reached, 30.0
        ):
            return
        holding = [p.name for p in self.held if any(t.name == TOXIC for t in p.toxics())]
        struck = time.time()
        run.inject()
        info = responded.info()
        if (
            info.reached_at is not None
            and info.reached_at <= struck
            and len(holding) == len(self.held)
        ):
            self.fact = (
                f"the provider handed over the response of {info.effect_id} at "
                f"{info.reached_at:.3f}; Toxiproxy held {', '.join(holding)} at the strike "
                f"({since(info.reached_at, struck)} after the hand-over)"
            )

    def disarm(self, run: CaseWorld) -> None:
        del run
        for barrier in (self.committed, self.responded):
            if barrier is not None:
                barrier.release()
        for proxy in self.held:
            if any(t.name == TOXIC for t in proxy.toxics()):
                proxy.remove_toxic(TOXIC)
