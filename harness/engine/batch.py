"""Internal: cases that share a stack. A case whose plan, fault and crash point all declare
``shares_stack`` (harness.engine.contract), of a workflow whose executions are all its own (no
Error Workflow, whose runs carry no business key; a reconciler only when it is handed the
case's key, so that it reconciles that case alone; no sub-workflows; no upstream fakes,
whose collections answer reads across keys; not a negative control, whose commits may carry
no case's reference), runs beside up to ``BATCH_MAX - 1`` other such cases
of its workflow on one stack: each has its own business key, provider reference, barrier
and fault plan, and reads only its own executions, attempts and commits
(``CaseRun.beside``). Every other case takes the stack alone.

A batch runs when the test of its first case asks (``SharedRuns.take``): the stack is reset
and routed once, its cases run in threads, and the test waits for all of them, so no case
that kills, pauses or cuts ever runs during a batch; the batch's other tests take their
results. Under pytest-xdist ``BatchScheduling`` sends a batch's tests to one worker
together. Batches are named from the selected tests in collection order, so the
controller and every worker name them alike.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

if TYPE_CHECKING:
    import pytest

    from harness.engine.runner import CaseResult
    from harness.matrix.cases import Case
    from harness.stack.stack import Stack
    from harness.workflow.deployment import Deployment
    from harness.workflow.manifest import Companion, WorkflowUnderTest

# At most this many cases at once on a stack: n8n's 2 workers run 5 executions each, and a
# concurrent-duplicates case sends 5 copies at once.
BATCH_MAX = 4
_CASE_TEST = re.compile(r"::test_exactly_once\[(?P<case>.+)\]$")


def _case_of(nodeid: str) -> str:
    """The case id of a matrix test's node id ("" for any other test)."""
    found = _CASE_TEST.search(nodeid)
    return found["case"] if found is not None else ""


def shares_stack(case: Case, workflow: WorkflowUnderTest) -> bool:
    """Whether the case may run beside others (see the module's doc)."""
    return (
        case.scenario.shares_stack
        and not case.needs_webhook_processor
        and (workflow.reconciler is None or _handed_the_key(workflow.reconciler))
        and workflow.error_workflow is None
        and workflow.negative_control is None
        # Sub-workflows' executions need not carry the key; upstream fakes remember
        # collections across keys (one case's read could find another's write).
        and not workflow.called
        and not workflow.upstream_configs()
    )


def _handed_the_key(companion: Companion) -> bool:
    """Whether the companion's trigger carries the case's business key (``{key}``)."""
    templates = (companion.body_template, companion.headers_template, companion.query_template)
    return "{key}" in json.dumps(templates)


def shareable_cases(
    cases: Iterable[Case], workflows: Iterable[WorkflowUnderTest]
) -> dict[str, str]:
    """Case id -> its workflow's name, for the cases that may run beside others."""
    by_name = {w.name: w for w in workflows}
    return {
        c.id: c.workflow
        for c in cases
        if c.workflow in by_name and shares_stack(c, by_name[c.workflow])
    }


