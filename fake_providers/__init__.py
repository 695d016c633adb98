"""Fake third-party services the harness drives over HTTP: the ``payment`` provider process,
which also answers as the fakes chosen by host (``stripe``, ``record``, ``mail``; their
configuration is ``fake_providers.upstreams``).

The public surface is three names: ``payment`` (its ``__all__``: the provider's control
client ``ProviderControl`` with its records and errors, the names of its faults and crash
points, ``launch`` to run it as a child process), ``upstreams`` (what a fake answers as, for
which host) and the providers' error root ``FakeProviderError``. The server itself (FastAPI,
uvicorn, SQLite) loads only from ``fake_providers.payment.create_app`` or ``python -m
fake_providers.payment``, so importing this package stays light.
"""

from __future__ import annotations

from fake_providers import payment, upstreams
from fake_providers.errors import FakeProviderError

__all__ = ["FakeProviderError", "payment", "upstreams"]
