"""Cases that share a stack (harness.engine.batch): which cases may, how they are dealt into
batches, and that a batch runs once, together, each case with its own key and the batch's
keys beside it."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

import pytest

from harness.engine import runner
from harness.engine.batch import (
    BATCH_MAX,
    WEBHOOK_SCOPE,
    BatchScheduling,
    SharedRuns,
    batches,
    scopes,
    shareable_cases,
)
from harness.engine.runner import CaseResult
from harness.judge.oracle import Judgement, Verdict
from harness.matrix.cases import Case, matrix
from harness.workflow import deployment
from harness.workflow.manifest import Companion, NegativeControl
from tests.unit.test_cases import workflow

NODE = "harness/front/suite.py::test_exactly_once[{}]"


def by_id(cases: list[Case]) -> dict[str, Case]:
    return {c.id: c for c in cases}


def test_only_cases_that_touch_no_process_or_link_share() -> None:
    pay = workflow()
    shared = shareable_cases(matrix([pay]), [pay])
    assert "pay-retry-no_fault-none" in shared
    assert "pay-retry-response_drop-none" in shared  # a provider fault for its own reference
    assert "pay-concurrent-no_fault-none-r3" in shared
    assert "pay-retry-worker_kill-after_commit" not in shared  # kills a process
    assert "pay-retry-postgres_cut-after_commit" not in shared  # cuts a link
    assert "pay-late-no_fault-none" in shared
    assert "pay-late_after_ttl-no_fault-none" not in shared  # the provider forgets every key
    assert set(shared.values()) == {"pay"}


def test_a_workflow_whose_runs_are_not_all_its_own_cases_runs_alone() -> None:
    broken = workflow(
        "broken",
        negative_control=NegativeControl(
            bug="charges twice", caught_by={"retry-response_drop-none": "DUPLICATE"}
        ),
    )
    assert shareable_cases(matrix([broken]), [broken]) == {}


def test_batches_are_per_workflow_small_and_spread_repeats() -> None:
    pay, mail = workflow(), workflow("mail")
    cases = matrix([pay, mail])
    shared = shareable_cases(cases, [pay, mail])
    nodeids = [NODE.format(c.id) for c in cases] + ["tests/unit/test_x.py::test_other"]
    names = batches(nodeids, shared)
    assert set(names) == {NODE.format(i) for i in shared}
    members: dict[str, list[str]] = {}
    for nodeid, name in names.items():
        members.setdefault(name, []).append(nodeid)
    for name, nodes in members.items():
        assert len(nodes) <= BATCH_MAX
        workflow_name = name.split("#")[0]
        assert all(f"[{workflow_name}-" in n for n in nodes)
    repeats = [names[NODE.format(f"pay-concurrent-no_fault-none-r{i}")] for i in range(1, 6)]
    assert len(set(repeats)) > 1  # the five concurrent runs do not all land in one batch
    # The controller and each worker see the same selection: the same names.
    assert batches(list(nodeids), shared) == names


def test_a_batch_runs_once_together_each_case_with_its_own_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pay = workflow()
    cases = [c for c in matrix([pay]) if c.id in shareable_cases([c], [pay])][:3]
    inside = threading.Barrier(len(cases), timeout=5)  # all three at once, or it breaks
    calls: list[tuple[str, str, frozenset[str]]] = []
    resets: list[str] = []

    def fake_run_case(case: Case, *args: Any) -> CaseResult:
        *_, key, beside = args
        calls.append((case.id, key, beside))
        inside.wait()
        return CaseResult(case.id, Judgement(Verdict.PASS, "made up"), None, None)  # type: ignore[arg-type]

    monkeypatch.setattr(runner, "run_case", fake_run_case)
    monkeypatch.setattr(runner, "reset_stack", lambda stack: resets.append("reset"))
    monkeypatch.setattr(deployment, "route_upstreams", lambda stack, wf: resets.append("route"))
    shared = SharedRuns({"pay#shared1": cases})
    deployed = lambda name: (pay, object())  # noqa: E731
    first = shared.take(cases[0], object(), deployed)  # type: ignore[arg-type]
    assert first is not None and first.case_id == cases[0].id
    assert resets == ["reset", "route"]  # once for the batch
    assert len(calls) == 3
    keys = {key for _, key, _ in calls}
    assert len(keys) == 3 and all(beside == frozenset(keys) for _, _, beside in calls)
    for case in cases[1:]:  # the others take their results: nothing runs again
        taken = shared.take(case, object(), deployed)  # type: ignore[arg-type]
        assert taken is not None and taken.case_id == case.id
    assert len(calls) == 3


def test_a_case_outside_every_batch_runs_alone() -> None:
    pay = workflow()
    kill = by_id(matrix([pay]))["pay-retry-worker_kill-after_commit"]
    assert SharedRuns({}).take(kill, object(), lambda name: (pay, object())) is None  # type: ignore[arg-type]


def test_a_batch_that_cannot_start_fails_each_of_its_tests(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pay = workflow()
    cases = [c for c in matrix([pay]) if c.id in shareable_cases([c], [pay])][:2]

    def refused(name: str) -> Any:
        raise RuntimeError(f"{name}: could not be deployed")

    shared = SharedRuns({"pay#shared1": cases})
    for case in cases:
        with pytest.raises(RuntimeError, match="could not be deployed"):
            shared.take(case, object(), refused)  # type: ignore[arg-type]


class FakeNode:
    def __init__(self, name: str) -> None:
        self.name = name
        self.gateway = SimpleNamespace(id=name)
        self.shutting_down = False
        self.sent: list[int] = []

    def send_runtest_some(self, indexes: list[int]) -> None:
        self.sent += indexes

    def shutdown(self) -> None:
        pass


def test_under_xdist_a_batch_goes_to_one_worker_and_the_rest_one_by_one() -> None:
    pay = workflow()
    cases = matrix([pay])
    shared = shareable_cases(cases, [pay])
    collection = [NODE.format(c.id) for c in cases]
    config = SimpleNamespace(
        getvalue=lambda name: ["2*popen"] if name == "tx" else None,
        option=SimpleNamespace(loadscopereorder=True),
    )
    on_webhook_stack = [c.id for c in cases if c.needs_webhook_processor]
    assert on_webhook_stack  # the bundled plans and faults put some there
    scheduler = BatchScheduling(config, None, shared, on_webhook_stack)  # type: ignore[arg-type]
    nodes = [FakeNode("gw0"), FakeNode("gw1")]
    for node in nodes:
        scheduler.add_node(node)
        scheduler.add_node_collection(node, collection)
    scheduler.schedule()
    while scheduler.workqueue:  # each node asks for more as it finishes what it has
        for node in nodes:
            if scheduler.workqueue:
                scheduler._assign_work_unit(node)
    got = {node.name: {collection[i] for i in node.sent} for node in nodes}
    assert got["gw0"] | got["gw1"] == set(collection) and not got["gw0"] & got["gw1"]
    grouped = _members(scopes(collection, shared, on_webhook_stack))
    assert len(grouped[WEBHOOK_SCOPE]) == len(on_webhook_stack)
    for name, members in grouped.items():
        on = [n for n, sent in got.items() if set(members) <= sent]
        assert len(on) == 1, f"{name} split over workers"  # one webhook stack, not one each


def _members(names: dict[str, str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for nodeid, name in names.items():
        found.setdefault(name, []).append(nodeid)
    return found


def test_a_reconciler_shares_only_when_it_is_handed_the_case_key() -> None:
    handed = Companion({}, "POST", "reconcile", {"order_id": "{key}"})
    sweeping = Companion({}, "POST", "reconcile", {"all": True})
    for reconciler, shares in ((handed, True), (sweeping, False)):
        pay = workflow(reconciler=reconciler)
        assert ("pay-retry-no_fault-none" in shareable_cases(matrix([pay]), [pay])) is shares
