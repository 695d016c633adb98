"""main_kill_before_enqueue / main_kill_after_enqueue: judgement on evidence (no stack)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.findings.base import UNDETERMINED, checked, get_probe
from tests.unit import probe_evidence as pe

BEFORE = get_probe("main_kill_before_enqueue")
AFTER = get_probe("main_kill_after_enqueue")


def _evidence(
    statuses: list[str],
    commits: int,
    status: int | None = None,
    *,
    jobs_at_kill: list[dict[str, Any]] | None = None,
    kill_proof: str | None = "main exited by SIGKILL",
) -> dict[str, Any]:
    return {
        "execution": "5",
        "status_paths": pe.paths(e5=statuses),
        "execution_rows": [{"id": "5", "status": statuses[-1] if statuses else "new"}],
        "provider_commits": pe.commits(commits),
        "sender": pe.sender(status),
        "observed": {"kill_proof": kill_proof, "jobs_at_kill": jobs_at_kill, "worker_starts": 0},
    }


@pytest.mark.parametrize(
    ("statuses", "commits", "status", "expected"),
    [
        (["new"], 0, None, "row ends new; charge never ran; sender got no answer"),
        (["new", "crashed"], 0, None, "row ends crashed; charge never ran; sender got no answer"),
        (
            ["new", "running", "success"],
            1,
            None,
            "row ends success; charge ran once; sender got no answer",
        ),
        ([], 0, None, "row ends unknown; charge never ran; sender got no answer"),
    ],
)
def test_before_enqueue_answers_from_the_row_the_commits_and_the_sender(
    statuses: list[str], commits: int, status: int | None, expected: str
) -> None:
    answer = checked(BEFORE, BEFORE.judge(_evidence(statuses, commits, status)))
    assert answer.answer == expected


def test_a_job_already_in_redis_at_the_kill_is_not_the_window() -> None:
    evidence = _evidence(["new"], 0, jobs_at_kill=[{"job": "1", "execution": "5"}])
    answer = BEFORE.judge(evidence)
    assert answer.answer == UNDETERMINED and "was in Redis" in answer.why


def test_after_enqueue_a_rerun_shows_as_two_charges() -> None:
    answer = checked(AFTER, AFTER.judge(_evidence(["running", "success"], 2, 500)))
    assert answer.answer == "row ends success; charge ran twice or more; sender got 500"


def test_a_main_that_did_not_die_by_sigkill_is_undetermined() -> None:
    answer = AFTER.judge(_evidence(["running", "success"], 1, kill_proof=None))
    assert answer.answer == UNDETERMINED and "SIGKILL" in answer.why


def test_a_job_the_killed_main_added_that_reached_redis_late_voids_the_strike() -> None:
    evidence = _evidence(["new", "running", "success"], 1)
    evidence["observed"]["killed_at_ms"] = 2_000.0
    evidence["bull_jobs"] = [{"job": "9", "execution": "5", "added_at_ms": "1500"}]
    answer = BEFORE.judge(evidence)
    assert answer.answer == UNDETERMINED and "still reached Redis" in answer.why
    evidence["bull_jobs"] = [{"job": "9", "execution": "5", "added_at_ms": "2500"}]
    answer = checked(BEFORE, BEFORE.judge(evidence))
    assert answer.answer == "row ends success; charge ran once; sender got no answer"


@pytest.mark.parametrize(
    ("probe", "expected"),
    [
        ("main_kill_before_enqueue", "row ends crashed; charge never ran; sender got no answer"),
        ("main_kill_after_enqueue", "row ends success; charge ran once; sender got no answer"),
    ],
)
def test_the_recorded_evidence_gives_the_recorded_answer(probe: str, expected: str) -> None:
    answer, result = pe.rejudged(probe, "2.40.7")
    assert answer.answer == result["answer"] == expected
    assert answer.why == result["why"]
