"""Settle: quiet means no live execution, a quiet provider and a stable ledger; a row left
running without a Bull job is an orphan after a grace period, not work in progress."""

from __future__ import annotations

import time
from typing import Any

import pytest

from harness.engine import settle
from harness.engine.settle import Activity, Settler


def activity(rows: list[dict[str, Any]], queued: set[str] | None = None, **more: Any) -> Activity:
    values: dict[str, Any] = {
        "executions": rows,
        "queued": queued or set(),
        "provider_busy": False,
        "provider_last": 0.0,
        "ledger_state": "confirmed",
    }
    values.update(more)
    return Activity(**values)


RUNNING = [{"id": "1", "status": "running"}]
DONE = [{"id": "1", "status": "success"}]


@pytest.fixture(autouse=True)
def fast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(settle, "QUIET_S", 0.05)
    monkeypatch.setattr(settle, "POLL_S", 0.01)
    monkeypatch.setattr(settle, "ORPHAN_GRACE_S", 0.1)


def test_finished_work_settles() -> None:
    result = Settler(lambda: activity(DONE), expect_executions=True).wait(2.0)
    assert result.settled and not result.live


def test_a_queued_running_execution_keeps_the_case_open_until_the_deadline() -> None:
    result = Settler(lambda: activity(RUNNING, {"1"}), expect_executions=True).wait(0.3)
    assert not result.settled and result.live == ["1"]


def test_a_running_row_without_a_job_becomes_an_orphan() -> None:
    result = Settler(lambda: activity(RUNNING), expect_executions=True).wait(2.0)
    assert result.settled and result.orphaned == ["1"]


def test_a_busy_provider_or_a_changing_ledger_is_not_quiet() -> None:
    busy = Settler(lambda: activity(DONE, provider_busy=True), expect_executions=True)
    assert not busy.wait(0.3).settled
    recent = Settler(lambda: activity(DONE, provider_last=time.time()), expect_executions=True)
    assert not recent.wait(0.3).settled
    states = iter(range(1000))
    changing = Settler(lambda: activity(DONE, ledger_state=str(next(states))), True)
    assert not changing.wait(0.3).settled


def test_the_quiet_period_runs_from_the_providers_last_activity_when_later() -> None:
    last = time.time() + 0.2  # stamped after the looks began: the period starts there
    settled = Settler(lambda: activity(DONE, provider_last=last), True).wait(2.0)
    assert settled.settled and time.time() >= last + settle.QUIET_S, settled


def test_an_answer_without_any_execution_yet_is_not_quiet() -> None:
    assert not Settler(lambda: activity([]), expect_executions=True).wait(0.3).settled
    assert Settler(lambda: activity([]), expect_executions=False).wait(1.0).settled


class FakeRedis:
    def __init__(self, lists: dict[str, list[str]], hashes: dict[str, str]) -> None:
        self.lists, self.hashes = lists, hashes

    def lrange(self, key: str, start: int, end: int) -> list[bytes]:
        return [v.encode() for v in self.lists.get(key, [])]

    def zrange(self, key: str, start: int, end: int) -> list[bytes]:
        return self.lrange(key, start, end)

    def hget(self, key: str, field: str) -> bytes | None:
        value = self.hashes.get(key)
        return None if value is None else value.encode()


def test_bull_jobs_are_read_as_execution_ids() -> None:
    fake = FakeRedis(
        {"bull-r:jobs:active": ["7"], "bull-r:jobs:wait": ["8", "9"]},
        {"bull-r:jobs:7": '{"executionId": "41"}', "bull-r:jobs:8": '{"executionId": 42}'},
    )
    assert settle.bull_execution_ids(fake, "bull-r") == {"41", "42"}  # type: ignore[arg-type]
