"""false_stall's judgement on recorded evidence (no stack)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.findings.base import UNDETERMINED, checked, get_probe
from harness.findings.probes.false_stall import STALL_WAIT
from tests.unit import probe_evidence as pe

PROBE = get_probe("false_stall")


def _evidence(
    statuses: list[str],
    commits: int = 1,
    *,
    declared: bool = True,
    pause_proof: str | None = "worker0 in state T",
    status: int | None = 500,
) -> dict[str, Any]:
    return {
        "execution": "7",
        "status_paths": pe.paths(e7=statuses),
        "provider_commits": pe.commits(commits),
        "provider_attempts": [],
        "sender": pe.sender(status),
        "timeline": pe.reached(STALL_WAIT) if declared else [pe.gave_up(STALL_WAIT)],
        "observed": {
            "status_at_stall": "running",
            "seconds_paused": 14.4,
            "pause_proof": pause_proof,
            "paused_worker": "worker0",
        },
    }


@pytest.mark.parametrize("version", ["2.33.7", "2.40.7"])
def test_the_recorded_evidence_gives_the_recorded_answer(version: str) -> None:
    answer, result = pe.rejudged("false_stall", version)
    assert (
        answer.answer == result["answer"] == "ran once; row ends success, flipped; sender got 500"
    )
    assert answer.why == result["why"]


@pytest.mark.parametrize(
    ("statuses", "commits", "status", "expected"),
    [
        (["running", "success"], 1, 200, "ran once; row ends success, no flip; sender got 200"),
        (
            ["running", "error", "success"],
            2,
            500,
            "ran twice; row ends success, flipped; sender got 500",
        ),
        (
            ["running", "error"],
            3,
            None,
            "ran three times or more; row ends error, no flip; sender got no answer",
        ),
        (
            ["running", "crashed", "running", "crashed"],
            1,
            404,
            "ran once; row ends crashed, no flip; sender got another status",
        ),
    ],
)
def test_runs_flip_and_sender_come_from_commits_path_and_status(
    statuses: list[str], commits: int, status: int | None, expected: str
) -> None:
    answer = checked(PROBE, PROBE.judge(_evidence(statuses, commits, status=status)))
    assert answer.answer == expected


@pytest.mark.parametrize(
    ("evidence", "why"),
    [
        (_evidence(["running", "success"], pause_proof=None), "worker0 was not seen stopped"),
        (_evidence(["running"], declared=False), "did not declare the stall"),
        (_evidence(["running", "success"], commits=0), "no commit"),
    ],
)
def test_a_missed_window_is_undetermined(evidence: dict[str, Any], why: str) -> None:
    answer = PROBE.judge(evidence)
    assert answer.answer == UNDETERMINED
    assert why in answer.why
