"""Idempotency semantics over real HTTP against the provider running as a child process."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from fake_providers.payment import CrashPoint, Outcome

from .conftest import LiveProvider, charge_body, unique

pytestmark = pytest.mark.timeout(60)

CONCURRENT_DUPLICATES = 50


async def _fire_together(base_url: str, key: str, reference: str) -> list[httpx.Response]:
    """Open every connection first, then send all requests when the last one is ready."""
    all_connected = asyncio.Barrier(CONCURRENT_DUPLICATES)
    clients = [
        httpx.AsyncClient(base_url=base_url, timeout=30) for _ in range(CONCURRENT_DUPLICATES)
    ]

    async def one(client: httpx.AsyncClient) -> httpx.Response:
        await client.get("/health")  # the connection is up before anyone sends
        await all_connected.wait()
        return await client.post(
            "/v1/charges", json=charge_body(reference), headers={"Idempotency-Key": key}
        )

    try:
        return await asyncio.gather(*(one(client) for client in clients))
    finally:
        await asyncio.gather(*(client.aclose() for client in clients))


def test_fifty_concurrent_identical_requests_commit_once(live: LiveProvider) -> None:
    key, reference = unique("race"), unique("order")
    responses = asyncio.run(_fire_together(live.process.base_url, key, reference))
    ok = [r for r in responses if r.status_code == 200]
    assert {r.status_code for r in responses} <= {200, 409}
    assert len({r.content for r in ok}) == 1
    assert len(live.control.commits(reference=reference)) == 1
    outcomes = [a.outcome for a in live.control.attempts(key=key)]
    assert len(outcomes) == CONCURRENT_DUPLICATES
    assert outcomes.count(Outcome.COMMITTED) == 1


def test_replay_is_byte_for_byte_with_replay_header(live: LiveProvider) -> None:
    key, reference = unique("k"), unique("order")
    first = live.charge(key, reference)
    again = live.charge(f'"{key}"', reference)
    assert first.status_code == again.status_code == 200
    assert again.content == first.content
    assert again.headers["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first.headers
    assert again.headers["content-type"] == first.headers["content-type"]
    [commit] = live.control.commits(reference=reference)
    assert commit.charge_id == first.json()["id"]
    [_, replay] = live.control.attempts(key=key)
    assert (replay.outcome, replay.effect_id) == (Outcome.REPLAYED, commit.effect_id)


def test_same_key_while_in_flight_is_409(live: LiveProvider) -> None:
    key, reference = unique("k"), unique("order")
    barrier = live.control.arm_barrier(key, CrashPoint.RECEIVED, hold_timeout=20)
    with ThreadPoolExecutor(1) as pool:
        original = pool.submit(live.charge, key, reference)
        barrier.wait_reached(10)
        duplicate = live.charge(key, reference)
        barrier.release()
        assert original.result(10).status_code == 200
    assert duplicate.status_code == 409
    assert duplicate.headers["content-type"] == "application/problem+json"
    assert len(live.control.commits(reference=reference)) == 1


def test_same_key_other_payload_is_422(live: LiveProvider) -> None:
    key, reference = unique("k"), unique("order")
    live.charge(key, reference)
    response = live.charge(key, reference, amount=1)
    assert response.status_code == 422
    assert len(live.control.commits(reference=reference)) == 1
    assert live.control.attempts(key=key)[-1].outcome is Outcome.MISMATCH


def test_redelivery_after_key_expiry_commits_again(live: LiveProvider) -> None:
    key, reference = unique("k"), unique("order")
    first = live.charge(key, reference)
    live.control.set_ttl(0)  # every completed key is now older than the TTL
    late = live.charge(key, reference)
    assert late.status_code == 200
    assert "Idempotent-Replayed" not in late.headers
    assert late.json()["id"] != first.json()["id"]
    assert len(live.control.commits(reference=reference)) == 2


def test_bad_input_over_http_never_commits(live: LiveProvider) -> None:
    big = {"amount": 5, "currency": "eur", "reference": "r", "description": "x" * 100_000}
    responses = [
        live.http.post(
            "/v1/charges",
            content=b"{",
            headers={"Idempotency-Key": "a", "content-type": "application/json"},
        ),
        live.http.post("/v1/charges", json=big, headers={"Idempotency-Key": "b"}),
        live.http.post("/v1/charges", json=charge_body("r"), headers={"Idempotency-Key": "a b"}),
        live.http.post(
            "/v1/charges", json=charge_body("r", amount=10**12), headers={"Idempotency-Key": "c"}
        ),
    ]
    assert [r.status_code for r in responses] == [400, 413, 400, 400]
    assert all(r.headers["content-type"] == "application/problem+json" for r in responses)
    assert live.control.commits() == []
