"""The case engine end to end against a fake stack (no n8n): phases, evidence on disk as the
case goes, verdicts from what the fake workflow did, no long waits when a workflow never
opens a window, STUCK when work never ends, and evidence kept when the harness fails."""

from __future__ import annotations

import dataclasses
import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
import respx

from harness.engine import case_run, runner, settle
from harness.engine.case_run import CaseRun
from harness.engine.contract import CaseWorld
from harness.engine.crashpoints.base import CRASHPOINTS, Window
from harness.engine.deliveries.base import DELIVERIES, Plan
from harness.engine.faults import get_fault
from harness.engine.workload import BackgroundDelivery, SenderPolicy
from harness.judge.oracle import Verdict
from harness.matrix.cases import Case, Scenario
from harness.workflow.manifest import EffectEndpoint, Promise, WorkflowUnderTest
from tests.unit import engine_fakes as fakes


@dataclass(frozen=True)
class FakeDeployed:
    id: str
    name: str
    webhook_url: str | None


@dataclass(frozen=True)
class FakeDeployment:
    main: FakeDeployed
    reconciler: FakeDeployed | None = None
    error_workflow_id: str | None = None
    called: dict[str, str] = field(default_factory=dict)

    @property
    def workflow_ids(self) -> list[str]:
        return [self.main.id]


WORKFLOW = WorkflowUnderTest(
    name="pay",
    description="",
    promise=Promise.EXACTLY_ONCE,
    workflow={},
    method="POST",
    path="pay",
    body_template={"order_id": "{key}", "amount": 1250},
    business_key="order_id",
    effect=EffectEndpoint.CHARGES,
    ledger_state_query="SELECT status FROM l WHERE k = %(key)s",
    ledger_done_state="confirmed",
    ledger_unknown_states=("claimed",),
    ledger_failed_states=("failed",),
)
DEPLOYMENT = FakeDeployment(FakeDeployed("wf1", "pay", fakes.WEBHOOK_URL))


@pytest.fixture
def stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> fakes.FakeStack:
    fake = fakes.FakeStack(fakes.FakeRun(tmp_path))
    monkeypatch.setattr(settle, "QUIET_S", 0.05)
    monkeypatch.setattr(settle, "POLL_S", 0.01)
    monkeypatch.setattr(runner, "SETTLE_S", 1.0)
    monkeypatch.setattr(case_run, "SenderPolicy", functools.partial(SenderPolicy, backoff_s=0.0))
    monkeypatch.setattr(
        CaseRun,
        "queued_executions",
        lambda self: {r["id"] for r in fake.rows if r["status"] == "running"},
    )
    monkeypatch.setattr(CaseRun, "ledger_state", lambda self: fake.ledger.get(self.key))
    return fake


def case(delivery: str = "retry", fault: str = "no_fault", crashpoint: str = "none") -> Case:
    scenario = Scenario(delivery, fault, crashpoint, frozenset(), 1, False)
    return Case("pay", scenario, frozenset({Verdict.PASS}))


def run(
    stack: fakes.FakeStack,
    behaviour: fakes.Behaviour,
    the_case: Case | None = None,
    workflow: WorkflowUnderTest = WORKFLOW,
) -> runner.CaseResult:
    def answer(request: httpx.Request) -> httpx.Response:
        return behaviour(stack, json.loads(request.content))

    with respx.mock:
        respx.post(fakes.WEBHOOK_URL).mock(side_effect=answer)
        return runner.run_case(the_case or case(), stack, workflow, DEPLOYMENT)  # type: ignore[arg-type]


def busy_neighbour(stack: fakes.FakeStack, body: dict[str, Any]) -> httpx.Response:
    """Another case's execution and commit land while this case's own request runs."""
    stack.execution(data="other-key")
    stack.provider.control.commit("other-key")
    return fakes.charges_once(stack, body)


def test_a_case_beside_others_sees_only_its_own_executions_and_commits(
    stack: fakes.FakeStack,
) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        return busy_neighbour(stack, json.loads(request.content))

    beside = frozenset({"pay-mine", "other-key"})
    with respx.mock:
        respx.post(fakes.WEBHOOK_URL).mock(side_effect=answer)
        result = runner.run_case(case(), stack, WORKFLOW, DEPLOYMENT, (), "pay-mine", beside)  # type: ignore[arg-type]
    assert result.judgement.verdict is Verdict.PASS
    assert result.evidence.execution_ids == ["2"]  # "1" is the neighbour's
    assert result.evidence.stray_commits == []


def test_concurrent_copies_alone_on_the_stack_meet_held_workers(stack: fakes.FakeStack) -> None:
    run(stack, fakes.charges_once, case("concurrent"))
    # Held before the first copy's execution, released once every copy had one.
    assert [w.steps for w in stack.workers] == [[("paused", 0), ("resumed", 5)]] * 2


