"""before_send: everything before the effect request has run, the request is on its way,
and the fault strikes before anything is committed.

The provider holds the request at its ``received`` barrier (the key claimed, nothing done
yet) and a planted pre-commit error makes it end without a commit once released: for the
workflow it is as if the request never got through, and its key is free again. So the
window opens exactly when the workflow sends its effect request, after its own guards (a
ledger claim, a dedup node, an early answer) ran, whatever it does before.

Proof, from the provider: its barrier record shows the request held at ``received`` when the
fault struck, and its attempt log shows that attempt ended without a commit.
"""

from __future__ import annotations

import time
from contextlib import suppress
from typing import TYPE_CHECKING

from fake_providers.payment import Barrier, BarrierState, ControlRequestRejected, FaultKind
from fake_providers.payment import CrashPoint as ProviderPoint
from harness.engine.crashpoints.base import REACH_S, Window, held_at, hold_at, register
from harness.engine.journal import since

if TYPE_CHECKING:
    from harness.engine.contract import CaseWorld
    from harness.engine.workload import BackgroundDelivery

REFUSED_S = 10.0  # how long the released request may take to end


@register("before_send")
class BeforeSend(Window):
    after_effect = False

    def __init__(self) -> None:
        super().__init__()
        self.barrier: Barrier | None = None
        self.rule: str | None = None
        self.struck: float | None = None

    def arm(self, run: CaseWorld) -> None:
        control = run.provider
        self.rule = control.add_fault(
            FaultKind.ERROR_BEFORE_COMMIT,
            reference_prefix=run.key,
            effect=run.effect,
            attempts=(1,),
        ).id
        self.barrier = hold_at(run, ProviderPoint.RECEIVED)

    def strike(self, run: CaseWorld, delivery: BackgroundDelivery) -> None:
        barrier = self.barrier
        assert barrier is not None
        over = lambda: run.work_over(delivery)  # noqa: E731
        if not run.wait_for(
            "the effect request to arrive", lambda: barrier.info().reached, REACH_S, over
        ):
            return
        execution = run.wait_running_execution(30.0, over)
        if execution is None or run.find_target(execution) is None:
            return
        if barrier.info().state is not BarrierState.HOLDING:
            return
        self.struck = time.time()
        run.inject()

    def disarm(self, run: CaseWorld) -> None:
        control = run.provider
        if self.barrier is not None:
            self.barrier.release()
            attempt_id = self.barrier.info().attempt_id
            if attempt_id is not None:
                run.wait_for(
                    "the held request to end without a commit",
                    lambda: _ended(run, attempt_id),
                    REFUSED_S,
                )
                self._prove(run, attempt_id)
        if self.rule is not None:
            with suppress(ControlRequestRejected):  # already cleared by a reset
                control.remove_fault(self.rule)

    def _prove(self, run: CaseWorld, attempt_id: int) -> None:
        info = self.barrier.info() if self.barrier is not None else None
        attempt = next(
            (a for a in run.provider.attempts(reference=run.key) if a.id == attempt_id),
            None,
        )
        if (
            held_at(info, self.struck)
            and attempt is not None
            and attempt.effect_id is None
            and str(attempt.outcome) != "in_flight"
        ):
            self.fact = (
                f"the provider held effect attempt {attempt_id} at 'received' (nothing "
                f"committed) from {info.reached_at:.3f} for {since(info.reached_at, info.ended_at)}"
                f"; the fault struck {since(info.reached_at, self.struck)} into the hold; the "
                "attempt then "
                f"ended as {attempt.outcome}, no commit"
            )


def _ended(run: CaseWorld, attempt_id: int) -> bool:
    attempts = run.provider.attempts(reference=run.key)
    return any(a.id == attempt_id and str(a.outcome) != "in_flight" for a in attempts)
