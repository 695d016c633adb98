"""The typed control client: dataclasses out, one exception tree for every failure."""

from __future__ import annotations

import socket

import pytest

from fake_providers.payment import (
    BarrierNotReached,
    ControlRequestRejected,
    CrashPoint,
    Effect,
    FaultKind,
    InvalidControlArgument,
    ProviderControl,
    ProviderControlError,
    ProviderUnreachable,
)
from fake_providers.payment.control import Barrier, BarrierInfo
from fake_providers.upstreams import ReferenceSource, Upstream

from .conftest import LiveProvider, unique

pytestmark = pytest.mark.timeout(60)


def test_error_classes_share_one_base() -> None:
    for error in (
        ProviderUnreachable,
        ControlRequestRejected,
        BarrierNotReached,
        InvalidControlArgument,
    ):
        assert issubclass(error, ProviderControlError)


def test_unreachable_port_raises_provider_unreachable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound but not listening: connection refused
        with (
            ProviderControl(f"http://127.0.0.1:{port}", timeout=2) as control,
            pytest.raises(ProviderUnreachable),
        ):
            control.reset()


def test_rejections_carry_status_and_problem(live: LiveProvider) -> None:
    with pytest.raises(ControlRequestRejected) as rejected:
        live.control.set_ttl(-1)
    assert rejected.value.status_code == 400
    assert rejected.value.problem["status"] == 400
    with pytest.raises(InvalidControlArgument):
        live.control.add_fault("not-a-kind")
    ghost = Barrier(live.control, BarrierInfo.from_json(_armed_json("barrier_404")))
    with pytest.raises(ControlRequestRejected) as missing:
        ghost.info()
    assert missing.value.status_code == 404


def test_faults_round_trip(live: LiveProvider) -> None:
    key = unique("k")
    added = live.control.add_fault(
        FaultKind.COMMIT_THEN_HANG, key=key, effect=Effect.CHARGE, attempts=[2, 1], hang_ms=1500
    )
    assert added.kind is FaultKind.COMMIT_THEN_HANG
    assert (added.key, added.effect, added.attempts, added.hang_ms, added.hits) == (
        key,
        Effect.CHARGE,
        (1, 2),
        1500,
        0,
    )
    assert live.control.faults() == [added]
    live.control.clear_faults()
    assert live.control.faults() == []


def test_one_fault_is_removed_by_id(live: LiveProvider) -> None:
    kept = live.control.add_fault(FaultKind.RATE_LIMITED, key=unique("k"))
    gone = live.control.add_fault(FaultKind.ERROR_BEFORE_COMMIT, key=unique("k"))
    live.control.remove_fault(gone.id)
    assert live.control.faults() == [kept]
    with pytest.raises(ControlRequestRejected):
        live.control.remove_fault(gone.id)
    live.control.clear_faults()


def test_health_and_reset(live: LiveProvider) -> None:
    live.control.set_ttl(12.5)
    live.control.add_fault(FaultKind.RATE_LIMITED)
    health = live.control.health()
    assert (health["status"], health["key_ttl_seconds"]) == ("ok", 12.5)
    live.control.reset()
    assert live.control.health()["key_ttl_seconds"] == 24 * 3600
    assert live.control.faults() == []


def test_wait_reached_raises_on_timeout(live: LiveProvider) -> None:
    barrier = live.control.arm_barrier(unique("k"), CrashPoint.COMMITTED)
    with pytest.raises(BarrierNotReached) as not_reached:
        barrier.wait_reached(0.1)
    assert not_reached.value.barrier_id == barrier.id


def _armed_json(barrier_id: str) -> dict[str, object]:
    return {
        "id": barrier_id,
        "point": "received",
        "key": "k",
        "reference": None,
        "hold_timeout_s": 1.0,
        "state": "armed",
        "armed_at": 0.0,
        "reached_at": None,
        "ended_at": None,
        "attempt_id": None,
        "attempt_no": None,
        "reached_key": None,
        "reached_reference": None,
        "effect_id": None,
    }


def test_upstreams_round_trip(live: LiveProvider) -> None:
    stripe = Upstream("api.stripe.com", "stripe", ReferenceSource("form", "metadata[order_id]"))
    try:
        assert live.control.set_upstreams([stripe]) == [stripe]
        assert live.control.upstreams() == [stripe]
        with pytest.raises(ControlRequestRejected) as rejected:
            live.control.set_upstreams([stripe, stripe])
        assert rejected.value.status_code == 400
    finally:
        live.control.set_upstreams([])
    assert live.control.upstreams() == []