def batches(
    nodeids: Iterable[str], shareable: Mapping[str, str], size: int = BATCH_MAX
) -> dict[str, str]:
    """Test node id -> batch name, for the selected tests of shareable cases: per workflow,
    dealt round-robin (in collection order) into as few batches of at most ``size`` as
    hold them, so repeats of one scenario (e.g. concurrent r1-r5) spread over batches."""
    by_workflow: dict[str, list[tuple[str, str]]] = {}
    for nodeid in nodeids:
        case_id = _case_of(nodeid)
        if case_id in shareable:
            by_workflow.setdefault(shareable[case_id], []).append((nodeid, case_id))
    names: dict[str, str] = {}
    for workflow, members in by_workflow.items():
        count = -(-len(members) // size)
        for i, (nodeid, _) in enumerate(members):
            names[nodeid] = f"{workflow}#shared{i % count + 1}"
    return names


WEBHOOK_SCOPE = "webhook_processor"


def scopes(
    nodeids: Iterable[str], shareable: Mapping[str, str], on_webhook_stack: Iterable[str]
) -> dict[str, str]:
    """Test node id -> the scope xdist hands to one worker whole: a batch (``batches``), or
    every case that needs the webhook-processor stack, so that one worker alone starts that
    second stack (a stack each would cost every worker a start-up and its memory)."""
    nodeids = list(nodeids)
    found = batches(nodeids, shareable)
    webhook = set(on_webhook_stack)
    for nodeid in nodeids:
        if _case_of(nodeid) in webhook:
            found[nodeid] = WEBHOOK_SCOPE
    return found


class BatchScheduling(LoadScopeScheduling):  # type: ignore[misc]
    """xdist's load scheduling, except that a batch's tests go to one worker together, and
    so do the cases on the webhook-processor stack (``scopes``)."""

    def __init__(
        self,
        config: pytest.Config,
        log: object | None,
        shareable: Mapping[str, str],
        on_webhook_stack: Iterable[str] = (),
    ) -> None:
        super().__init__(config, log)
        self._shareable = shareable
        self._on_webhook_stack = frozenset(on_webhook_stack)
        self._scopes: dict[str, str] | None = None

    def _split_scope(self, nodeid: str) -> str:
        if self._scopes is None:
            self._scopes = scopes(self.collection or [], self._shareable, self._on_webhook_stack)
        return self._scopes.get(nodeid, nodeid)


Deployed = Callable[[str], "tuple[WorkflowUnderTest, Deployment]"]


class SharedRuns:
    """The batches of one process's selected tests, each run once, together."""

    def __init__(self, members: Mapping[str, list[Case]]) -> None:
        self._batch_of = {case.id: name for name, cases in members.items() for case in cases}
        self._members = members
        self._results: dict[str, Future[CaseResult]] = {}

    def take(self, case: Case, stack: Stack, deployed: Deployed) -> CaseResult | None:
        """The case's result from its batch (run now if it has not run), or None when the
        case takes the stack alone. A batch's failure to run raises in each of its tests."""
        batch = self._batch_of.get(case.id)
        if batch is None:
            return None
        if case.id not in self._results:
            self._run(self._members[batch], stack, deployed)
        return self._results.pop(case.id).result()

    def _run(self, cases: list[Case], stack: Stack, deployed: Deployed) -> None:
        from harness.engine.runner import reset_stack, run_case
        from harness.workflow.deployment import route_upstreams
        from harness.workflow.manifest import case_key

        try:
            workflow, deployment = deployed(cases[0].workflow)
            reset_stack(stack)
            route_upstreams(stack, workflow)
        except BaseException as exc:
            for case in cases:
                failed: Future[CaseResult] = Future()
                failed.set_exception(exc)
                self._results[case.id] = failed
            raise
        keys = {case.id: case_key(case.id) for case in cases}
        beside = frozenset(keys.values())
        with ThreadPoolExecutor(len(cases), thread_name_prefix="shared-case") as pool:
            for case in cases:
                self._results[case.id] = pool.submit(
                    run_case, case, stack, workflow, deployment, (), keys[case.id], beside
                )
        # Leaving the pool waited for every case: the stack is the next test's alone.


def shared_runs(items: Iterable[pytest.Item], shareable: Mapping[str, str]) -> SharedRuns:
    """The batches among a session's selected tests (``chaos_case`` parametrized)."""
    listed = list(items)
    names = batches((item.nodeid for item in listed), shareable)
    members: dict[str, list[Case]] = {}
    for item in listed:
        if item.nodeid in names:
            case: Case = item.callspec.params["chaos_case"]  # type: ignore[attr-defined]
            members.setdefault(names[item.nodeid], []).append(case)
    return SharedRuns(members)
