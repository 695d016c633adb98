"""What exploration strikes, in which order, and how far a budget lets it go.

Every effect request of the trace gets the four strikes of
``harness.engine.crashpoints.explore_boundary``; the order is breadth first (every boundary's
``after_commit`` before any boundary's second strike), so a small budget still touches every
request once. A gap between two nodes is struck through the request next to it: the
``after_response`` strike of the request the earlier node sent (its answer is in, nothing
after it was written) or the ``before_send`` strike of the request the later node sends.
A gap with no effect request beside it has no outside part to hold the worker there: it is
listed as not struck (NO-EVIDENCE), never guessed at with a sleep.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from harness.engine.crashpoints.explore_boundary import (
    STRIKE_KINDS,
    STRIKES,
    Strike,
    crashpoint_name,
)
from harness.errors import ConfigError
from harness.explore.boundary import Boundary, Trace


@dataclass(frozen=True)
class Probe:
    """One case of exploration: a strike at a request boundary."""

    workflow: str
    boundary: Boundary
    strike: Strike

    @property
    def crashpoint(self) -> str:
        assert self.boundary.request is not None
        assert self.boundary.request.effect_index is not None
        return crashpoint_name(self.strike, self.boundary.request.effect_index)

    @property
    def fault(self) -> str:
        return STRIKE_KINDS[self.strike].fault

    @property
    def selector(self) -> str:
        """What ``--only`` takes to run this probe again: WORKFLOW:BOUNDARY:STRIKE."""
        return f"{self.workflow}:{self.boundary.id}:{self.strike}"


@dataclass(frozen=True)
class GapCover:
    """How a gap between two nodes is struck: by which probes, or not at all."""

    gap: Boundary
    probes: list[Probe] = field(default_factory=list)


def probes_of(trace: Trace, only: Sequence[str] = ()) -> list[Probe]:
    requests = [b for b in trace.boundaries if b.kind == "request"]
    probes = [Probe(trace.workflow, b, s) for s in STRIKES for b in requests]
    if only:
        wanted = set(only)
        probes = [
            p
            for p in probes
            if p.selector in wanted
            or f"{p.workflow}:{p.boundary.id}" in wanted
            or p.workflow in wanted
        ]
    return probes


def gap_covers(trace: Trace, probes: Sequence[Probe]) -> list[GapCover]:
    covers = []
    for gap in (b for b in trace.boundaries if b.kind == "node_gap"):
        by = [
            p
            for p in probes
            if p.boundary.request is not None
            and (
                (p.strike == "after_response" and p.boundary.request.node == gap.after_node)
                or (p.strike == "before_send" and p.boundary.request.node == gap.before_node)
            )
        ]
        covers.append(GapCover(gap, by))
    return covers


@dataclass
class Budget:
    """At most ``cases`` cases and/or ``minutes`` of wall time (a case already started runs
    to its end: it cannot be cut without losing its evidence)."""

    cases: int | None = None
    minutes: float | None = None
    clock: Callable[[], float] = time.monotonic
    started: float = field(init=False)
    spent_cases: int = 0

    def __post_init__(self) -> None:
        if self.cases is not None and self.cases < 1:
            raise ConfigError(f"--budget-cases {self.cases}: give a number of cases >= 1")
        if self.minutes is not None and self.minutes <= 0:
            raise ConfigError(f"--budget-minutes {self.minutes}: give a positive number")
        self.started = self.clock()

    def allows_another(self) -> bool:
        if self.cases is not None and self.spent_cases >= self.cases:
            return False
        return self.minutes is None or self.clock() - self.started < self.minutes * 60

    def spend(self) -> None:
        self.spent_cases += 1

    def describe(self) -> str:
        parts = []
        if self.cases is not None:
            parts.append(f"{self.spent_cases}/{self.cases} cases")
        if self.minutes is not None:
            parts.append(f"{(self.clock() - self.started) / 60:.1f}/{self.minutes:g} min")
        return ", ".join(parts) or "no budget"
