"""The oracle's verdicts and the workload's outcome classes, on plain data."""

from __future__ import annotations

import httpx
import pytest
import respx

from harness.errors import ConfigError
from harness.faults import get_fault, known_faults
from harness.oracle import CommitRow, Evidence, Verdict, judge
from harness.workload import History, Sender, SenderPolicy, classify


def evidence(
    commits: int = 1, ok: int = 1, info: int = 0, ledger: str | None = None, landed: bool = True
) -> Evidence:
    return Evidence(
        key="order-1",
        commits=[CommitRow(f"ch_{i}", i + 1, 1000.0 + i, "pay:order-1") for i in range(commits)],
        acknowledged=ok > 0,
        attempts_ok=ok,
        attempts_info=info,
        attempts_fail=0,
        ledger_state=ledger,
        ledger_unresolved_states=["claimed", "unknown"],
        fault_landed=landed,
        landing_proof="test",
        execution_ids=["7", "8"],
    )


@pytest.mark.parametrize(
    ("case", "verdict"),
    [
        (evidence(), Verdict.PASS),
        (evidence(commits=2), Verdict.DUPLICATE),
        (evidence(commits=0, ok=1), Verdict.LOST),
        (evidence(commits=0, ok=0, info=3), Verdict.PASS),  # never acknowledged, never done
        (evidence(ledger="unknown"), Verdict.UNRECONCILED),
        (evidence(ledger="confirmed"), Verdict.PASS),
        (evidence(commits=2, landed=False), Verdict.NO_EVIDENCE),
    ],
)
def test_verdicts(case: Evidence, verdict: Verdict) -> None:
    assert judge(case).verdict is verdict


def test_a_duplicate_names_the_key_the_commits_and_the_executions() -> None:
    text = judge(evidence(commits=2)).explanation
    assert "order-1" in text and "ch_0" in text and "ch_1" in text and "'7'" in text


def test_evidence_round_trips_through_json() -> None:
    original = evidence(commits=2)
    assert Evidence.from_json(original.to_json()) == original


@pytest.mark.parametrize(
    ("status", "outcome"),
    [
        (200, "ok"),
        (202, "ok"),
        (400, "fail"),
        (422, "fail"),
        (409, "info"),
        (429, "info"),
        (500, "info"),
        (503, "info"),
        (None, "info"),
    ],
)
def test_outcome_classes(status: int | None, outcome: str) -> None:
    assert classify(status) == outcome


@respx.mock
def test_sender_retries_until_definite_and_records_every_attempt() -> None:
    route = respx.post("http://127.0.0.1:9/webhook/pay").mock(
        side_effect=[
            httpx.ConnectError("refused"),
            httpx.Response(500),
            httpx.Response(200, json={}),
        ]
    )
    history = History()
    healed: list[int | None] = []
    sender = Sender("http://127.0.0.1:9/webhook/pay", "POST", history, SenderPolicy(backoff_s=0.0))
    last = sender.deliver({"order_id": "1"}, before_retry=lambda a: healed.append(a.status))
    assert last.outcome == "ok"
    assert [a.outcome for a in history.attempts] == ["info", "info", "ok"]
    assert healed == [None, 500]
    assert route.call_count == 3


@respx.mock
def test_sender_without_retry_stops_at_the_first_answer() -> None:
    respx.post("http://127.0.0.1:9/webhook/pay").mock(return_value=httpx.Response(500))
    history = History()
    Sender("http://127.0.0.1:9/webhook/pay", "POST", history, SenderPolicy(retry=False)).deliver({})
    assert len(history.attempts) == 1


def test_fault_catalogue_is_registered_by_name() -> None:
    for name in (
        "worker_kill",
        "worker_pause",
        "main_kill",
        "response_drop",
        "provider_slow",
        "provider_5xx",
        "redis_blip",
        "redis_outage",
        "postgres_cut",
        "concurrent_duplicates",
        "late_redelivery",
        "operator_retry",
        "no_fault",
    ):
        assert name in known_faults()
        assert get_fault(name).name == name
    with pytest.raises(ConfigError, match="unknown fault 'nope'; known:"):
        get_fault("nope")
