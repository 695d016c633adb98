"""The fault interface (Jepsen's nemesis): one small module per kind, registered by name
(Toxiproxy's toxics/). A fault says WHAT breaks; the crash point says WHEN, the delivery plan
HOW the event is sent.

A fault may act at three moments, each optional, and must be undoable:
- ``prepare``: before the delivery (a fault the provider must already hold for the effect);
- ``inject``:  at the crash point, when the harness holds the request in its window;
- ``heal``:    undo everything; called before the sender's first retry and again at the end,
               so it must be idempotent.
``met`` says whether a prepared fault has met its target yet (the engine waits for it before
healing, so an acknowledge-first workflow meets the fault too); ``proof`` names the fact
outside the harness that shows it landed (a process's exit by SIGKILL, the provider's hit
count), or None. A fault whose ``duration_s`` is set is healed that long after ``inject``.

What a fault pairs with is data on the class, as traits (see ``harness.engine.contract``): what it
``offers`` (``quiet``, ``worker_crash``, ...), what its crash point must offer
(``needs_window``), what its delivery plan must offer (``needs_plan``), what it needs from the
workflow (``needs``), and whether it loses the sender's answer after the effect committed
(where a workflow that promises nothing breaks).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Protocol

from harness.engine.journal import Journal
from harness.engine.registry import Registry
from harness.errors import WindowNotOpened

if TYPE_CHECKING:
    from harness.stack.n8n import N8nProcess
    from harness.stack.stack import Stack


@dataclass
class FaultContext:
    stack: Stack
    journal: Journal
    reference: str  # the business key of the case
    effect: str = "charge"  # the provider effect kind the workflow performs (charge | email)
    target_worker: int | None = None  # set by the crash point: the worker running the execution
    # The executions a fault struck, which n8n's stall sweep may fail because of it; None: the
    # fault does not say (a link or main fault may stall any execution). A worker fault names
    # those running on its worker at the strike.
    struck_executions: set[str] | None = None
    workflow_id: str = ""  # the workflow under test, as deployed (its executions' rows)
    execution_timeout_s: float | None = None  # its settings.executionTimeout, if any

    def target(self) -> int:
        if self.target_worker is None:
            raise WindowNotOpened(
                "no worker was found running the case's execution, so this fault had no "
                "target; the case is judged on what happened (no proof that the fault landed)"
            )
        return self.target_worker


class Fault(Protocol):
    name: str  # given by the registry
    duration_s: float | None
    offers: ClassVar[frozenset[str]]
    needs_window: ClassVar[frozenset[str]]
    needs_plan: ClassVar[frozenset[str]]
    needs: ClassVar[frozenset[str]]
    loses_answer: ClassVar[bool]
    loses_answer_needs: ClassVar[frozenset[str]]
    may_lose_answer: ClassVar[bool]
    effect_possible: ClassVar[bool]
    retry_needs_heal: ClassVar[bool]
    opt_in: ClassVar[bool]
    shares_stack: ClassVar[bool]  # see harness.engine.contract

    def prepare(self, ctx: FaultContext) -> None: ...

    def inject(self, ctx: FaultContext) -> None: ...

    def heal(self, ctx: FaultContext) -> None: ...

    def met(self, ctx: FaultContext) -> bool: ...

    def proof(self, ctx: FaultContext) -> str | None:
        """The outside fact that shows the fault landed, or None if it did not."""
        ...


class NoAction:
    """Defaults for the moments a fault does not use (each fault overrides what it needs)."""

    name: str = ""
    duration_s: float | None = None
    offers: ClassVar[frozenset[str]] = frozenset()
    # By default a fault is planted before the delivery (crash point ``none``).
    needs_window: ClassVar[frozenset[str]] = frozenset({"planted"})
    needs_plan: ClassVar[frozenset[str]] = frozenset()
    needs: ClassVar[frozenset[str]] = frozenset()
    loses_answer: ClassVar[bool] = False
    # What the workflow must offer for `loses_answer` to hold (a capability: see
    # harness.engine.contract); without it the sender may well be answered in time.
    loses_answer_needs: ClassVar[frozenset[str]] = frozenset()
    # True: whether the answer is lost depends on timing the harness cannot pin down.
    may_lose_answer: ClassVar[bool] = False
    effect_possible: ClassVar[bool] = True  # False: the scenario makes the effect impossible
    # False: the sender may retry while the heal runs (another worker serves the retry).
    retry_needs_heal: ClassVar[bool] = True
    # True: only the workflows whose manifest lists the fault (``production_faults``) run it;
    # a costly fault joins the matrix where it decides something, not everywhere.
    opt_in: ClassVar[bool] = False
    # True: touches nothing another case uses (no process, no link): see harness.engine.contract.
    shares_stack: ClassVar[bool] = False

    def prepare(self, ctx: FaultContext) -> None:
        del ctx

    def inject(self, ctx: FaultContext) -> None:
        del ctx

    def heal(self, ctx: FaultContext) -> None:
        del ctx

    def met(self, ctx: FaultContext) -> bool:
        del ctx
        return True

    def proof(self, ctx: FaultContext) -> str | None:
        del ctx
        return None


class WorkerFault(NoAction):
    """A fault on the worker that runs the case's execution; its proof is what the OS said
    of each one it struck (``facts``)."""

    # A live worker's stall sweep fails the struck one's job.
    needs: ClassVar[frozenset[str]] = frozenset({"second_worker"})
    loses_answer: ClassVar[bool] = True

    def __init__(self) -> None:
        self.facts: list[str] = []

    def prepare(self, ctx: FaultContext) -> None:
        ctx.struck_executions = set()  # only what it strikes may stall

    def target_worker(self, ctx: FaultContext) -> N8nProcess:
        """The worker running the execution, its strike journaled."""
        worker = ctx.stack.workers[ctx.target()]
        ctx.struck_executions = {*(ctx.struck_executions or ()), *worker.running_executions()}
        ctx.journal.record("fault.inject", self.name, worker=worker.name, pid=worker.pid)
        return worker

    def proof(self, ctx: FaultContext) -> str | None:
        del ctx
        return ", ".join(self.facts) if self.facts else None


FAULTS: Registry[Fault] = Registry("fault")
register = FAULTS.register
get_fault = FAULTS.create
known_faults = FAULTS.names
