"""Crash-point barriers: a request that reaches an armed point signals and (maybe) holds.

The harness arms a barrier for a key (or a reference) and a point. The first processing request
that matches reaches it: the barrier records who reached it and sets an event that long-polling
waiters block on, then (for `received` and `committed`) the request holds until the harness
releases it or the hold deadline passes. A barrier is one-shot.

All of this runs on the one event loop that serves both ports, so asyncio.Event is the signal.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from dataclasses import dataclass, field
from typing import Any

from .kinds import BarrierState, CrashPoint

_HOLDING_POINTS = frozenset({CrashPoint.RECEIVED, CrashPoint.COMMITTED})


@dataclass(frozen=True)
class ReachedBy:
    """The attempt that reached a barrier."""

    attempt_id: int
    attempt_no: int
    key: str | None
    reference: str
    effect_id: str | None = None


@dataclass
class ArmedBarrier:
    id: str
    point: CrashPoint
    key: str | None
    reference: str | None
    hold_timeout_s: float
    state: BarrierState = BarrierState.ARMED
    armed_at: float = field(default_factory=time.time)
    reached_at: float | None = None
    ended_at: float | None = None
    reached_by: ReachedBy | None = None
    release_requested: bool = False
    reached: asyncio.Event = field(default_factory=asyncio.Event)
    released: asyncio.Event = field(default_factory=asyncio.Event)

    def matches(self, point: CrashPoint, key: str | None, reference: str) -> bool:
        return (
            self.state is BarrierState.ARMED
            and self.point is point
            and (self.key is None or self.key == key)
            and (self.reference is None or self.reference == reference)
        )

    def to_json(self) -> dict[str, Any]:
        reached_by = self.reached_by
        return {
            "id": self.id,
            "point": self.point.value,
            "key": self.key,
            "reference": self.reference,
            "hold_timeout_s": self.hold_timeout_s,
            "state": self.state.value,
            "armed_at": self.armed_at,
            "reached_at": self.reached_at,
            "ended_at": self.ended_at,
            "attempt_id": reached_by.attempt_id if reached_by else None,
            "attempt_no": reached_by.attempt_no if reached_by else None,
            "reached_key": reached_by.key if reached_by else None,
            "reached_reference": reached_by.reference if reached_by else None,
            "effect_id": reached_by.effect_id if reached_by else None,
        }


class BarrierRegistry:
    def __init__(self) -> None:
        self._barriers: dict[str, ArmedBarrier] = {}
        self._ids = itertools.count(1)

    def arm(
        self, point: CrashPoint, key: str | None, reference: str | None, hold_timeout_s: float
    ) -> ArmedBarrier:
        barrier = ArmedBarrier(
            id=f"barrier_{next(self._ids)}",
            point=point,
            key=key,
            reference=reference,
            hold_timeout_s=hold_timeout_s,
        )
        self._barriers[barrier.id] = barrier
        return barrier

    def get(self, barrier_id: str) -> ArmedBarrier | None:
        return self._barriers.get(barrier_id)

    async def wait_reached(self, barrier: ArmedBarrier, timeout_s: float) -> bool:
        try:
            async with asyncio.timeout(timeout_s):
                await barrier.reached.wait()
        except TimeoutError:
            return False
        return True

    def release(self, barrier: ArmedBarrier) -> None:
        barrier.release_requested = True
        barrier.released.set()

    async def reach(self, point: CrashPoint, reached_by: ReachedBy) -> ArmedBarrier | None:
        """Signal the first matching armed barrier and hold there if the point holds."""
        barrier = next(
            (
                b
                for b in self._barriers.values()
                if b.matches(point, reached_by.key, reached_by.reference)
            ),
            None,
        )
        if barrier is None:
            return None
        barrier.reached_by = reached_by
        barrier.reached_at = time.time()
        holds = point in _HOLDING_POINTS and not barrier.release_requested
        barrier.state = BarrierState.HOLDING if holds else BarrierState.PASSED
        barrier.reached.set()
        if holds:
            try:
                async with asyncio.timeout(barrier.hold_timeout_s):
                    await barrier.released.wait()
                barrier.state = BarrierState.RELEASED
            except TimeoutError:
                barrier.state = BarrierState.HOLD_EXPIRED
        barrier.ended_at = time.time()
        return barrier

    def release_all(self) -> None:
        """Let every held request go on (reset, shutdown)."""
        for barrier in self._barriers.values():
            self.release(barrier)

    def clear(self) -> None:
        self.release_all()
        self._barriers.clear()
