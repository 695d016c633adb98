"""webhook_processor_kill's judgement on evidence (no stack)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.findings.base import UNDETERMINED, checked, get_probe
from harness.findings.probes.webhook_processor_kill import RERUN_WAIT
from tests.unit import probe_evidence as pe

PROBE = get_probe("webhook_processor_kill")


def _evidence(
    statuses: list[str],
    commits: int,
    status: int | None = None,
    *,
    finishes: int = 1,
    kill_proof: str | None = "webhook exited by SIGKILL (wait status)",
) -> dict[str, Any]:
    sender = pe.sender(status)
    if status is None:
        sender["error"] = "RemoteProtocolError: Server disconnected without sending a response."
    return {
        "execution": "3",
        "status_paths": pe.paths(e3=statuses),
        "execution_rows": [{"id": "3", "status": statuses[-1] if statuses else "new"}],
        "provider_commits": pe.commits(commits),
        "provider_attempts": [{"id": i} for i in range(commits)],
        "sender": sender,
        "timeline": [pe.gave_up(RERUN_WAIT)],
        "observed": {
            "kill_proof": kill_proof,
            "victim": "webhook",
            "sender_answered_before_release": status is None,
            "worker_starts": 1,
            "worker_finishes": finishes,
        },
    }


@pytest.mark.parametrize(
    ("statuses", "commits", "status", "finishes", "expected"),
    [
        (
            ["running", "success"],
            1,
            None,
            1,
            "sender got no answer; row ends success; charge ran once; worker finished it",
        ),
        (
            ["running", "error"],
            1,
            500,
            0,
            "sender got 500; row ends error; charge ran once; worker did not finish it",
        ),
        (
            ["running", "success"],
            2,
            200,
            2,
            "sender got 200; row ends success; charge ran twice or more; worker finished it",
        ),
        (
            ["running"],
            1,
            None,
            0,
            "sender got no answer; row ends running; charge ran once; worker did not finish it",
        ),
    ],
)
def test_it_answers_from_the_sender_the_row_the_commits_and_the_worker_log(
    statuses: list[str], commits: int, status: int | None, finishes: int, expected: str
) -> None:
    answer = checked(PROBE, PROBE.judge(_evidence(statuses, commits, status, finishes=finishes)))
    assert answer.answer == expected
    assert answer.facts["worker_finishes"] == finishes


def test_the_why_says_when_the_sender_lost_its_answer() -> None:
    answer = PROBE.judge(_evidence(["running", "success"], 1))
    assert "before the held charge was released" in answer.why
    assert "Server disconnected" in answer.why
    assert answer.facts["re_run_seen"] is False


def test_without_proof_of_the_kill_it_says_undetermined() -> None:
    answer = PROBE.judge(_evidence(["running", "success"], 1, kill_proof=None))
    assert answer.answer == UNDETERMINED
    assert "webhook did not end by SIGKILL" in answer.why


def test_on_a_stack_without_a_webhook_processor_it_says_why() -> None:
    stack: Any = type("Stack", (), {"webhook": None})()
    answer = PROBE.run(stack)
    assert answer.answer == UNDETERMINED
    assert "no webhook processor" in answer.why


def test_the_recorded_evidence_gives_the_recorded_answer() -> None:
    answer, result = pe.rejudged("webhook_processor_kill", "2.40.7")
    assert answer.answer == result["answer"]
    assert answer.answer == (
        "sender got no answer; row ends success; charge ran once; worker finished it"
    )
    assert answer.why == result["why"]