def test_concurrent_copies_beside_others_leave_the_workers_alone(stack: fakes.FakeStack) -> None:
    with respx.mock:
        respx.post(fakes.WEBHOOK_URL).mock(
            side_effect=lambda r: fakes.charges_once(stack, json.loads(r.content))
        )
        runner.run_case(
            case("concurrent"),
            stack,
            WORKFLOW,
            DEPLOYMENT,
            (),
            "pay-mine",
            frozenset({"pay-mine", "other"}),
        )  # type: ignore[arg-type]
    assert [w.steps for w in stack.workers] == [[], []]


def test_alone_another_reference_committing_during_the_case_is_stray(
    stack: fakes.FakeStack,
) -> None:
    assert run(stack, busy_neighbour).judgement.verdict is Verdict.STRAY


def test_a_correct_workflow_passes_and_every_phase_is_on_disk(stack: fakes.FakeStack) -> None:
    result = run(stack, fakes.charges_once)
    assert result.judgement.verdict is Verdict.PASS
    doc = json.loads(result.evidence_path.read_text())
    names = [p["name"] for p in doc["phases"]]
    assert names[:7] == [
        "prepare",
        "deliver",
        "strike",
        "await answer",
        "await fault",
        "heal",
        "settle",
    ]
    assert names[-1] == "collect"
    assert all(p["ended_at"] >= p["started_at"] for p in doc["phases"])
    history = (result.evidence_path.parent / "history.jsonl").read_text().splitlines()
    assert [json.loads(line)["outcome"] for line in history] == ["ok"]
    assert doc["verdict"] == "PASS"


def test_a_workflow_that_never_charges_is_not_done(stack: fakes.FakeStack) -> None:
    result = run(stack, fakes.never_charges, workflow=dataclasses.replace(WORKFLOW))
    assert result.judgement.verdict is Verdict.NOT_DONE


def test_charging_every_delivery_is_a_duplicate_under_late_redelivery(
    stack: fakes.FakeStack,
) -> None:
    result = run(stack, fakes.charges_every_time, case("late"))
    assert result.judgement.verdict is Verdict.DUPLICATE
    deliveries = [a["delivery"] for a in json.loads(result.evidence_path.read_text())["history"]]
    assert deliveries == ["d1", "late"]


def test_late_redelivery_of_a_correct_workflow_passes(stack: fakes.FakeStack) -> None:
    assert run(stack, fakes.charges_once, case("late")).judgement.verdict is Verdict.PASS


def test_an_acknowledgement_without_a_commit_is_lost(stack: fakes.FakeStack) -> None:
    assert run(stack, fakes.acknowledges_without_charging).judgement.verdict is Verdict.LOST


def test_a_definite_failure_after_a_commit_is_contradicted(stack: fakes.FakeStack) -> None:
    result = run(stack, fakes.charges_and_answers_failed)
    assert result.judgement.verdict is Verdict.CONTRADICTED


def test_a_planted_fault_that_never_met_the_effect_is_no_evidence(
    stack: fakes.FakeStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "FAULT_MEET_S", 0.2)

    # The provider fault is planted for the key; this workflow's commit never meets it
    # because the fake clears the plan before charging (as if the fault hit another request).
    def charges_around_the_fault(stack: fakes.FakeStack, body: dict[str, Any]) -> httpx.Response:
        stack.provider.control.plan.clear()
        return fakes.charges_once(stack, body)

    result = run(stack, charges_around_the_fault, case(fault="provider_5xx"))
    assert result.judgement.verdict is Verdict.NO_EVIDENCE
    assert "provider_5xx" in result.judgement.explanation


def test_a_violation_outranks_a_fault_that_never_landed(
    stack: fakes.FakeStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "FAULT_MEET_S", 0.2)

    def loses_it(stack: fakes.FakeStack, body: dict[str, Any]) -> httpx.Response:
        stack.provider.control.plan.clear()
        return fakes.acknowledges_without_charging(stack, body)

    result = run(stack, loses_it, case(fault="provider_5xx"))
    assert result.judgement.verdict is Verdict.LOST
    assert "not proven to land" in result.judgement.explanation


def test_work_that_never_ends_is_stuck_with_its_execution_ids(stack: fakes.FakeStack) -> None:
    result = run(stack, fakes.hangs_running, case("once"))
    assert result.judgement.verdict is Verdict.STUCK
    doc = json.loads(result.evidence_path.read_text())
    assert any(e["kind"] == "deadline.expired" for e in doc["journal"])


