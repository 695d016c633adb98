"""Fixtures for the fake payment provider's tests.

- `provider_server`: the real server as a child process (`python -m fake_providers.payment`),
  started once per module, READY line read with a deadline, stopped (and reaped) on teardown.
- `live`: that server after a reset, with a control client and an HTTP client.
- `inproc`: the apps in-process over `httpx.ASGITransport`, with a settable clock.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from fake_providers.payment import (
    ProviderConfig,
    ProviderControl,
    ProviderProcess,
    create_app,
    launch,
)

READY_TIMEOUT_S = 20.0


def charge_body(reference: str, amount: int = 1250, **extra: Any) -> dict[str, Any]:
    return {"amount": amount, "currency": "eur", "reference": reference, **extra}


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


@dataclass
class LiveProvider:
    process: ProviderProcess
    control: ProviderControl
    http: httpx.Client

    def charge(
        self, key: str | None, reference: str, *, timeout: float | None = None, **extra: Any
    ) -> httpx.Response:
        headers = {"Idempotency-Key": key} if key is not None else {}
        kwargs: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
        return self.http.post(
            "/v1/charges", json=charge_body(reference, **extra), headers=headers, **kwargs
        )


@pytest.fixture(scope="module")
def provider_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProviderProcess]:
    db = tmp_path_factory.mktemp("provider") / "ledger.db"
    process = launch(db, ready_timeout=READY_TIMEOUT_S)
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture
def live(provider_server: ProviderProcess) -> Iterator[LiveProvider]:
    with (
        ProviderControl(provider_server.control_url) as control,
        httpx.Client(base_url=provider_server.base_url, timeout=10.0) as http,
    ):
        control.reset()
        yield LiveProvider(provider_server, control, http)
        control.reset()  # also lets go of anything a failed test left held


class FakeClock:
    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class InProcessProvider:
    public: httpx.AsyncClient
    control: httpx.AsyncClient
    clock: FakeClock
    config: ProviderConfig

    async def charge(self, key: str | None, reference: str, **extra: Any) -> httpx.Response:
        headers = {"Idempotency-Key": key} if key is not None else {}
        return await self.public.post(
            "/v1/charges", json=charge_body(reference, **extra), headers=headers
        )

    async def catch_up_index(self) -> None:
        """A search sees every record stored so far (as a day later)."""
        (await self.control.post("/_control/index/catch-up")).raise_for_status()

    async def commits(self, **params: str) -> list[dict[str, Any]]:
        response = await self.control.get("/_control/commits", params=params)
        response.raise_for_status()
        rows: list[dict[str, Any]] = response.json()
        return rows


def inprocess_config(tmp_path: Path, **overrides: Any) -> ProviderConfig:
    return ProviderConfig(db_path=tmp_path / "ledger.db", **overrides)


@pytest_asyncio.fixture
async def inproc(
    tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[InProcessProvider]:
    """Parametrise indirectly with a dict of ProviderConfig overrides if needed."""
    overrides: dict[str, Any] = getattr(request, "param", {})
    clock = FakeClock()
    config = inprocess_config(tmp_path, **overrides)
    provider = create_app(config, clock=clock)
    public = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=provider.public), base_url="http://provider"
    )
    control = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=provider.control), base_url="http://control"
    )
    async with public, control:
        yield InProcessProvider(public, control, clock, config)
    provider.close()
