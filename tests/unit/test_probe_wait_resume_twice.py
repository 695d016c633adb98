"""wait_resume_concurrent / wait_resume_sequential: judgement on evidence (no stack)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.findings.base import UNDETERMINED, checked, get_probe
from harness.findings.probes.wait_resume_twice import PAIRS
from tests.unit import probe_evidence as pe

CONCURRENT = get_probe("wait_resume_concurrent")
SEQUENTIAL = get_probe("wait_resume_sequential")


def _call(sent: float, answered: float, status: int | None, **extra: Any) -> dict[str, Any]:
    return {"sent_at": sent, "answered_at": answered, "status": status, **extra}


def _evidence(
    calls: list[dict[str, Any]],
    commits: int,
    *,
    sequential: bool = False,
    statuses: tuple[str, ...] = ("new", "running", "waiting", "running", "success"),
) -> dict[str, Any]:
    return {
        "execution": "3",
        "status_paths": pe.paths(e3=list(statuses)),
        "execution_rows": [{"id": "3", "status": statuses[-1]}],
        "provider_commits": pe.commits(commits),
        "resume_calls": calls,
        "observed": {"sequential": sequential},
    }


def test_the_pair_vocabulary_is_unordered() -> None:
    assert "200 and 409" in PAIRS and "409 and 200" not in PAIRS
    assert "one charge(s); the resume calls got 200 and 409" in CONCURRENT.answers


@pytest.mark.parametrize(
    ("statuses", "commits", "expected"),
    [
        ((409, 200), 1, "one charge(s); the resume calls got 200 and 409"),
        ((200, 200), 2, "two charge(s); the resume calls got 200 and 200"),
        ((500, 200), 1, "one charge(s); the resume calls got 200 and 500"),
        ((None, 502), 0, "none charge(s); the resume calls got another status and no answer"),
    ],
)
def test_concurrent_calls_answer_charges_and_statuses(
    statuses: tuple[int | None, int | None], commits: int, expected: str
) -> None:
    calls = [_call(1.0, 1.2, statuses[0]), _call(1.0, 1.3, statuses[1])]
    answer = checked(CONCURRENT, CONCURRENT.judge(_evidence(calls, commits)))
    assert answer.answer == expected
    assert answer.facts["resume_statuses"] == list(statuses)


def test_concurrent_calls_that_did_not_overlap_are_undetermined() -> None:
    calls = [_call(1.0, 1.2, 200), _call(1.5, 1.6, 409)]
    answer = CONCURRENT.judge(_evidence(calls, 1))
    assert answer.answer == UNDETERMINED and "did not overlap" in answer.why


def test_an_execution_never_seen_waiting_is_undetermined() -> None:
    calls = [_call(1.0, 1.2, 200), _call(1.0, 1.3, 200)]
    evidence = _evidence(calls, 1, statuses=("running", "success"))
    answer = CONCURRENT.judge(evidence)
    assert answer.answer == UNDETERMINED and "never seen waiting" in answer.why


def test_a_sequential_repeat_counts_only_after_the_first_run_finished() -> None:
    calls = [_call(1.0, 1.1, 200), _call(3.0, 3.1, 409, after_finish=True)]
    answer = checked(SEQUENTIAL, SEQUENTIAL.judge(_evidence(calls, 1, sequential=True)))
    assert answer.answer == "one charge(s); the resume calls got 200 and 409"
    assert "in sequence" in answer.why
    calls[1]["after_finish"] = False
    early = SEQUENTIAL.judge(_evidence(calls, 1, sequential=True))
    assert early.answer == UNDETERMINED and "had not finished" in early.why


def test_a_call_never_sent_is_undetermined() -> None:
    answer = CONCURRENT.judge(_evidence([_call(1.0, 1.2, 200), {"status": None}], 1))
    assert answer.answer == UNDETERMINED and "not both sent" in answer.why


@pytest.mark.parametrize(
    ("probe", "expected"),
    [
        ("wait_resume_concurrent", "one charge(s); the resume calls got 200 and 500"),
        ("wait_resume_sequential", "one charge(s); the resume calls got 200 and 409"),
    ],
)
def test_the_recorded_evidence_gives_the_recorded_answer(probe: str, expected: str) -> None:
    answer, result = pe.rejudged(probe, "2.40.7")
    assert answer.answer == result["answer"] == expected
    assert answer.why == result["why"]
