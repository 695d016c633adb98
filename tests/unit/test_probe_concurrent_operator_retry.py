"""concurrent_operator_retry's judgement (both origins) on recorded evidence (no stack)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.findings.base import UNDETERMINED, checked, get_probe
from tests.unit import probe_evidence as pe

PROBE = get_probe("concurrent_operator_retry")


def _call(sent: float, answered: float, execution: str | None) -> dict[str, Any]:
    accepted = execution is not None
    return {"sent_at": sent, "answered_at": answered, "accepted": accepted, "execution": execution}


def _evidence(calls: list[dict[str, Any]], retries: int, commits: int) -> dict[str, Any]:
    rows = [{"id": "1", "status": "crashed", "retry_of": None}] + [
        {"id": str(2 + i), "status": "success", "retry_of": "1"} for i in range(retries)
    ]
    return {
        "origin_execution": "1",
        "execution_rows": rows,
        "status_paths": pe.paths(e1=["running", "crashed"]),
        "provider_commits": pe.commits(commits),
        "retry_calls": calls,
        "observed": {"origin": "worker_kill", "commits_before_retries": 1},
    }


@pytest.mark.parametrize(
    ("probe", "version"),
    [
        ("concurrent_operator_retry", "2.33.7"),
        ("concurrent_operator_retry", "2.40.7"),
        ("concurrent_operator_retry_node_error", "2.40.7"),
    ],
)
def test_the_recorded_evidence_gives_the_recorded_answer(probe: str, version: str) -> None:
    evidence, result = pe.recorded(probe, version)
    evidence.setdefault("origin_execution", result["facts"]["origin_execution"])
    judged = get_probe(probe)
    answer = checked(judged, judged.judge(evidence))
    assert answer.answer == result["answer"]
    assert answer.answer == "two new execution(s); two charge(s) by the retries"
    assert answer.why == result["why"]


def test_one_retry_refused_gives_one_execution_and_counts_only_the_retries_charges() -> None:
    calls = [_call(1.0, 2.0, "2"), _call(1.0, 1.5, None)]
    answer = checked(PROBE, PROBE.judge(_evidence(calls, retries=1, commits=2)))
    assert answer.answer == "one new execution(s); one charge(s) by the retries"
    assert answer.facts["retry_calls_accepted"] == 1


def test_retries_that_charged_nothing_say_none() -> None:
    calls = [_call(1.0, 2.0, "2"), _call(1.1, 2.1, "3")]
    answer = checked(PROBE, PROBE.judge(_evidence(calls, retries=2, commits=1)))
    assert answer.answer == "two new execution(s); none charge(s) by the retries"


def test_calls_that_did_not_overlap_are_undetermined() -> None:
    calls = [_call(1.0, 2.0, "2"), _call(2.5, 3.0, "3")]
    answer = PROBE.judge(_evidence(calls, retries=2, commits=3))
    assert answer.answer == UNDETERMINED
    assert "did not overlap" in answer.why
