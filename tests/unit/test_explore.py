"""Exploration without a stack: trace assembly from saved execution data and the proxy's
journal, the plan and its budget, the grouping, the report's node strip and reproductions."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.engine.crashpoints import CRASHPOINTS
from harness.engine.crashpoints.explore_boundary import STRIKES, explore_crashpoint
from harness.engine.runner import CaseResult
from harness.errors import CaseAborted, ConfigError
from harness.explore.boundary import ProviderAttempt, Seen, Trace, assemble
from harness.explore.explorer import explore
from harness.explore.findings import (
    groups,
    report_lines,
    reproduction,
    strip,
    strip_legend,
    to_json,
)
from harness.explore.plan import Budget
from harness.judge.oracle import Evidence, Judgement, Verdict
from harness.matrix.cases import Case, scenarios

FIXTURE = Path(__file__).parent / "fixtures" / "explore" / "milestone_run.json"


@pytest.fixture(autouse=True)
def _no_exploration_crash_points_left() -> Iterator[None]:
    """The explorer registers a crash point per boundary; the registry is global."""
    yield
    for name in CRASHPOINTS.names():
        if name.startswith("x_"):
            CRASHPOINTS.unregister(name)


def saved_trace() -> Trace:
    doc: dict[str, Any] = json.loads(FIXTURE.read_text())
    seen = [
        Seen(j["time"], j["method"], j["host"], j["path"], j["status"], j["outcome"])
        for j in doc["journal"]
    ]
    attempts = [ProviderAttempt(**a) for a in doc["attempts"]]
    return assemble("milestones", "m-17", [doc["execution"]], doc["node_types"], seen, attempts)


def test_requests_are_attributed_to_the_node_that_ran_them() -> None:
    trace = saved_trace()
    assert [(r.node, r.host, r.effect_index) for r in trace.requests] == [
        ("Find customer", "api.hubapi.com", None),  # a read: no effect request
        ("Create Payment Intent", "api.stripe.com", 1),
        ("Send receipt", "api.sendgrid.com", 2),
    ]
    assert trace.node_names() == [
        "Webhook",
        "Find customer",
        "Create Payment Intent",
        "Update milestone",
        "Send receipt",
    ]
    assert [n.name for n in trace.nodes if n.ledger_write] == ["Update milestone"]


def test_boundaries_in_run_order_name_the_nodes_around_them() -> None:
    trace = saved_trace()
    assert [b.id for b in trace.boundaries] == ["g1", "g2", "r1", "g3", "g4", "r2"]
    r1 = trace.boundaries[2]
    assert (r1.after_node, r1.before_node) == ("Find customer", "Update milestone")
    assert r1.describe().endswith("sent by node 'Create Payment Intent'")
    assert Trace.from_json(json.loads(json.dumps(trace.to_json()))) == trace


def test_an_effect_the_proxy_never_saw_is_a_request_of_its_own() -> None:
    doc = json.loads(FIXTURE.read_text())
    attempts = [ProviderAttempt(1, "charge", "o-1", 1700000000.1, "committed")]
    trace = assemble("bundled", "o-1", [doc["execution"]], doc["node_types"], [], attempts)
    [request] = trace.requests
    assert (request.host, request.node, request.effect_index) == (
        "provider",
        "Create Payment Intent",
        1,
    )


def result(case: Case, verdict: Verdict, why: str = "2 payment_intent commits") -> CaseResult:
    evidence = Evidence(
        key="m-17-x", promise="exactly_once", effect="", commits=[], attempts=[], proofs=[]
    )
    return CaseResult(case.id, Judgement(verdict, f"{why}; key m-17-x: ..."), evidence, Path("/e"))


def test_the_budget_stops_exploration_and_says_what_was_left() -> None:
    ran: list[str] = []

    def run(case: Case) -> CaseResult:
        ran.append(case.crashpoint)
        return result(case, Verdict.PASS)

    found = explore(saved_trace(), "exactly_once", run, Budget(cases=3))
    # Breadth first: every request's after_commit before any second strike.
    assert ran == ["x_after_commit_r1", "x_after_commit_r2", "x_response_drop_r1"]
    left = 2 * len(STRIKES) - 3  # two effect requests, every strike each
    assert len(found.not_run) == left
    lines = report_lines(found, [])
    assert any(f"not run (budget): {left}" in x for x in lines)


def test_a_budget_in_minutes_starts_no_case_after_it() -> None:
    now = [0.0]
    budget = Budget(minutes=1, clock=lambda: now[0])

    def run(case: Case) -> CaseResult:
        now[0] += 45
        return result(case, Verdict.PASS)

    found = explore(saved_trace(), "exactly_once", run, budget)
    assert len(found.outcomes) == 2 and len(found.not_run) == 2 * len(STRIKES) - 2
    with pytest.raises(ConfigError, match="--budget-cases 0"):
        Budget(cases=0)


def test_boundaries_that_behave_the_same_are_grouped_with_the_shortest_first() -> None:
    def run(case: Case) -> CaseResult:
        duplicate = case.crashpoint.startswith("x_after_commit")
        return result(case, Verdict.DUPLICATE if duplicate else Verdict.PASS)

    found = explore(saved_trace(), "exactly_once", run, Budget())
    [group] = groups(found.outcomes)
    assert (group.strike, group.verdict) == ("after_commit", "DUPLICATE")
    assert [o.probe.boundary.id for o in group.outcomes] == ["r1", "r2"]
    assert group.shortest.probe.boundary.id == "r1"
    assert strip(found) == (
        "Webhook ─ Find customer ─ Create Payment Intent ✗ ─ Update milestone ─ Send receipt ✗"
    )
    report = "\n".join(report_lines(found, ["milestones-retry-worker_kill-after_commit"]))
    assert (
        "VIOLATION DUPLICATE: killing the worker after the provider committed request 1 POST "
        "api.stripe.com/v1/payment_intents of node 'Create Payment Intent' and before "
        "'Update milestone' ran: 2 payment_intent commits (key m-17-x)"
    ) in report
    assert "reproduce: n8n-chaos run -k milestones-retry-worker_kill-after_commit" in report
    assert to_json(found, [])["outcomes"][1]["reproduce"] == (
        "n8n-chaos explore --only milestones:r2:after_commit"
    )


def test_the_strip_marks_the_nodes_whose_requests_open_a_window() -> None:
    def run(case: Case) -> CaseResult:
        if case.crashpoint == "x_response_drop_r1":
            raise CaseAborted("the stack went away")  # no verdict: no mark
        broken = case.crashpoint in {"x_after_commit_r1", "x_before_send_r1"}
        return result(case, Verdict.DUPLICATE if broken else Verdict.PASS)

    found = explore(saved_trace(), "exactly_once", run, Budget())
    assert strip(found) == (
        "Webhook ─ Find customer ─ Create Payment Intent ✗ ─ Update milestone ─ Send receipt"
    )
    assert strip_legend(found) == [
        "✗ Create Payment Intent: r1 after_commit DUPLICATE, r1 before_send DUPLICATE"
    ]
    lines = report_lines(found, [])
    assert (
        lines[-2].startswith("  nodes: Webhook ─ ") and lines[-1].strip() == strip_legend(found)[0]
    )
    allowed = explore(saved_trace(), "none", run, Budget())
    assert strip(allowed).split(" ─ ")[2] == "Create Payment Intent !"  # the promise allows it
    clean = explore(saved_trace(), "exactly_once", lambda c: result(c, Verdict.PASS), Budget())
    assert "✗" not in strip(clean) and not strip_legend(clean)
    assert to_json(found, [])["strip_legend"] == strip_legend(found)


def test_a_harness_error_is_an_outcome_without_a_verdict_and_exploration_goes_on() -> None:
    def run(case: Case) -> CaseResult:
        raise CaseAborted("the stack went away")

    found = explore(saved_trace(), "none", run, Budget(cases=2))
    assert [o.verdict for o in found.outcomes] == [None, None]
    assert not groups(found.outcomes)


def test_promise_none_allows_the_duplicate_and_says_so() -> None:
    found = explore(saved_trace(), "none", lambda c: result(c, Verdict.DUPLICATE), Budget(cases=1))
    [outcome] = found.outcomes
    assert outcome.window and not outcome.violation
    assert "window (allowed by promise 'none')" in "\n".join(report_lines(found, []))
    assert reproduction(outcome, [], "--workflows ./wf ", "k") == (
        "n8n-chaos explore --workflows ./wf --only milestones:r1:after_commit"
    )


def test_exploration_crash_points_never_join_the_matrix() -> None:
    name = explore_crashpoint("after_commit", 2, "payment_intent")
    try:
        assert name == "x_after_commit_r2"
        assert CRASHPOINTS.create(name).offers == frozenset({"explore_boundary"})
        assert not [s for s in scenarios() if s.crashpoint.startswith("x_")]
    finally:
        CRASHPOINTS.unregister(name)


def test_an_effect_without_the_business_key_is_listed_but_not_struck() -> None:
    doc = json.loads(FIXTURE.read_text())
    attempts = [ProviderAttempt(1, "customer", None, 1700000000.1, "committed")]
    trace = assemble("bundled", "o-1", [doc["execution"]], doc["node_types"], [], attempts)
    [request] = trace.requests
    assert (request.effect, request.effect_index) == ("customer", None)
    assert not [b for b in trace.boundaries if b.kind == "request"]


def test_a_control_case_that_breaks_the_promise_is_a_finding_without_any_strike() -> None:
    trace = dataclasses.replace(saved_trace(), control_verdict="STRAY")
    found = explore(trace, "exactly_once", lambda case: result(case, Verdict.PASS), Budget(cases=1))
    assert found.control_violation is Verdict.STRAY and found.violation
    assert any("VIOLATION STRAY with nothing broken" in line for line in report_lines(found, []))
    calm = explore(
        saved_trace(), "exactly_once", lambda c: result(c, Verdict.PASS), Budget(cases=1)
    )
    assert calm.control_violation is None and not calm.violation


def test_an_explore_case_the_harness_failed_is_tried_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A starved stack's NO-EVIDENCE is the harness's failure, not the probe's answer: tried
    again (as the matrix does), the earlier try's evidence set aside; at most TRIES in all."""
    from harness.explore import trace

    verdicts = iter([Verdict.NO_EVIDENCE, Verdict.NO_EVIDENCE, Verdict.DUPLICATE])
    set_aside: list[int] = []

    def fake_run(*_: Any) -> CaseResult:
        judgement = Judgement(next(verdicts), "")
        return CaseResult("c", judgement, None, tmp_path / "c" / "evidence.json")  # type: ignore[arg-type]

    monkeypatch.setattr(trace, "run_case", fake_run)
    monkeypatch.setattr(trace, "set_aside", lambda _dir, n: set_aside.append(n))
    result, _ = trace.run_tried(None, None, None, None)  # type: ignore[arg-type]
    assert result.judgement.verdict is Verdict.DUPLICATE and set_aside == [1, 2]
    always = iter([Verdict.NO_EVIDENCE] * 5)
    monkeypatch.setattr(
        trace,
        "run_case",
        lambda *_: CaseResult("c", Judgement(next(always), ""), None, tmp_path / "e"),
    )  # type: ignore[arg-type]
    result, _ = trace.run_tried(None, None, None, None)  # type: ignore[arg-type]
    assert result.judgement.verdict is Verdict.NO_EVIDENCE and next(always)  # 3 of 5 used