def test_a_harness_failure_keeps_the_evidence_and_says_where(
    stack: fakes.FakeStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Exploding(Plan):
        name = "exploding"

        def after_settle(self, run: CaseRun) -> bool:
            raise RuntimeError("the harness fell over")

    monkeypatch.setitem(DELIVERIES._factories, "exploding", Exploding)
    with pytest.raises(runner.CaseAborted, match="evidence kept in") as caught:
        run(stack, fakes.charges_once, case("exploding"))
    path = Path(str(caught.value).rsplit("evidence kept in ", 1)[1])
    doc = json.loads(path.read_text())
    assert doc["history"][0]["outcome"] == "ok"
    assert any(e["kind"] == "harness.error" for e in doc["journal"])


def test_saved_evidence_is_rejudged_offline_to_the_same_verdict(stack: fakes.FakeStack) -> None:
    from harness.judge.oracle import Evidence, judge

    result = run(stack, fakes.charges_every_time, case("late"))
    doc = json.loads(result.evidence_path.read_text())
    assert judge(Evidence.from_json(doc["evidence"])) == result.judgement


@pytest.mark.parametrize(
    ("behaviour", "verdict"),
    [
        (fakes.charges_once, Verdict.NO_EVIDENCE),
        (fakes.acknowledges_without_charging, Verdict.LOST),
    ],
)
def test_a_window_that_never_opens_is_judged_not_aborted(
    stack: fakes.FakeStack,
    monkeypatch: pytest.MonkeyPatch,
    behaviour: fakes.Behaviour,
    verdict: Verdict,
) -> None:
    """A fault that needs the worker running the execution, struck when none was found (a
    workflow that never calls the provider): the case gets the oracle's verdict on what
    happened, and evidence.json says the same as the result."""

    class StrikesBlind(Window):
        def strike(self, run: CaseWorld, delivery: BackgroundDelivery) -> None:
            delivery.join(5.0)
            run.inject()

    monkeypatch.setitem(CRASHPOINTS._factories, "strikes_blind", StrikesBlind)
    result = run(stack, behaviour, case(fault="postgres_cut", crashpoint="strikes_blind"))
    assert result.judgement.verdict is verdict
    doc = json.loads(result.evidence_path.read_text())
    assert doc["verdict"] == verdict.value
    assert any(e["kind"] == "window.not_opened" for e in doc["journal"])
    assert not any(e["kind"] == "harness.error" for e in doc["journal"])


def _main_logging_stalls(stack: fakes.FakeStack, execution_of: str) -> fakes.Behaviour:
    """A correct workflow during whose run main logs a stall of the execution with id
    ``execution_of`` ("own": the case's own)."""
    main = fakes.FakeLog("main")
    stack.processes.append(main)
    stack.n8n_processes.append(fakes.FakeN8n(main))

    def behaviour(stack: fakes.FakeStack, body: dict[str, Any]) -> httpx.Response:
        answer = fakes.charges_once(stack, body)
        stalled = stack.rows[-1]["id"] if execution_of == "own" else execution_of
        main.text += f"error job stalled more than maxStalledCount (execution {stalled})\n"
        return answer

    return behaviour


def test_a_stall_no_fault_provoked_makes_the_try_a_harness_error(stack: fakes.FakeStack) -> None:
    result = run(stack, _main_logging_stalls(stack, "own"))
    assert result.judgement.verdict is Verdict.NO_EVIDENCE
    assert "starved of CPU" in result.judgement.explanation
    assert (result.evidence_path.parent / "logs" / "main.log").read_text().count("stalled") == 1


def test_another_cases_stall_leaves_the_verdict_alone(stack: fakes.FakeStack) -> None:
    result = run(stack, _main_logging_stalls(stack, "999"))
    assert result.judgement.verdict is Verdict.PASS


def test_under_a_worker_fault_only_a_stall_of_an_execution_it_did_not_strike_counts() -> None:
    main = fakes.FakeLog("main", "job stalled more than maxStalledCount (execution 73)\n")
    run_ = SimpleNamespace(
        fault=get_fault("worker_kill"),
        ctx=SimpleNamespace(struck_executions=None),
        stack=SimpleNamespace(n8n_processes=[fakes.FakeN8n(main)]),
        log_marks={},
    )
    run_.fault.prepare(run_.ctx)
    assert run_.ctx.struck_executions == set()
    run_.ctx.struck_executions.add("73")  # as target_worker reads it from the worker's log
    assert runner._unprovoked_stalls(run_, {"73", "74"}) == []  # type: ignore[arg-type]
    main.text += "job stalled more than maxStalledCount (execution 74)\n"
    (proof,) = runner._unprovoked_stalls(run_, {"73", "74"})  # type: ignore[arg-type]
    assert not proof.held and "execution(s) 74," in proof.fact
    run_.fault = get_fault("redis_outage")  # a link fault may stall any execution
    run_.ctx.struck_executions = None
    run_.fault.prepare(run_.ctx)
    assert runner._unprovoked_stalls(run_, {"73", "74"}) == []  # type: ignore[arg-type]


def test_a_seeds_id_is_read_in_or_out_of_a_data_envelope() -> None:
    from harness.engine.case_run import _made_id

    assert _made_id({"id": "ch_1", "object": "charge"}) == "ch_1"
    assert _made_id({"success": True, "data": {"id": 4242}}) == 4242  # Pipedrive's shape
    assert _made_id([{"id": "x"}]) is None
