"""Fake third-party services the harness drives over HTTP: the ``payment`` provider process,
which also answers as the fakes chosen by host (``stripe``, ``record``, ``mail``; their
configuration is ``fake_providers.upstreams``).

The public surface is ``__all__``: the payment provider's control client (``ProviderControl``)
and its records and errors, the names of its faults and crash points, ``launch`` to run it as
a child process, and the providers' error root ``FakeProviderError``. The server itself
(FastAPI, uvicorn, SQLite) loads only from ``fake_providers.payment.create_app`` or ``python -m
fake_providers.payment``, so importing this package stays light.
"""

from __future__ import annotations

from fake_providers import payment
from fake_providers.errors import FakeProviderError
from fake_providers.payment import (
    Attempt,
    Barrier,
    BarrierInfo,
    BarrierNotReached,
    BarrierState,
    Commit,
    ControlRequestRejected,
    CrashPoint,
    Effect,
    Fault,
    FaultKind,
    InvalidControlArgument,
    Outcome,
    ProviderConfig,
    ProviderControl,
    ProviderControlError,
    ProviderProcess,
    ProviderStartError,
    ProviderUnreachable,
    launch,
)
from fake_providers.upstreams import (
    ReferenceSource,
    Route,
    RouteTemplate,
    Upstream,
    UpstreamConfigError,
)

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
    "FakeProviderError",
    "Fault",
    "FaultKind",
    "InvalidControlArgument",
    "Outcome",
    "ProviderConfig",
    "ProviderControl",
    "ProviderControlError",
    "ProviderProcess",
    "ProviderStartError",
    "ProviderUnreachable",
    "ReferenceSource",
    "Route",
    "RouteTemplate",
    "Upstream",
    "UpstreamConfigError",
    "launch",
    "payment",
]
