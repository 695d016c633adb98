"""Names shared by the provider server and its control client.

Kept free of FastAPI and SQLite imports so that `control.py` (used by the harness) stays light.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Effect(StrEnum):
    """The bundled JSON API's effect kinds. Upstream fakes commit under other names (plain
    strings: "payment_intent", "customer", "record", ...), so stored effects are `str`."""

    CHARGE = "charge"
    EMAIL = "email"


class FaultKind(StrEnum):
    """Faults the provider can inject into one attempt (see `faults.py` for the semantics)."""

    DELAY_BEFORE_COMMIT = "delay_before_commit"
    ERROR_BEFORE_COMMIT = "error_before_commit"
    RATE_LIMITED = "rate_limited"
    COMMIT_THEN_ERROR = "commit_then_error"
    COMMIT_THEN_CLOSE = "commit_then_close"
    COMMIT_THEN_RESET = "commit_then_reset"
    COMMIT_THEN_HANG = "commit_then_hang"

    @property
    def commits(self) -> bool:
        """True when the effect is committed before the fault shows."""
        return self.value.startswith("commit_then_")


class CrashPoint(StrEnum):
    """Where in the request a barrier signals (and, except `responded`, holds)."""

    RECEIVED = "received"  # key claimed, nothing committed yet
    COMMITTED = "committed"  # effect committed, response not yet handed to the server
    RESPONDED = "responded"  # response handed to the server; signal only, no hold


class Outcome(StrEnum):
    """What one attempt amounted to; stored in the attempt log."""

    IN_FLIGHT = "in_flight"
    COMMITTED = "committed"
    REPLAYED = "replayed"
    CONFLICT = "conflict"  # the key's first request still in flight: "retry later" (409)
    MISMATCH = "mismatch"  # the key reused with another payload: refused (Stripe 400, IETF 422)
    REJECTED_4XX = "rejected_4xx"
    DECLINED_402 = "declined_402"
    FAULT_INJECTED = "fault_injected"  # a pre-commit fault answered; nothing committed
    INTERRUPTED = "interrupted"  # the provider stopped or was reset while the attempt ran
    PROCESSED = "processed"  # answered a creation that is not an effect route: no commit
    SEEDED = "seeded"  # state the harness wrote before the case's event (fakes.seeding)


class BarrierState(StrEnum):
    ARMED = "armed"
    HOLDING = "holding"
    RELEASED = "released"
    HOLD_EXPIRED = "hold_expired"
    PASSED = "passed"  # reached where no hold applies (`responded`, or released before reached)


@dataclass(frozen=True)
class CommitRow:
    """One committed side effect as the ledger stores it: the number the oracle counts per
    reference. The control client's `Commit` is this row with its place in the ledger."""

    effect: str
    effect_id: str
    reference: str
    idempotency_key: str | None
    fingerprint: str
    attempt_id: int
    attempt_no: int
    committed_at: float
