"""wait_parked_across_kill: judgement on evidence (no stack)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.findings.base import UNDETERMINED, checked, get_probe
from tests.unit import probe_evidence as pe

PROBE = get_probe("wait_parked_across_kill")
STARTED = 1_000.0
TIMES = (1.0, 1.5, 2.0, 72.5, 73.0)  # when the row was seen in each status


def _evidence(
    *,
    statuses: tuple[str, ...] = ("new", "running", "waiting", "running", "success"),
    commits: int = 1,
    killed_at: float = 5.0,
) -> dict[str, Any]:
    steps = [{"t": t, "status": s} for t, s in zip(TIMES, statuses, strict=False)]
    return {
        "execution": "4",
        "started_at": STARTED,
        "status_paths": {"4": steps},
        "execution_rows": [{"id": "4", "status": statuses[-1]}],
        "provider_commits": pe.commits(commits),
        "observed": {
            "wait_till": STARTED + 72.0,
            "killed_at": killed_at,
            "worker_kill_proof": "worker1 exited by SIGKILL",
            "main_kill_proof": "main exited by SIGKILL",
            "victim": "worker1",
            "worker_starts": 2,
        },
    }


def test_a_parked_execution_resumed_after_the_kills_answers_status_and_charges() -> None:
    answer = checked(PROBE, PROBE.judge(_evidence()))
    assert answer.answer == "row ends success; charge ran once"
    assert answer.facts["seconds_parked_to_wait_till"] == 70.0
    assert answer.facts["seconds_wait_till_to_resume"] == 0.5
    twice = checked(PROBE, PROBE.judge(_evidence(commits=2)))
    assert twice.answer == "row ends success; charge ran twice or more"


def test_a_parked_execution_never_resumed_is_an_answer_too() -> None:
    answer = checked(
        PROBE, PROBE.judge(_evidence(statuses=("new", "running", "waiting"), commits=0))
    )
    assert answer.answer == "row ends waiting; charge ran never"
    assert "never left waiting" in answer.why


def test_kills_after_wait_till_or_without_proof_are_undetermined() -> None:
    late = PROBE.judge(_evidence(killed_at=80.0))
    assert late.answer == UNDETERMINED and "after waitTill" in late.why
    unproven = _evidence()
    unproven["observed"]["main_kill_proof"] = None
    assert PROBE.judge(unproven).answer == UNDETERMINED
    never = _evidence(statuses=("new", "running", "success"))
    assert "never seen parked" in PROBE.judge(never).why


@pytest.mark.parametrize("version", ["2.33.7", "2.40.7"])
def test_the_recorded_evidence_gives_the_recorded_answer(version: str) -> None:
    answer, result = pe.rejudged("wait_parked_across_kill", version)
    assert answer.answer == result["answer"] == "row ends success; charge ran once"
    assert answer.why == result["why"]
    assert 65 < answer.facts["seconds_parked_to_wait_till"] <= 70
