"""Crash-point barriers over real HTTP: arm, the request blocks, the harness wakes, release."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from fake_providers.payment import BarrierNotReached, BarrierState, CrashPoint, Outcome

from .conftest import LiveProvider, unique

pytestmark = pytest.mark.timeout(60)


def test_received_barrier_holds_before_commit(live: LiveProvider) -> None:
    key, reference = unique("k"), unique("order")
    barrier = live.control.arm_barrier(key, CrashPoint.RECEIVED, hold_timeout=20)
    with ThreadPoolExecutor(1) as pool:
        request = pool.submit(live.charge, key, reference)
        info = barrier.wait_reached(10)
        assert (info.state, info.attempt_no, info.reached_reference) == (
            BarrierState.HOLDING,
            1,
            reference,
        )
        assert live.control.commits(reference=reference) == []
        assert not request.done()
        barrier.release()
        response = request.result(10)
    assert response.status_code == 200
    assert len(live.control.commits(reference=reference)) == 1
    assert barrier.info().state is BarrierState.RELEASED


def test_committed_barrier_holds_after_commit_before_response(live: LiveProvider) -> None:
    key, reference = unique("k"), unique("order")
    barrier = live.control.arm_barrier(key, CrashPoint.COMMITTED, hold_timeout=20)
    with ThreadPoolExecutor(1) as pool:
        request = pool.submit(live.charge, key, reference)
        info = barrier.wait_reached(10)
        [commit] = live.control.commits(reference=reference)
        assert info.effect_id == commit.effect_id
        assert not request.done()
        barrier.release()
        assert request.result(10).json()["id"] == commit.effect_id


def test_responded_barrier_signals_after_the_response(live: LiveProvider) -> None:
    key, reference = unique("k"), unique("order")
    barrier = live.control.arm_barrier(key, CrashPoint.RESPONDED)
    response = live.charge(key, reference)
    info = barrier.wait_reached(10)
    assert info.state is BarrierState.PASSED
    assert info.effect_id == response.json()["id"]


def test_hold_ends_at_its_deadline_without_release(live: LiveProvider) -> None:
    key, reference = unique("k"), unique("order")
    barrier = live.control.arm_barrier(key, CrashPoint.RECEIVED, hold_timeout=0.3)
    assert live.charge(key, reference).status_code == 200
    info = barrier.info()
    assert info.state is BarrierState.HOLD_EXPIRED
    assert info.ended_at is not None and info.reached_at is not None
    assert info.ended_at - info.reached_at >= 0.3


def test_wait_times_out_when_nothing_arrives(live: LiveProvider) -> None:
    barrier = live.control.arm_barrier(unique("k"), CrashPoint.RECEIVED)
    with pytest.raises(BarrierNotReached):
        barrier.wait_reached(0.2)
    assert barrier.info().state is BarrierState.ARMED


def test_release_before_arrival_lets_the_request_pass(live: LiveProvider) -> None:
    key, reference = unique("k"), unique("order")
    barrier = live.control.arm_barrier(key, CrashPoint.COMMITTED, hold_timeout=30)
    barrier.release()
    assert live.charge(key, reference).status_code == 200
    assert barrier.wait_reached(5).state is BarrierState.PASSED


def test_barrier_is_one_shot_and_skips_replays(live: LiveProvider) -> None:
    key, reference = unique("k"), unique("order")
    barrier = live.control.arm_barrier(key, CrashPoint.RESPONDED)
    live.charge(key, reference)
    first = barrier.wait_reached(5)
    live.charge(key, reference)  # a replay does not reach processing points
    assert barrier.info().attempt_id == first.attempt_id


def test_barrier_by_reference_for_keyless_email(live: LiveProvider) -> None:
    reference = unique("order")
    barrier = live.control.arm_barrier(None, CrashPoint.RECEIVED, reference=reference)
    email = {"to": "a@example.com", "subject": "Hi", "reference": reference}
    with ThreadPoolExecutor(1) as pool:
        request = pool.submit(live.http.post, "/v1/emails", json=email)
        assert barrier.wait_reached(10).reached_reference == reference
        barrier.release()
        assert request.result(10).status_code == 200


def test_reset_lets_held_requests_go_without_committing(live: LiveProvider) -> None:
    key, reference = unique("k"), unique("order")
    barrier = live.control.arm_barrier(key, CrashPoint.RECEIVED, hold_timeout=30)
    with ThreadPoolExecutor(1) as pool:
        request = pool.submit(live.charge, key, reference)
        barrier.wait_reached(10)
        live.control.reset()
        response: httpx.Response = request.result(10)
    assert response.status_code == 503
    assert live.control.commits() == []
    assert live.control.attempts() == []
    assert live.charge(key, reference).status_code == 200
    assert [a.outcome for a in live.control.attempts(key=key)] == [Outcome.COMMITTED]
