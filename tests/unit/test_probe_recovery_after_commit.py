"""recovery_after_commit's judgement on recorded evidence (no stack)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.findings.base import UNDETERMINED, checked, get_probe
from harness.findings.probes.recovery_after_commit import RERUN_WAIT
from tests.unit import probe_evidence as pe

PROBE = get_probe("recovery_after_commit")


def _evidence(
    *, reran: bool, kill_proof: str | None = "worker1 exited by SIGKILL"
) -> dict[str, Any]:
    return {
        "execution": "8",
        "status_paths": pe.paths(e8=["running", "error"]),
        "execution_rows": [{"id": "8", "status": "error"}],
        "provider_commits": pe.commits(1),
        "provider_attempts": [{"id": 1}],
        "sender": pe.sender(500),
        "timeline": pe.reached(RERUN_WAIT) if reran else [pe.gave_up(RERUN_WAIT)],
        "observed": {"worker_starts": 1, "kill_proof": kill_proof, "victim": "worker1"},
    }


@pytest.mark.parametrize("version", ["2.33.7", "2.40.7"])
def test_the_recorded_evidence_gives_the_recorded_answer(version: str) -> None:
    answer, result = pe.rejudged("recovery_after_commit", version)
    assert answer.answer == result["answer"] == "error; not re-run"
    assert answer.why == result["why"]


def test_the_final_status_is_the_last_one_the_row_was_seen_in() -> None:
    evidence = _evidence(reran=False)
    evidence["status_paths"] = pe.paths(e8=["running", "error", "crashed"])
    answer = checked(PROBE, PROBE.judge(evidence))
    assert answer.answer == "crashed; not re-run"
    assert answer.facts["status_path"] == ["running", "error", "crashed"]
    assert answer.facts["sender"] == "got 500"


def test_a_rerun_seen_by_the_wait_is_the_answer() -> None:
    answer = checked(PROBE, PROBE.judge(_evidence(reran=True)))
    assert answer.answer == "error; re-run"
    assert "was re-run" in answer.why


def test_without_proof_of_the_kill_it_says_undetermined() -> None:
    answer = PROBE.judge(_evidence(reran=False, kill_proof=None))
    assert answer.answer == UNDETERMINED
    assert "worker1 did not end by SIGKILL" in answer.why


def test_a_row_never_seen_is_unknown_not_a_guess() -> None:
    evidence = _evidence(reran=False)
    evidence["status_paths"] = {}
    answer = checked(PROBE, PROBE.judge(evidence))
    assert answer.answer == "unknown; not re-run"
