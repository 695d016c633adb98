"""The provider as a process: READY line, 127.0.0.1 only, restarts that keep the ledger."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from fake_providers.payment import (
    CrashPoint,
    Outcome,
    ProviderControl,
    ProviderProcess,
    ProviderStartError,
    ProviderUnreachable,
    launch,
)

from .conftest import READY_TIMEOUT_S, charge_body, unique

pytestmark = pytest.mark.timeout(90)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "ledger.db"


@pytest.fixture
def first_run(db: Path) -> Iterator[ProviderProcess]:
    process = launch(db, ready_timeout=READY_TIMEOUT_S)
    try:
        yield process
    finally:
        process.stop()


def _charge(process: ProviderProcess, key: str, reference: str) -> httpx.Response:
    return httpx.post(
        f"{process.base_url}/v1/charges",
        json=charge_body(reference),
        headers={"Idempotency-Key": key},
        timeout=10,
    )


def test_ready_line_names_real_ports_on_loopback_only(first_run: ProviderProcess) -> None:
    assert first_run.port != 0 and first_run.control_port != 0
    assert first_run.port != first_run.control_port
    for port in (first_run.port, first_run.control_port):
        assert httpx.get(f"http://127.0.0.1:{port}/health").json()["status"] == "ok"
    # The public port does not serve the control API.
    assert httpx.get(f"{first_run.base_url}/_control/health").status_code == 404
    listening = Path(f"/proc/{first_run.process.pid}/net/tcp").read_text()
    loopback_hex = "0100007F"
    for port in (first_run.port, first_run.control_port):
        assert f"{loopback_hex}:{port:04X}" in listening


def test_ledger_and_stored_responses_survive_a_kill(db: Path, first_run: ProviderProcess) -> None:
    key, reference = unique("k"), unique("order")
    original = _charge(first_run, key, reference)
    first_run.kill()  # SIGKILL: no graceful shutdown, no chance to flush anything extra

    with (
        launch(db, ready_timeout=READY_TIMEOUT_S) as second_run,
        ProviderControl(second_run.control_url) as control,
    ):
        [commit] = control.commits(reference=reference)
        assert commit.effect_id == original.json()["id"]
        replay = _charge(second_run, key, reference)
        assert replay.content == original.content
        assert replay.headers["Idempotent-Replayed"] == "true"
        by_id = httpx.get(f"{second_run.base_url}/v1/charges/{commit.effect_id}")
        assert by_id.json()["reference"] == reference
        assert len(control.commits(reference=reference)) == 1


def _kill_while_held(run: ProviderProcess, key: str, reference: str, point: CrashPoint) -> None:
    """SIGKILL the provider while a charge is held at ``point``; the caller sees it die."""
    with ProviderControl(run.control_url) as control, ThreadPoolExecutor(1) as pool:
        barrier = control.arm_barrier(key, point, hold_timeout=30)
        request = pool.submit(_charge, run, key, reference)
        barrier.wait_reached(10)
        run.kill()
        with pytest.raises(httpx.TransportError):
            request.result(10)


def test_crash_after_commit_before_response(db: Path, first_run: ProviderProcess) -> None:
    key, reference = unique("k"), unique("order")
    _kill_while_held(first_run, key, reference, CrashPoint.COMMITTED)

    with (
        launch(db, ready_timeout=READY_TIMEOUT_S) as second_run,
        ProviderControl(second_run.control_url) as control,
    ):
        assert len(control.commits(reference=reference)) == 1
        retry = _charge(second_run, key, reference)
        assert retry.headers["Idempotent-Replayed"] == "true"
        assert len(control.commits(reference=reference)) == 1


def test_crash_before_commit_frees_the_key(db: Path, first_run: ProviderProcess) -> None:
    key, reference = unique("k"), unique("order")
    _kill_while_held(first_run, key, reference, CrashPoint.RECEIVED)

    with (
        launch(db, ready_timeout=READY_TIMEOUT_S) as second_run,
        ProviderControl(second_run.control_url) as control,
    ):
        [interrupted] = control.attempts(key=key)
        assert interrupted.outcome is Outcome.INTERRUPTED
        retry = _charge(second_run, key, reference)
        assert retry.status_code == 200
        assert "Idempotent-Replayed" not in retry.headers
        assert [c.attempt_no for c in control.commits(reference=reference)] == [2]


def test_sigterm_releases_held_requests_and_exits_cleanly(first_run: ProviderProcess) -> None:
    key, reference = unique("k"), unique("order")
    with ProviderControl(first_run.control_url) as control, ThreadPoolExecutor(1) as pool:
        barrier = control.arm_barrier(key, CrashPoint.COMMITTED, hold_timeout=60)
        request = pool.submit(_charge, first_run, key, reference)
        barrier.wait_reached(10)
        assert first_run.stop(timeout=10) == 0
        assert request.result(10).status_code == 200
        with pytest.raises(ProviderUnreachable):
            control.health()


def test_stops_when_the_launcher_goes_away(first_run: ProviderProcess) -> None:
    # The launcher's end of the stdin pipe closes when it dies, even by SIGKILL; closing it
    # here is the same event.
    assert first_run.process.stdin is not None
    first_run.process.stdin.close()
    assert first_run.process.wait(timeout=10) == 0


def test_key_ttl_flag_sets_the_lifetime(db: Path) -> None:
    with (
        launch(db, key_ttl_seconds=0, ready_timeout=READY_TIMEOUT_S) as process,
        ProviderControl(process.control_url) as control,
    ):
        assert control.health()["key_ttl_seconds"] == 0
        key, reference = unique("k"), unique("order")
        _charge(process, key, reference)
        _charge(process, key, reference)
        assert len(control.commits(reference=reference)) == 2


def test_lenient_flag(db: Path) -> None:
    with launch(db, lenient=True, ready_timeout=READY_TIMEOUT_S) as process:
        response = httpx.post(f"{process.base_url}/v1/charges", json=charge_body("r"))
        assert response.status_code == 200


def test_port_in_use_fails_fast_with_the_log(db: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ProviderStartError, match="Address already in use"):
            launch(db, port=port, ready_timeout=READY_TIMEOUT_S)


def test_help_runs() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "fake_providers.payment", "--help"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert "--control-port" in result.stdout
