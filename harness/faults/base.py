"""The fault interface: one small module per kind, registered by name (Toxiproxy's toxics/).

A fault may act at three moments, each optional, and must be undoable:
- ``prepare``: before the delivery (a toxic or a provider fault that must already be there);
- ``inject``:  at the crash point, when the harness holds the request in its window;
- ``heal``:    undo everything; called before the sender's first retry and again at the end,
               so it must be idempotent.
A fault whose ``duration_s`` is set is healed by the runner that long after ``inject``.
Every action is written to the journal with a timestamp.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from harness.errors import ConfigError
from harness.journal import Journal
from harness.registry import Registry
from harness.workload import Delivery

if TYPE_CHECKING:
    from harness.stack.stack import Stack


@dataclass
class FaultContext:
    stack: Stack
    journal: Journal
    reference: str  # the business key of the case
    target_worker: int | None = None  # set by the crash point: the worker running the execution

    def target(self) -> int:
        if self.target_worker is None:
            raise ConfigError(
                "this fault needs a target worker; pair it with a crash point "
                "that finds one (before_send, after_commit, ...)"
            )
        return self.target_worker


class Fault(Protocol):
    name: str
    duration_s: float | None
    delivery: Delivery

    def proof(self, ctx: FaultContext) -> str | None:
        """Why we know the fault landed, or None if it did not (then: NO-EVIDENCE)."""
        ...

    def prepare(self, ctx: FaultContext) -> None: ...

    def inject(self, ctx: FaultContext) -> None: ...

    def heal(self, ctx: FaultContext) -> None: ...


class NoAction:
    """Mixin with the moments a fault does not use (each fault overrides what it needs)."""

    duration_s: float | None = None
    delivery: Delivery = Delivery.SENDER_RETRY

    def proof(self, ctx: FaultContext) -> str | None:
        """Default: the fault landed if the journal shows it was injected."""
        entries = [e for e in ctx.journal.entries if e.kind == "fault.inject"]
        return f"injected at {entries[0].at:.3f}: {entries[0].data}" if entries else None

    def prepare(self, ctx: FaultContext) -> None:
        del ctx

    def inject(self, ctx: FaultContext) -> None:
        del ctx

    def heal(self, ctx: FaultContext) -> None:
        del ctx


FAULTS: Registry[Fault] = Registry("fault")
register = FAULTS.register
get_fault = FAULTS.create
known_faults = FAULTS.names
