"""webhook_redis_cut's judgement on evidence (no stack)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.findings.base import UNDETERMINED, checked, get_probe
from harness.findings.probes.webhook_redis_cut import EXIT_WAIT, JOB_WAIT
from tests.unit import probe_evidence as pe

PROBE = get_probe("webhook_redis_cut")
JOB = {"job": "4", "execution": "3", "states": ["completed"], "added_at_ms": "1"}


def _evidence(
    statuses: list[str],
    commits: int,
    status: int | None = None,
    *,
    jobs_at_cut: list[dict[str, Any]] | None = None,
    jobs_at_cut_end: list[dict[str, Any]] | None = None,
    jobs_after: list[dict[str, Any]] | None = None,
    exited: bool = False,
) -> dict[str, Any]:
    timeline = [pe.gave_up(EXIT_WAIT)] if not exited else pe.reached(EXIT_WAIT)
    if jobs_at_cut_end:
        timeline += pe.reached(JOB_WAIT)
    return {
        "execution": "3",
        "status_paths": pe.paths(e3=statuses),
        "execution_rows": [{"id": "3", "status": statuses[-1] if statuses else "new"}],
        "bull_jobs": jobs_after or [],
        "provider_commits": pe.commits(commits),
        "sender": pe.sender(status),
        "timeline": timeline,
        "observed": {
            "jobs_at_cut": jobs_at_cut or [],
            "jobs_at_cut_end": jobs_at_cut_end or [],
            "status_at_cut_end": statuses[0] if statuses else None,
            "sender_at_cut_end": None,
            "webhook_exit_code": 1 if exited else None,
            "worker_starts": 1 if commits else 0,
            "worker_finishes": 1 if commits else 0,
        },
    }


@pytest.mark.parametrize(
    ("statuses", "commits", "status", "jobs_after", "exited", "expected"),
    [
        (
            ["new", "running", "success"],
            1,
            200,
            [JOB],
            False,
            "job enqueued after the restore; row ends success; charge ran once; sender got 200; "
            "webhook processor stayed up",
        ),
        (
            ["new"],
            0,
            None,
            [],
            True,
            "job never enqueued; row ends new; charge never ran; sender got no answer; "
            "webhook processor exited",
        ),
        (
            ["new", "error"],
            0,
            500,
            [],
            False,
            "job never enqueued; row ends error; charge never ran; sender got 500; "
            "webhook processor stayed up",
        ),
    ],
)
def test_it_answers_where_the_job_went_and_what_came_of_it(
    statuses: list[str],
    commits: int,
    status: int | None,
    jobs_after: list[dict[str, Any]],
    exited: bool,
    expected: str,
) -> None:
    evidence = _evidence(statuses, commits, status, jobs_after=jobs_after, exited=exited)
    answer = checked(PROBE, PROBE.judge(evidence))
    assert answer.answer == expected
    recovered = statuses[-1] == "success" and commits == 1
    assert ("not recovered" in answer.why) is not recovered


def test_a_job_seen_in_redis_during_the_cut_says_so() -> None:
    evidence = _evidence(["new", "running", "success"], 1, 200, jobs_at_cut_end=[JOB])
    answer = checked(PROBE, PROBE.judge(evidence))
    assert answer.answer.startswith("job enqueued during the cut; ")


def test_a_job_in_redis_at_the_cut_is_not_the_window() -> None:
    answer = PROBE.judge(_evidence(["new"], 0, jobs_at_cut=[JOB]))
    assert answer.answer == UNDETERMINED
    assert "was in Redis when the link was cut" in answer.why


def test_evidence_without_the_cut_is_undetermined() -> None:
    evidence = _evidence(["new"], 0)
    del evidence["observed"]["jobs_at_cut"]
    assert PROBE.judge(evidence).answer == UNDETERMINED


def test_a_worker_start_without_a_kept_job_still_counts_as_enqueued() -> None:
    answer = checked(PROBE, PROBE.judge(_evidence(["new", "running", "success"], 1, 200)))
    assert answer.answer.startswith("job enqueued after the restore; ")


def test_the_recorded_evidence_gives_the_recorded_answer() -> None:
    answer, result = pe.rejudged("webhook_redis_cut", "2.40.7")
    assert answer.answer == result["answer"]
    assert answer.answer == (
        "job never enqueued; row ends new; charge never ran; sender got no answer; "
        "webhook processor exited"
    )
    assert answer.why == result["why"]
    assert answer.facts["webhook_exit_code"] == 1
