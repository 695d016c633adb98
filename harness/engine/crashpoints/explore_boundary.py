"""Crash points of exploration: strike around the Nth effect request of a case, not the first.

Nothing registers at import: ``explore_crashpoint(strike, n, effect)`` registers one crash
point per boundary on demand (e.g. ``x_after_commit_r2``), offering only the trait
``explore_boundary``, which no fault's ``needs_window`` asks for: these never join the
matrix; ``n8n-chaos explore`` names them in its cases.

How the Nth request is reached, deterministically: a provider barrier for the case's
reference (its business key) holds each effect request at ``received`` (key claimed, nothing
done); while request k is held, the barrier for request k+1 is armed, then k is let go. A
workflow's nodes run one after the other, so request N is the Nth to arrive. Held at
``received``, it is then:

- ``before_send``: refused before any commit (a planted pre-commit error for that attempt)
  while the fault strikes; proof: the barrier record and the attempt's end without a commit;
- ``after_commit``: let on to ``committed``, held there while the fault strikes; proof: the
  barrier record (held from the commit until the harness let it go);
- ``after_response``: committed, the worker's Postgres links held by toxics, answered, and
  struck once the provider handed the answer over; proof: the ``responded`` record and the
  toxics Toxiproxy lists;
- ``response_drop``: committed, then the connection closed without an answer (the provider's
  COMMIT_THEN_CLOSE for that attempt only); proof: the attempt log says so;
- ``commit_then_5xx``: committed, then answered HTTP 500 (the provider's COMMIT_THEN_ERROR
  for that attempt only): an outcome the workflow cannot tell from a failure; proof: the
  attempt log says so;
- ``repeat_at_commit``: committed and held there while the sender delivers the same event
  again (a redelivery racing the first execution at that boundary); the held answer goes
  once the repeat was answered; proof: the barrier record holds the repeat's send time;
- ``repeat_before_commit``: the same, held at ``received`` (nothing committed yet): the
  read-then-create race of a "search, then create" guard; same proof.

Each proof also names the held attempt's effect kind: a run that took another path (another
effect kind at position N than the trace saw) gets no proof.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal, get_args

from fake_providers.payment import (
    Barrier,
    BarrierInfo,
    BarrierState,
    ControlRequestRejected,
    FaultKind,
)
from fake_providers.payment import CrashPoint as ProviderPoint
from harness.engine.crashpoints.base import CRASHPOINTS, HOLD_S, REACH_S, Window, held_at
from harness.engine.workload import BackgroundDelivery

if TYPE_CHECKING:
    from harness.engine.contract import CaseWorld
    from harness.stack.toxiproxy import Proxy

Strike = Literal[
    "after_commit",
    "response_drop",
    "before_send",
    "after_response",
    "repeat_at_commit",
    "repeat_before_commit",
    "commit_then_5xx",
]
STRIKES: tuple[Strike, ...] = get_args(Strike)


@dataclass(frozen=True)
class StrikeKind:
    """What a strike is: the fault it runs with (response_drop is the provider's doing, no
    fault beside it), how a finding says it, and the matrix's (delivery, fault, crash point)
    that strikes the same window at a workflow's first effect request (None: no case does)."""

    fault: str
    words: str
    matrix: tuple[str, str, str] | None = None


def _worker_kill(point: Strike, words: str) -> StrikeKind:
    """A strike that kills the worker: the matrix's retry case that kills it at the crash point
    of the same name strikes the same window."""
    return StrikeKind("worker_kill", words, ("retry", "worker_kill", point))


STRIKE_KINDS: dict[Strike, StrikeKind] = {
    "after_commit": _worker_kill("after_commit", "killing the worker after the provider committed"),
    "response_drop": StrikeKind(
        "no_fault",
        "dropping the answer (committed, connection closed) to",
        ("retry", "response_drop", "none"),
    ),
    "before_send": _worker_kill(
        "before_send", "killing the worker while the request was held before any commit"
    ),
    "after_response": _worker_kill("after_response", "killing the worker after the answer to"),
    "repeat_at_commit": StrikeKind(
        "no_fault", "delivering the same event again while the provider held the committed"
    ),
    "repeat_before_commit": StrikeKind(
        "no_fault", "delivering the same event again while the provider held, uncommitted,"
    ),
    "commit_then_5xx": StrikeKind(
        "no_fault", "answering HTTP 500 after committing", ("retry", "provider_5xx", "none")
    ),
}
# Strikes the provider's answer does alone, planted for request N's attempt only.
ANSWER_FAULTS: dict[Strike, FaultKind] = {
    "response_drop": FaultKind.COMMIT_THEN_CLOSE,
    "commit_then_5xx": FaultKind.COMMIT_THEN_ERROR,
}
TRAIT = "explore_boundary"
REPEAT = "repeat"  # the repeated delivery's name in the case's history
PREFIX = "x_"
TOXIC = "explore_hold_write"
ENDED_S = 15.0
REPEAT_S = 30.0  # the repeated delivery's answer, while the first is held after its commit


