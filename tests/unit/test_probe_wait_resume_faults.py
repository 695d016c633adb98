"""wait_resume_worker_kill / wait_resume_racing_recovery: judgement on evidence (no stack)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.findings.base import UNDETERMINED, checked, get_probe
from harness.findings.probes.wait_resume_faults import HELD_WAIT, RERUN_WAIT
from tests.unit import probe_evidence as pe

KILL = get_probe("wait_resume_worker_kill")
RACE = get_probe("wait_resume_racing_recovery")
WAITED = ["new", "running", "waiting", "running"]


def _call(status: int | None, sent: float = 1.0, answered: float = 1.1) -> dict[str, Any]:
    return {"sent_at": sent, "answered_at": answered, "status": status}


def _killed(
    *, final: str = "error", reran: bool = False, commits: int = 1, second: int | None = 409
) -> dict[str, Any]:
    rerun = pe.reached(RERUN_WAIT) if reran else [pe.gave_up(RERUN_WAIT)]
    return {
        "execution": "5",
        "status_paths": pe.paths(e5=[*WAITED, final]),
        "execution_rows": [{"id": "5", "status": final}],
        "provider_commits": pe.commits(commits),
        "resume_calls": [_call(200), _call(second, 40.0, 40.1)],
        "timeline": pe.reached(HELD_WAIT) + rerun,
        "observed": {
            "kill_proof": "worker0 exited by SIGKILL",
            "victim": "worker0",
            "worker_starts": 2,
            "settled_before_second_call": True,
        },
    }


def test_a_worker_kill_after_the_resumed_commit_answers_status_rerun_charges_and_call() -> None:
    answer = checked(KILL, KILL.judge(_killed()))
    assert answer.answer == "error; not re-run; one charge(s); the second resume call got 409"
    assert answer.facts["resume_statuses"] == [200, 409]
    token = checked(KILL, KILL.judge(_killed(second=401)))
    assert token.answer.endswith("the second resume call got 401")
    rerun = checked(KILL, KILL.judge(_killed(final="success", reran=True, commits=2, second=200)))
    assert rerun.answer == "success; re-run; two charge(s); the second resume call got 200"


def test_a_worker_kill_outside_its_window_is_undetermined() -> None:
    not_held = _killed()
    not_held["timeline"] = [pe.gave_up(HELD_WAIT)]
    assert "not held" in KILL.judge(not_held).why
    no_proof = _killed()
    no_proof["observed"]["kill_proof"] = None
    assert KILL.judge(no_proof).answer == UNDETERMINED
    early = _killed()
    early["observed"]["settled_before_second_call"] = False
    assert "left new/running" in KILL.judge(early).why
    never_waited = _killed()
    never_waited["status_paths"] = pe.paths(e5=["running", "error"])
    assert "never seen waiting" in KILL.judge(never_waited).why


def _raced(
    first: int | None = 200, answered: float = 12.0, commits: int = 1, ready: bool = True
) -> dict[str, Any]:
    timeline = [{"t": 10.0, "event": "ready", "process": "main"}] if ready else []
    return {
        "execution": "9",
        "status_paths": pe.paths(e9=[*WAITED, "success"]),
        "execution_rows": [{"id": "9", "status": "success"}],
        "provider_commits": pe.commits(commits),
        "resume_calls": [_call(first, answered - 0.1, answered), _call(409, 13.0, 13.1)],
        "timeline": timeline,
        "observed": {
            "kill_proof": "main exited by SIGKILL",
            "main_ready": ready,
            "racing_calls_without_answer": 4,
        },
    }


def test_a_resume_racing_main_start_up_answers_what_ran_and_what_the_calls_got() -> None:
    answer = checked(RACE, RACE.judge(_raced()))
    assert answer.answer == (
        "row ends success; charge ran once; the first answered resume call (after main was "
        "ready) got 200; the next got 409"
    )
    before = checked(RACE, RACE.judge(_raced(first=503, answered=9.5, commits=0)))
    assert before.answer.startswith("row ends success; charge ran never; the first answered")
    assert "(before main was ready) got another status" in before.answer
    no_route = checked(RACE, RACE.judge(_raced(first=404, answered=9.5)))
    assert "(before main was ready) got 404; the next got 409" in no_route.answer
    twice = checked(RACE, RACE.judge(_raced(commits=2)))
    assert "charge ran twice or more" in twice.answer


def test_a_race_without_an_answered_call_or_a_ready_main_is_undetermined() -> None:
    assert "no resume call got an HTTP answer" in RACE.judge(_raced(first=None)).why
    assert "not ready again" in RACE.judge(_raced(ready=False)).why


RECORDED = {
    "wait_resume_worker_kill": "error; not re-run; one charge(s); the second resume call got 401",
    "wait_resume_racing_recovery": "row ends success; charge ran once; the first answered "
    "resume call (before main was ready) got 404; the next got 200",
}


@pytest.mark.parametrize("version", ["2.33.7", "2.40.7"])
@pytest.mark.parametrize("probe", sorted(RECORDED))
def test_the_recorded_evidence_gives_the_recorded_answer(probe: str, version: str) -> None:
    answer, result = pe.rejudged(probe, version)
    assert answer.answer == result["answer"] == RECORDED[probe]
    assert answer.why == result["why"]
