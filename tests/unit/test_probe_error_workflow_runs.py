"""error_workflow_after_retries / _after_worker_kill: judgement on evidence (no stack)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.findings.base import UNDETERMINED, checked, get_probe
from harness.findings.probes.error_workflow_runs import TRIES
from tests.unit import probe_evidence as pe

RETRIES = get_probe("error_workflow_after_retries")
KILL = get_probe("error_workflow_after_worker_kill")


def _evidence(
    case: str,
    runs: int,
    records: int,
    *,
    statuses: tuple[str, ...] = ("running", "error"),
    attempts: int = TRIES,
    kill_proof: str | None = "worker0 exited by SIGKILL",
) -> dict[str, Any]:
    return {
        "execution": "4",
        "status_paths": pe.paths(e4=list(statuses)),
        "provider_attempts": [{"id": i} for i in range(attempts)],
        "provider_commits": [],
        "error_workflow_rows": [{"id": str(10 + i), "status": "success"} for i in range(runs)],
        "error_workflow_commits": pe.commits(records),
        "observed": {"case": case, "kill_proof": kill_proof, "sender": "got 500"},
    }


def test_the_workflow_shown_names_its_error_workflow() -> None:
    shown = RETRIES.workflow()
    assert shown["settings"]["errorWorkflow"] == "<the Error Workflow below>"
    assert shown["errorWorkflowShown"]["nodes"][0]["type"] == "n8n-nodes-base.errorTrigger"
    charge = next(n for n in shown["nodes"] if n["name"] == "Charge")
    assert charge["retryOnFail"] is True and charge["maxTries"] == TRIES
    assert "retryOnFail" not in next(n for n in KILL.workflow()["nodes"] if n["name"] == "Charge")


@pytest.mark.parametrize(
    ("runs", "records", "expected"),
    [
        (1, 1, "Error Workflow ran one time(s); execution ends error"),
        (0, 0, "Error Workflow ran none time(s); execution ends error"),
        (2, 2, "Error Workflow ran two time(s); execution ends error"),
        (1, 0, "Error Workflow ran one time(s); execution ends error"),  # Record failed
        (0, 1, "Error Workflow ran one time(s); execution ends error"),  # row not saved
    ],
)
def test_runs_are_counted_from_rows_and_records(runs: int, records: int, expected: str) -> None:
    answer = checked(RETRIES, RETRIES.judge(_evidence("retries_exhausted", runs, records)))
    assert answer.answer == expected


def test_retries_that_did_not_run_out_are_undetermined() -> None:
    answer = RETRIES.judge(_evidence("retries_exhausted", 1, 1, attempts=1))
    assert answer.answer == UNDETERMINED and "did not run out" in answer.why


def test_an_execution_that_never_finished_is_undetermined() -> None:
    answer = KILL.judge(_evidence("worker_kill", 0, 0, statuses=("running",)))
    assert answer.answer == UNDETERMINED and "never finished" in answer.why


def test_a_crashed_execution_and_its_error_workflow_runs() -> None:
    evidence = _evidence("worker_kill", 2, 2, statuses=("running", "error", "crashed"), attempts=1)
    answer = checked(KILL, KILL.judge(evidence))
    assert answer.answer == "Error Workflow ran two time(s); execution ends crashed"
    assert answer.facts["status_path"] == ["running", "error", "crashed"]


def test_a_kill_without_proof_is_undetermined() -> None:
    answer = KILL.judge(_evidence("worker_kill", 1, 1, kill_proof=None))
    assert answer.answer == UNDETERMINED and "SIGKILL" in answer.why


@pytest.mark.parametrize(
    "probe", ["error_workflow_after_retries", "error_workflow_after_worker_kill"]
)
def test_the_recorded_evidence_gives_the_recorded_answer(probe: str) -> None:
    answer, result = pe.rejudged(probe, "2.40.7")
    assert (
        answer.answer == result["answer"] == "Error Workflow ran one time(s); execution ends error"
    )
    assert answer.why == result["why"]
