"""The link-fault probes: one per link fault, and their judgement on evidence (no stack)."""

from __future__ import annotations

from typing import Any

from harness.engine.faults.base import get_fault, known_faults
from harness.engine.faults.toxic_link import ToxicLink
from harness.findings.base import UNDETERMINED, checked, get_probe, known_probes
from tests.unit import probe_evidence as pe

PROBE = get_probe("redis_silent")
GREEN = {"at": 1.0, "main": 200, "worker0": 200, "worker1": 200}


def _evidence(
    statuses: list[str],
    commits: int,
    status: int | None,
    *,
    health: list[dict[str, Any]] | None = None,
    after_status: int | None = 200,
    after_commits: int = 1,
) -> dict[str, Any]:
    return {
        "execution": "3",
        "status_paths": pe.paths(e3=statuses),
        "execution_rows": [{"id": "3", "status": statuses[-1]}],
        "provider_commits": pe.commits(commits),
        "sender": {**pe.sender(status), "answered_at": 13.1},
        "timeline": [],
        "observed": {
            "timings": "fast",
            "hold_s": 12.0,
            "proof": "Toxiproxy listed worker0_redis:chaos_redis_silent_upstream",
            "health": [GREEN] if health is None else health,
            "status_at_heal": "running",
            "sender_at_heal": None,
            "worker_starts": 1,
            "after_sender": {"status": after_status},
            "after_commits": after_commits,
        },
    }


def test_green_health_a_finished_row_and_new_work_after_the_heal() -> None:
    answer = checked(PROBE, PROBE.judge(_evidence(["running", "success"], 1, 200)))
    assert answer.answer == (
        "work after the heal ran; row ends success; charge ran once; sender got 200; "
        "health checks stayed green"
    )
    assert "after 13.0 s" in answer.why and "every one 200" in answer.why


def test_a_red_health_check_and_no_work_after_the_heal_say_so() -> None:
    red = {**GREEN, "worker1": "ReadTimeout"}
    evidence = _evidence(["running", "error"], 1, 500, health=[red], after_status=None)
    answer = checked(PROBE, PROBE.judge(evidence))
    assert answer.answer == (
        "work after the heal did not run; row ends error; charge ran once; sender got 500; "
        "health checks went red"
    )
    assert "worker1 ReadTimeout" in answer.why


def test_no_proof_is_undetermined() -> None:
    evidence = _evidence(["running", "success"], 1, 200)
    evidence["observed"]["proof"] = None
    assert PROBE.judge(evidence).answer == UNDETERMINED


def test_new_work_only_after_a_restart_says_so() -> None:
    evidence = _evidence(["running", "success"], 1, 200)
    evidence["observed"]["restarted"] = ["main restarted"]
    answer = checked(PROBE, PROBE.judge(evidence))
    assert answer.answer.startswith("work after the heal ran after a restart;")
    assert "restarted at the heal: main restarted" in answer.why


def test_every_link_fault_is_a_probe_that_says_its_fault() -> None:
    links = [n for n in known_faults() if isinstance(get_fault(n), ToxicLink)]
    assert {"redis_silent", "worker_redis_deaf", "provider_slow_link"} <= set(links)
    assert set(links) <= set(known_probes())
    assert get_probe("worker_redis_deaf").question.startswith(
        "The running worker's redis link goes silent (bytes dropped, sockets kept), downstream only"
    )
    assert "Every worker's redis link" in get_probe("redis_silent").question


def test_the_recorded_evidence_gives_the_recorded_answer() -> None:
    answer, result = pe.rejudged("redis_silent", "2.40.7")
    assert answer.answer == result["answer"]
    assert answer.answer == (
        "work after the heal ran; row ends success; charge ran once; sender got no answer; "
        "health checks stayed green"
    )
    assert answer.facts["timings"] == "fast" and answer.facts["hold_s"] == 12.0