def crashpoint_name(strike: Strike, n: int) -> str:
    return f"{PREFIX}{strike}_r{n}"


def explore_crashpoint(strike: Strike, n: int, effect: str | None = None) -> str:
    """Register (once) the crash point of ``strike`` at the ``n``-th effect request, whose
    effect kind the trace saw as ``effect``; returns its name."""
    name = crashpoint_name(strike, n)
    if name not in CRASHPOINTS.names():
        CRASHPOINTS.register(name, lambda: NthRequest(strike, n, effect))
    return name


class NthRequest(Window):
    offers: ClassVar[frozenset[str]] = frozenset({TRAIT})

    def __init__(self, strike: Strike, n: int, effect: str | None) -> None:
        super().__init__()
        self.strike_kind = strike
        self.n = n
        self.effect = effect
        self.barriers: list[Barrier] = []
        self.held: BarrierInfo | None = None  # request N at `received`
        self.rule: str | None = None
        self.struck: float | None = None
        self.toxics: list[Proxy] = []

    # -- the barriers ------------------------------------------------------------------
    def _arm(self, run: CaseWorld, point: ProviderPoint) -> Barrier:
        barrier = run.provider.arm_barrier(None, point, HOLD_S, reference=run.key)
        self.barriers.append(barrier)
        return barrier

    def arm(self, run: CaseWorld) -> None:
        self._arm(run, ProviderPoint.RECEIVED)

    def _reach_nth(self, run: CaseWorld, over: Callable[[], bool]) -> Barrier | None:
        barrier = self.barriers[0]
        for k in range(1, self.n + 1):
            if not run.wait_for(f"effect request {k} to arrive", _reached(barrier), REACH_S, over):
                return None
            if k < self.n:
                following = self._arm(run, ProviderPoint.RECEIVED)
                barrier.release()
                barrier = following
        self.held = barrier.info()
        if self.effect is not None and self.held.attempt_id is not None:
            kind = _attempt_effect(run, self.held.attempt_id)
            if kind != self.effect:
                run.journal.record(
                    "window.not_opened",
                    self.name,
                    reason=f"effect request {self.n} is a {kind}, the trace saw a {self.effect}",
                )
                return None
        return barrier

    # -- the strike --------------------------------------------------------------------
    def strike(self, run: CaseWorld, delivery: BackgroundDelivery) -> None:
        over = lambda: run.work_over(delivery)  # noqa: E731
        received = self._reach_nth(run, over)
        if received is None or self.held is None:
            return
        if self.strike_kind == "repeat_before_commit":
            self._repeat(run, received)
            return
        if self.strike_kind == "before_send":
            self._plant(run, FaultKind.ERROR_BEFORE_COMMIT)
            if self._target(run, over) and received.info().state is BarrierState.HOLDING:
                self.struck = time.time()
                run.inject()
            return
        if self.strike_kind in ANSWER_FAULTS:
            self._plant(run, ANSWER_FAULTS[self.strike_kind])
            received.release()
            return
        committed = self._arm(run, ProviderPoint.COMMITTED)
        responded = self._arm(run, ProviderPoint.RESPONDED)
        received.release()
        if not run.wait_for("the effect to be committed", _reached(committed), REACH_S, over):
            return
        if self.strike_kind == "repeat_at_commit":
            self._repeat(run, committed)
            return
        worker = self._target(run, over)
        if worker is None:
            return
        if self.strike_kind == "after_response":
            self._hold_writes(run, worker)
            committed.release()
            if not run.wait_for("the answer to be handed over", _reached(responded), 30.0):
                return
            if all(any(t.name == TOXIC for t in p.toxics()) for p in self.toxics):
                self.struck = time.time()
                run.inject()
                self._prove_responded(responded.info())
            return
        if committed.info().state is not BarrierState.HOLDING:
            return
        self.struck = time.time()
        run.inject()
        committed.release()
        run.wait_for(
            "the provider to let the held response go",
            lambda: committed.info().state is not BarrierState.HOLDING,
            10.0,
        )
        self._prove_committed(committed.info())

    def _repeat(self, run: CaseWorld, held: Barrier) -> None:
        """The same event again while request N is held (at ``received`` or after its
        commit); its answer (or the deadline) before the held request goes on."""
        self.struck = time.time()
        repeat = BackgroundDelivery(lambda: run.deliver(delivery=REPEAT, retry=False))
        answered = run.wait_for("the repeated delivery's answer", lambda: repeat.done, REPEAT_S)
        run.journal.record("crashpoint.repeat", self.name, answered=answered)
        held.release()
        run.wait_for(
            "the provider to let the held request go",
            lambda: held.info().state is not BarrierState.HOLDING,
            10.0,
        )
        info = held.info()
        sent = run.attempts(REPEAT)
        if sent and held_at(info, sent[0].started_at):
            got = f"HTTP {sent[-1].status}" if sent[-1].status is not None else sent[-1].detail
            where = (
                f"committed as {info.effect_id}"
                if self.strike_kind == "repeat_at_commit"
                else "before any commit"
            )
            self.fact = (
                f"the provider held {self._what()}, {where}, from {info.reached_at:.3f} until "
                f"{info.ended_at:.3f}; the same event was delivered again at "
                f"{sent[0].started_at:.3f} and got {got}"
                + ("" if answered else f" (no answer within {REPEAT_S:.0f} s)")
            )

    def _target(self, run: CaseWorld, over: Callable[[], bool]) -> int | None:
        execution = run.wait_running_execution(30.0, over)
        return None if execution is None else run.find_target(execution)

    def _plant(self, run: CaseWorld, kind: FaultKind) -> None:
        held = self.held
        assert held is not None and held.attempt_no is not None
        self.rule = run.provider.add_fault(
            kind,
            key=held.reached_key,
            reference_prefix=held.reached_reference if held.reached_key is None else None,
            attempts=(held.attempt_no,),
        ).id
        run.journal.record("crashpoint.plant", self.name, fault_kind=str(kind), rule=self.rule)

    def _hold_writes(self, run: CaseWorld, worker: int) -> None:
        self.toxics = run.write_links(worker)
        for proxy in self.toxics:
            proxy.add_toxic("timeout", stream="upstream", name=TOXIC, timeout=0)

    # -- the proofs --------------------------------------------------------------------
    def _what(self) -> str:
        held = self.held
        assert held is not None
        return f"effect request {self.n} (provider attempt {held.attempt_id}, {self.effect})"

    def _prove_committed(self, info: BarrierInfo) -> None:
        if info.state is BarrierState.RELEASED and held_at(info, self.struck):
            self.fact = (
                f"the provider held {self._what()}, committed as {info.effect_id}, from "
                f"{info.reached_at:.3f} until the harness let it go at {info.ended_at:.3f}; "
                f"the fault struck at {self.struck:.3f}"
            )

    def _prove_responded(self, info: BarrierInfo) -> None:
        if (
            self.struck is not None
            and info.reached_at is not None
            and info.reached_at <= self.struck
        ):
            held = ", ".join(p.name for p in self.toxics)
            self.fact = (
                f"the provider handed over the answer of {self._what()} ({info.effect_id}) at "
                f"{info.reached_at:.3f}; Toxiproxy held {held} at the strike ({self.struck:.3f})"
            )

    def _prove_attempt(self, run: CaseWorld) -> None:
        held = self.held
        if held is None or held.attempt_id is None:
            return
        attempt_id = held.attempt_id
        ended = lambda: _attempt(run, attempt_id) is not None  # noqa: E731
        run.wait_for("the held request to end", ended, ENDED_S)
        attempt = _attempt(run, attempt_id)
        if attempt is None:
            return
        outcome, fault, effect_id = attempt
        if self.strike_kind == "before_send":
            info = self.barriers[-1].info() if self.barriers else None
            if held_at(info, self.struck) and effect_id is None:
                self.fact = (
                    f"the provider held {self._what()} at 'received' (nothing committed) from "
                    f"{info.reached_at:.3f} to {info.ended_at:.3f}; the fault struck at "
                    f"{self.struck:.3f}; the attempt then ended as {outcome}, no commit"
                )
        elif fault == str(FaultKind.COMMIT_THEN_CLOSE) and effect_id is not None:
            self.fact = (
                f"the provider committed {self._what()} as {effect_id} and closed the "
                "connection without an answer (its attempt log: commit_then_close)"
            )
        elif fault == str(FaultKind.COMMIT_THEN_ERROR) and effect_id is not None:
            self.fact = (
                f"the provider committed {self._what()} as {effect_id} and answered HTTP 500 "
                "(its attempt log: commit_then_error)"
            )

    def disarm(self, run: CaseWorld) -> None:
        for barrier in self.barriers:
            with suppress(ControlRequestRejected):
                barrier.release()
        if self.strike_kind == "before_send" or self.strike_kind in ANSWER_FAULTS:
            self._prove_attempt(run)
        if self.rule is not None:
            with suppress(ControlRequestRejected):  # already cleared by a reset
                run.provider.remove_fault(self.rule)
        for proxy in self.toxics:
            if any(t.name == TOXIC for t in proxy.toxics()):
                proxy.remove_toxic(TOXIC)


def _reached(barrier: Barrier) -> Callable[[], bool]:
    return lambda: barrier.info().reached


def _attempt_effect(run: CaseWorld, attempt_id: int) -> str | None:
    found = [a for a in run.provider.attempts() if a.id == attempt_id]
    return str(found[0].effect) if found else None


def _attempt(run: CaseWorld, attempt_id: int) -> tuple[str, str | None, str | None] | None:
    """(outcome, fault, effect id) of an attempt that ended; None while it is in flight."""
    for a in run.provider.attempts():
        if a.id == attempt_id and str(a.outcome) != "in_flight":
            return str(a.outcome), str(a.fault) if a.fault else None, a.effect_id
    return None
