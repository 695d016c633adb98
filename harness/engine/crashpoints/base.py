"""The crash point interface: WHEN a case's fault strikes, made deterministic with the
provider's barriers, Toxiproxy toxics and Postgres locks, never with sleeps.

A crash point acts at three moments:
- ``arm``:    before the delivery (a barrier, a toxic: the window is made to stay open);
- ``strike``: while the delivery runs: wait until the window is open, inject the fault,
              and record the fact outside the harness that proves the strike was inside it;
- ``disarm``: always, at the end: let held requests go, remove toxics, drop locks.
``proof()`` returns that fact, or None (then the case is NO-EVIDENCE unless the ground truth
already shows a broken promise). A wait that gives up (the workflow finished without ever
opening the window, e.g. it never calls the provider) is journaled and leaves no proof.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Protocol, TypeGuard

from fake_providers.payment import Barrier, BarrierInfo
from fake_providers.payment import CrashPoint as ProviderPoint
from harness.engine.registry import Registry

if TYPE_CHECKING:
    from harness.engine.contract import CaseWorld
    from harness.engine.workload import BackgroundDelivery

REACH_S = 60.0  # how long the effect request may take to open the window
HOLD_S = 90.0  # the provider's own hold limit: far beyond any strike, so it never releases


class CrashPoint(Protocol):
    name: str  # given by the registry
    offers: ClassVar[frozenset[str]]  # traits of the window (see harness.engine.contract)
    needs: ClassVar[frozenset[str]]
    # The window lies after the provider committed (where a workflow that promises nothing
    # breaks once the sender's answer is lost and the event comes again).
    after_effect: ClassVar[bool]
    # What the workflow must offer for the sender's answer to be lost in the window.
    loses_answer_needs: ClassVar[frozenset[str]]
    shares_stack: ClassVar[bool]  # see harness.engine.contract

    def arm(self, run: CaseWorld) -> None: ...

    def strike(self, run: CaseWorld, delivery: BackgroundDelivery) -> None: ...

    def disarm(self, run: CaseWorld) -> None: ...

    def proof(self) -> str | None: ...


class Window:
    """Defaults and the proof slot shared by the crash points."""

    name: str = ""
    # The windows around the effect request; ``none`` offers ``planted`` instead.
    offers: ClassVar[frozenset[str]] = frozenset({"in_flight"})
    needs: ClassVar[frozenset[str]] = frozenset()
    after_effect: ClassVar[bool] = True
    loses_answer_needs: ClassVar[frozenset[str]] = frozenset()
    shares_stack: ClassVar[bool] = False  # True: strikes nothing another case uses

    def __init__(self) -> None:
        self.fact: str | None = None

    def arm(self, run: CaseWorld) -> None:
        del run

    def strike(self, run: CaseWorld, delivery: BackgroundDelivery) -> None:
        del run, delivery

    def disarm(self, run: CaseWorld) -> None:
        del run

    def proof(self) -> str | None:
        return self.fact


class HeldAtCommit(Window):
    """A window held open by the provider's barrier at the effect's commit (``barrier``,
    armed before the delivery), let go at disarm."""

    def __init__(self) -> None:
        super().__init__()
        self.barrier: Barrier | None = None

    def arm(self, run: CaseWorld) -> None:
        self.barrier = hold_at(run, ProviderPoint.COMMITTED)

    def disarm(self, run: CaseWorld) -> None:
        del run
        if self.barrier is not None:
            self.barrier.release()


def hold_at(run: CaseWorld, point: ProviderPoint) -> Barrier:
    """Arm a provider barrier for the case's reference (its hold outlasts any strike)."""
    return run.provider.arm_barrier(None, point, HOLD_S, reference=run.key)


def held_at(info: BarrierInfo | None, moment: float | None) -> TypeGuard[BarrierInfo]:
    """The barrier held its request from its reach to its end, ``moment`` in between."""
    return (
        info is not None
        and moment is not None
        and info.reached_at is not None
        and info.ended_at is not None
        and info.reached_at <= moment <= info.ended_at
    )


def committed_and_running(
    run: CaseWorld, committed: Barrier, delivery: BackgroundDelivery
) -> tuple[bool, int | None]:
    """Wait until the effect is committed and held at ``committed``, then find the worker
    running the execution: (reached, worker). Gives up (journaled) when the workflow's work
    ended without getting there."""
    over = lambda: run.work_over(delivery)  # noqa: E731
    if not run.wait_for(
        "the effect to be committed", lambda: committed.info().reached, REACH_S, over
    ):
        return False, None
    execution = run.wait_running_execution(30.0, over)
    return True, None if execution is None else run.find_target(execution)


CRASHPOINTS: Registry[CrashPoint] = Registry("crash point")
register = CRASHPOINTS.register
get_crashpoint = CRASHPOINTS.create
known_crashpoints = CRASHPOINTS.names
