"""Fake payment provider: Stripe/IETF-style idempotent charges plus a per-attempt fault plan.

Start it (binds 127.0.0.1 only):

    python -m fake_providers.payment --port 0 --control-port 0 --db run/provider.db \\
        [--key-ttl SECONDS] [--lenient]

It prints one line on stdout when both ports accept connections:

    READY {"port": 41234, "control_port": 41235, "smtp_port": 41236, "pid": 4242}

`launch(db_path)` does that from Python and returns a `ProviderProcess` (ports, URLs, stop/kill).

Public port (n8n talks to it, through the fault proxy):
- POST /v1/charges with `Idempotency-Key` (token or RFC 8941 quoted string, 1..255 chars):
  missing key 400 (unless --lenient), same key in flight 409, same key other payload 422,
  same key completed: stored response replayed byte for byte (errors too) with
  `Idempotent-Replayed: true`; completed keys expire after the TTL (default 24 h).
- GET /v1/charges?idempotency_key=...|reference=..., GET /v1/charges/{id}: reconciliation.
- POST /v1/emails: not idempotent, every call commits (effect "email").
- Bad input: problem+json 400/413/415, never a 5xx and never a commit.

Control port (never behind a proxy), driven through `ProviderControl`:
- `reset()`, `set_ttl(seconds)`, `catch_up_index()` (a search sees every record), `health()`
- `add_fault(kind, key=.., reference_prefix=.., attempts=(1,), ...) -> Fault`, `faults()`,
  `clear_faults()`; kinds in `FaultKind`, semantics in `fake_providers.payment.faults`
- `arm_barrier(key, point, hold_timeout) -> Barrier`; `Barrier.wait_reached(timeout)`
  (long-poll) `-> BarrierInfo`, `Barrier.release()`; points in `CrashPoint`
- `commits(reference=None, key=.., effect=..) -> list[Commit]`: THE ground truth, one row per
  committed effect; `attempts(reference=None, key=.., outcome=..) -> list[Attempt]`
- errors: `ProviderControlError` > `ProviderUnreachable`, `ControlRequestRejected`,
  `BarrierNotReached`, `InvalidControlArgument`

Upstream fakes (`fake_providers.upstreams.Upstream`, set with `set_upstreams([...])`, kept
across `reset()`): a request whose Host header (port stripped) is a configured host goes to
its fake (`stripe`, `record`; see `fakes/`), every other host to the JSON API above. The
`mail` fake is an SMTP server on its own port (`--smtp-port`, READY's `smtp_port`). Fakes
commit into the same ledger, under their own effect kinds, through the same barriers and
fault plan.

In-process (fast tests): `create_app(ProviderConfig(db_path=...))` returns the public and the
control FastAPI apps over one runtime.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .config import ProviderConfig
from .control import (
    Attempt,
    Barrier,
    BarrierInfo,
    BarrierNotReached,
    Commit,
    ControlRequestRejected,
    Fault,
    InvalidControlArgument,
    ProviderControl,
    ProviderControlError,
    ProviderUnreachable,
)
from .kinds import BarrierState, CrashPoint, Effect, FaultKind, Outcome
from .launcher import ProviderProcess, ProviderStartError, launch

if TYPE_CHECKING:
    from .app import ProviderApp, create_app

# The server stack (FastAPI, uvicorn, SQLite) loads only when asked for: the harness imports
# this package for the control client and the shared names, and must stay light.
_SERVER_NAMES = ("ProviderApp", "create_app")


def __getattr__(name: str) -> Any:
    if name in _SERVER_NAMES:
        from . import app

        return getattr(app, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Attempt",
    "Barrier",
    "BarrierInfo",
    "BarrierNotReached",
    "BarrierState",
    "Commit",
    "ControlRequestRejected",
    "CrashPoint",
    "Effect",
    "Fault",
    "FaultKind",
    "InvalidControlArgument",
    "Outcome",
    "ProviderApp",
    "ProviderConfig",
    "ProviderControl",
    "ProviderControlError",
    "ProviderProcess",
    "ProviderStartError",
    "ProviderUnreachable",
    "create_app",
    "launch",
]
