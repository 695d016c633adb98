"""error_workflow_after_stall / _after_recovery / _after_postgres_cut: judgement on evidence
(no stack)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.findings.base import UNDETERMINED, checked, get_probe
from harness.findings.probes.error_workflow_faults import GIVE_UP_WAIT
from harness.findings.probes.false_stall import STALL_WAIT
from tests.unit import probe_evidence as pe

STALL = get_probe("error_workflow_after_stall")
RECOVERY = get_probe("error_workflow_after_recovery")
CUT = get_probe("error_workflow_after_postgres_cut")


def _evidence(
    runs: int,
    observed: dict[str, Any],
    *,
    statuses: tuple[str, ...] = ("running", "error"),
    reached: tuple[str, ...] = (),
) -> dict[str, Any]:
    return {
        "execution": "4",
        "status_paths": pe.paths(e4=list(statuses)),
        "provider_attempts": [{"id": 0}],
        "provider_commits": pe.commits(1),
        "error_workflow_rows": [{"id": str(10 + i), "status": "success"} for i in range(runs)],
        "error_workflow_commits": pe.commits(runs),
        "timeline": pe.reached(*reached),
        "observed": observed,
    }


def _stall(runs: int, **over: Any) -> dict[str, Any]:
    observed = {"case": "stall", "pause_proof": "worker0 state T", "status_at_stall": "error"}
    return _evidence(runs, observed | over, reached=(STALL_WAIT,))


def _recovery(runs: int, **over: Any) -> dict[str, Any]:
    observed = {
        "case": "recovery",
        "kill_proof": "worker0 exited by SIGKILL",
        "main_kill_proof": "main exited by SIGKILL",
        "status_before_restart": "running",
    }
    return _evidence(runs, observed | over, statuses=("running", "crashed"))


def _cut(runs: int, statuses: tuple[str, ...], *, gave_up: bool = True) -> dict[str, Any]:
    observed = {"case": "postgres_cut", "link": "worker0_postgres", "link_disabled": True}
    return _evidence(runs, observed, statuses=statuses, reached=(GIVE_UP_WAIT,) if gave_up else ())


def test_a_stall_counts_the_error_workflow_runs() -> None:
    answer = checked(STALL, STALL.judge(_stall(2, status_at_stall="crashed")))
    assert answer.answer == "Error Workflow ran two time(s); execution ends error"
    assert answer.facts["status_at_stall"] == "crashed"


@pytest.mark.parametrize(
    ("evidence", "why"),
    [
        (_stall(1, pause_proof=None), "not seen stopped"),
        ({**_stall(1), "timeline": []}, "did not declare the stall"),
    ],
)
def test_a_stall_not_struck_is_undetermined(evidence: dict[str, Any], why: str) -> None:
    answer = STALL.judge(evidence)
    assert answer.answer == UNDETERMINED and why in answer.why


def test_a_recovered_execution_counts_runs_across_the_restarts() -> None:
    answer = checked(RECOVERY, RECOVERY.judge(_recovery(0)))
    assert answer.answer == "Error Workflow ran none time(s); execution ends crashed"
    assert answer.facts["main_kill_proof"] == "main exited by SIGKILL"


@pytest.mark.parametrize(
    ("over", "why"),
    [
        ({"kill_proof": None}, "worker running it did not end by SIGKILL"),
        ({"main_kill_proof": None}, "main did not end by SIGKILL"),
        ({"status_before_restart": "error"}, "nothing to recover"),
    ],
)
def test_a_recovery_not_struck_is_undetermined(over: dict[str, Any], why: str) -> None:
    answer = RECOVERY.judge(_recovery(1, **over))
    assert answer.answer == UNDETERMINED and why in answer.why


@pytest.mark.parametrize(
    ("statuses", "expected"),
    [
        (("running", "success"), "Error Workflow ran none time(s); execution ends success"),
        (("running",), "Error Workflow ran none time(s); execution ends running"),
    ],
)
def test_a_postgres_cut_may_leave_the_row_unfinished(
    statuses: tuple[str, ...], expected: str
) -> None:
    assert checked(CUT, CUT.judge(_cut(0, statuses))).answer == expected


def test_a_cut_shorter_than_n8n_tolerates_is_undetermined() -> None:
    answer = CUT.judge(_cut(1, ("running", "error"), gave_up=False))
    assert answer.answer == UNDETERMINED and "shorter than n8n tolerates" in answer.why


def test_the_other_cases_still_need_a_finished_row() -> None:
    answer = STALL.judge({**_stall(1), "status_paths": pe.paths(e4=["running"])})
    assert answer.answer == UNDETERMINED and "never finished" in answer.why


def test_a_failed_call_of_the_error_workflow_is_said() -> None:
    line = 'error   Calling Error Workflow for "wf1": "connect ECONNREFUSED 127.0.0.1:41975"'
    evidence = {**_cut(0, ("running",)), "log_lines": {"worker0": [line, "other"]}}
    answer = checked(CUT, CUT.judge(evidence))
    assert answer.facts["error_workflow_calls_failed"] == 1
    assert "1 failed call(s) of the Error Workflow" in answer.why


@pytest.mark.parametrize(
    ("probe", "expected"),
    [
        ("error_workflow_after_stall", "Error Workflow ran one time(s); execution ends success"),
        (
            "error_workflow_after_recovery",
            "Error Workflow ran one time(s); execution ends crashed",
        ),
        (
            "error_workflow_after_postgres_cut",
            "Error Workflow ran none time(s); execution ends running",
        ),
    ],
)
@pytest.mark.parametrize("version", ["2.33.7", "2.40.7"])
def test_the_recorded_evidence_gives_the_recorded_answer(
    probe: str, expected: str, version: str
) -> None:
    answer, result = pe.rejudged(probe, version)
    assert answer.answer == result["answer"] == expected
    assert answer.why == result["why"]
