"""The delivery plan interface (Jepsen's client): HOW the sender sends the business event.

A plan acts at two moments:
- ``start``:        the first delivery, in the background (the crash point acts meanwhile);
- ``after_settle``: once the first delivery's work settled and the fault healed, whatever
                    comes later (a redelivery, a changed payload, an operator's retry);
                    returns True if it sent anything (the engine then settles again).
``proof()`` names the fact that shows the plan did what its name says (e.g. the concurrent
copies' executions overlapped in n8n's own rows), or None.

What a plan pairs with is data on the class, as traits (see ``harness.engine.contract``): what it
``offers`` (``baseline``, ``no_sender_retry``, ...), which fault and crash point combinations it
``accepts`` (None: every fault that does not ask for its own plan; else trait sets, one of
which the fault's and crash point's offers together must contain), ``needs`` what it needs
from the workflow, ``resends`` whether the same event arrives again
whatever the fault (where a workflow that promises nothing breaks), ``repeat`` how often a
case runs by default (races need several runs to be caught reliably).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from harness.engine.registry import Registry

if TYPE_CHECKING:
    from harness.engine.contract import CaseWorld
    from harness.engine.workload import BackgroundDelivery, DeliveryAttempt


class DeliveryPlan(Protocol):
    name: str  # given by the registry
    offers: ClassVar[frozenset[str]]
    accepts: ClassVar[tuple[frozenset[str], ...] | None]
    needs: ClassVar[frozenset[str]]
    resends: ClassVar[bool]
    repeat: ClassVar[int]
    shares_stack: ClassVar[bool]  # see harness.engine.contract

    def start(self, run: CaseWorld) -> BackgroundDelivery: ...

    def after_settle(self, run: CaseWorld) -> bool: ...

    def proof(self) -> str | None: ...


class Plan:
    """Defaults shared by the plans: one delivery, retried, nothing later."""

    name: str = ""
    offers: ClassVar[frozenset[str]] = frozenset()
    accepts: ClassVar[tuple[frozenset[str], ...] | None] = ()
    needs: ClassVar[frozenset[str]] = frozenset()
    resends: ClassVar[bool] = False
    repeat: ClassVar[int] = 1
    # True: sends and holds only the case's own requests (see harness.engine.contract).
    shares_stack: ClassVar[bool] = False

    def __init__(self) -> None:
        self.fact: str | None = None

    def start(self, run: CaseWorld) -> BackgroundDelivery:
        return run.start_delivery(retry=True)

    def after_settle(self, run: CaseWorld) -> bool:
        del run
        return False

    def proof(self) -> str | None:
        return self.fact


class QuietResend(Plan):
    """The same event again, on a quiet stack, from the case's own sender: it sends and holds
    only the case's own deliveries (and barrier), so it shares the stack."""

    accepts = (frozenset({"quiet"}),)
    shares_stack = True
    resends = True


def first_answered_ok(run: CaseWorld) -> DeliveryAttempt | None:
    """The first delivery's last attempt, if it was answered 2xx (what a later delivery repeats)."""
    first = run.attempts("d1")
    return first[-1] if first and first[-1].outcome == "ok" else None


def max_overlap(rows: list[dict[str, Any]]) -> int:
    """The most executions running at one instant, from n8n's started/stopped times."""
    events: list[tuple[float, int]] = []
    for row in rows:
        start, stop = row.get("started_at"), row.get("stopped_at")
        if start is None:
            continue
        events += [(start, 1), (stop if stop is not None else float("inf"), -1)]
    running = best = 0
    for _, step in sorted(events, key=lambda e: (e[0], e[1])):
        running += step
        best = max(best, running)
    return best


def release_together(actions: Sequence[Callable[[], None]], wait_s: float) -> None:
    """Run ``actions`` in threads released by one barrier (each waits ``wait_s`` for the
    others), so their calls are in flight at the same instant; returns once all ended, or
    ``wait_s`` + 60 s after each was joined."""
    if not actions:
        return
    gate = threading.Barrier(len(actions))

    def released(action: Callable[[], None]) -> None:
        gate.wait(wait_s)
        action()

    threads = [threading.Thread(target=released, args=(action,)) for action in actions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(wait_s + 60.0)


DELIVERIES: Registry[DeliveryPlan] = Registry("delivery plan")
register = DELIVERIES.register
get_delivery = DELIVERIES.create
known_deliveries = DELIVERIES.names
