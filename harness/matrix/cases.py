"""The matrix: case = workflow x delivery plan x fault x crash point, with the verdicts the
workflow's promise expects. Nothing here is hand-listed: every plug-in says what it pairs
with and what it needs (see the base modules of harness/engine/deliveries, faults, crashpoints),
and the matrix is every pairing they accept whose needs the workflow meets.

Expectations are data:
- ``exactly_once``: PASS in every scenario;
- ``at_most_once``: never DUPLICATE, never a lie; the effect may be missing after a fault
  (where no fault strikes, PASS);
- ``none`` (a workflow that promises nothing, like payment_naive): PASS where nothing comes
  twice, CAUGHT (DUPLICATE or LOST) where the same event arrives again or the sender's
  answer is lost after the commit and it retries: the harness proves it sees the bug;
- a negative control (manifest ``negative_control``): a deliberately broken workflow, run only
  in the scenarios that must catch it, each with the one verdict it must get.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, TypeVar

from harness.engine.contract import WORKFLOW_CAPABILITIES
from harness.engine.crashpoints import CRASHPOINTS, CrashPoint
from harness.engine.deliveries import DELIVERIES, DeliveryPlan
from harness.engine.deliveries.changed_payload import numeric
from harness.engine.faults import FAULTS, Fault
from harness.engine.faults.execution_timeout import STRIKABLE_S
from harness.engine.faults.provider_fault import HANG_S
from harness.engine.registry import Registry
from harness.errors import ConfigError
from harness.judge.oracle import Verdict
from harness.workflow.manifest import Promise, WorkflowUnderTest, discover

T = TypeVar("T")

PASS = frozenset({Verdict.PASS})
CAUGHT = frozenset({Verdict.DUPLICATE, Verdict.LOST})
AT_MOST_ONCE = frozenset({Verdict.PASS, Verdict.LOST, Verdict.NOT_DONE, Verdict.UNRECONCILED})


def scenario_id(delivery: str, fault: str, crashpoint: str) -> str:
    """A scenario's id, e.g. ``retry-worker_kill-after_commit`` (``none``: no crash point)."""
    return f"{delivery}-{fault}-{crashpoint}"


@dataclass(frozen=True)
class Scenario:
    delivery: str
    fault: str
    crashpoint: str
    needs: frozenset[str]
    repeat: int
    catches_naive: bool  # the event comes again, or the answer is lost after the commit
    effect_possible: bool = True
    # What the workflow must offer for ``catches_naive`` to hold (the answer is lost only for
    # some workflows: provider_slow where its call times out first); lacking it, may catch.
    catches_naive_needs: frozenset[str] = frozenset()
    # The answer may be lost after the commit, depending on timing n8n does not control
    # (e.g. work finishing while main reconnects to Redis): a naive workflow may be caught.
    may_catch_naive: bool = False
    # No fault strikes: an at-most-once workflow has no excuse for a missing effect there.
    quiet: bool = False
    baseline: bool = False  # the plain sender's cases come first
    # The plan calls the resume URL of an execution parked at a Wait node: the only plans a
    # workflow that parks runs (under any other its effect never comes).
    resumes_waits: bool = False
    # The fault is opt-in: only workflows whose manifest names it (production_faults) run it.
    opt_in: bool = False
    # Its plan, fault and crash point all declare ``shares_stack`` (harness.engine.contract): the
    # case may run beside others on one stack (harness.engine.batch).
    shares_stack: bool = False

    @property
    def id(self) -> str:
        return scenario_id(self.delivery, self.fault, self.crashpoint)

    @property
    def is_control(self) -> bool:
        """The control case: nothing breaks and the plain sender sends (PASS for any promise)."""
        return self.baseline and self.quiet


@dataclass(frozen=True)
class Case:
    workflow: str
    scenario: Scenario
    expected: frozenset[Verdict]
    run_no: int = 1
    runs: int = 1

    @property
    def id(self) -> str:
        base = f"{self.workflow}-{self.scenario.id}"
        return f"{base}-r{self.run_no}" if self.runs > 1 else base

    @property
    def delivery(self) -> str:
        return self.scenario.delivery

    @property
    def fault(self) -> str:
        return self.scenario.fault

    @property
    def crashpoint(self) -> str:
        return self.scenario.crashpoint

    @property
    def needs_webhook_processor(self) -> bool:
        return "webhook_processor" in self.scenario.needs


def pairs(plan: DeliveryPlan, fault: Fault, crashpoint: CrashPoint) -> bool:
    """Whether the three plug-ins accept each other, by the traits each declares."""
    if not fault.needs_window <= crashpoint.offers or not fault.needs_plan <= plan.offers:
        return False
    if plan.accepts is None:
        return True
    offered = fault.offers | crashpoint.offers
    return any(wanted <= offered for wanted in plan.accepts)


def _each(registry: Registry[T]) -> dict[str, T]:
    """One instance of every registered plug-in of a family, by name."""
    return {name: registry.create(name) for name in registry.names()}


def check_pairings() -> None:
    """Every trait a plug-in names is offered by some registered plug-in, and every workflow
    need is a known capability: a misspelt trait would silently drop cases."""
    _check(_each(DELIVERIES), _each(FAULTS), _each(CRASHPOINTS))


def _check(
    plans: dict[str, DeliveryPlan], faults: dict[str, Fault], points: dict[str, CrashPoint]
) -> None:
    by_plan = {t for d in plans.values() for t in d.offers}
    by_point = {t for p in points.values() for t in p.offers}
    window = {t for f in faults.values() for t in f.offers} | by_point
    for name, fault in faults.items():
        _known(FAULTS, name, "needs_window", fault.needs_window, by_point)
        _known(FAULTS, name, "needs_plan", fault.needs_plan, by_plan)
        _known(FAULTS, name, "needs", fault.needs, WORKFLOW_CAPABILITIES)
    for name, point in points.items():
        _known(CRASHPOINTS, name, "needs", point.needs, WORKFLOW_CAPABILITIES)
    for name, plan in plans.items():
        for wanted in plan.accepts or ():
            _known(DELIVERIES, name, "accepts", wanted, window)
        _known(DELIVERIES, name, "needs", plan.needs, WORKFLOW_CAPABILITIES)


def _known(
    registry: Registry[Any],
    name: str,
    field: str,
    named: frozenset[str],
    known: Iterable[str],
) -> None:
    unknown = sorted(named - set(known))
    if unknown:
        raise ConfigError(
            f"{registry.origin(name)}: {registry.kind} {name!r} field {field!r} names "
            f"{', '.join(map(repr, unknown))}, which no registered plug-in offers; "
            f"known: {', '.join(sorted(known))}"
        )


def scenarios() -> list[Scenario]:
    """Every pairing the registered plug-ins accept, in a stable order."""
    plans, faults, points = _each(DELIVERIES), _each(FAULTS), _each(CRASHPOINTS)
    _check(plans, faults, points)
    found = []
    for (plan_name, plan), (fault_name, fault), (point_name, point) in itertools.product(
        plans.items(), faults.items(), points.items()
    ):
        if not pairs(plan, fault, point):
            continue
        baseline = "baseline" in plan.offers
        found.append(
            Scenario(
                delivery=plan_name,
                fault=fault_name,
                crashpoint=point_name,
                needs=plan.needs | fault.needs | point.needs,
                repeat=plan.repeat,
                catches_naive=plan.resends or (fault.loses_answer and point.after_effect),
                catches_naive_needs=(
                    frozenset()
                    if plan.resends
                    else fault.loses_answer_needs | point.loses_answer_needs
                ),
                effect_possible=fault.effect_possible,
                may_catch_naive=fault.may_lose_answer and point.after_effect,
                quiet="quiet" in fault.offers,
                baseline=baseline,
                resumes_waits="resumes_waits" in plan.offers,
                opt_in=fault.opt_in,
                shares_stack=plan.shares_stack and fault.shares_stack and point.shares_stack,
            )
        )
    # The control case first, then the plain sender's cases, then by plan, fault, crash point.
    return sorted(found, key=lambda s: (not s.is_control, not s.baseline, s.id))


def capabilities(workflow: WorkflowUnderTest, workers: int = 2) -> frozenset[str]:
    """What a workflow (on a stack with ``workers`` workers) offers the plug-ins' needs
    (each one of ``harness.engine.contract.WORKFLOW_CAPABILITIES``)."""
    offered = set()
    if workflow.ledger_state_query is not None:
        offered.add("ledger")
    if numeric(workflow.body_template.get("amount")):
        offered.add("amount")
    if workflow.reconciler is not None:
        offered.add("reconciler")
    if workflow.error_workflow is not None:
        offered.add("error_workflow")
    if workers >= 2:
        offered.add("second_worker")
    if not workflow.acknowledges_early:
        offered.add("sync_answer")  # the sender's answer waits for the work
    if workflow.parks_for_resume:
        offered.add("wait_resume")
    if workflow.sends_idempotency_key:
        offered.add("idempotency_key")
    timeout = workflow.execution_timeout_s
    if timeout is not None and timeout <= STRIKABLE_S:
        offered.add("execution_timeout")  # a longer one cannot strike inside the window
    call_timeout = workflow.call_timeout_s
    if call_timeout is not None and call_timeout < HANG_S:
        offered.add("call_timeout")
    if workflow.answers_after_writes:
        offered.add("answer_after_write")
    # Any workflow can run behind a webhook processor: the suite brings that stack up when
    # the first case that needs it runs (harness.front.plugin's n8n_webhook_stack).
    offered.add("webhook_processor")
    return frozenset(offered)


def expected_for(
    workflow: WorkflowUnderTest, scenario: Scenario, offered: frozenset[str] | None = None
) -> frozenset[Verdict] | None:
    """The verdicts a case may end with, or None if the workflow does not run the scenario.
    ``offered``: the workflow's capabilities, when the caller has them already."""
    control = workflow.negative_control
    if control is not None:
        verdict = control.caught_by.get(scenario.id)
        if verdict is None:
            return PASS if scenario.id in control.passes else None
        return frozenset({Verdict(verdict)})
    if workflow.promise is Promise.EXACTLY_ONCE:
        return PASS
    if workflow.promise is Promise.AT_MOST_ONCE:
        return PASS if scenario.quiet else AT_MOST_ONCE
    offered = capabilities(workflow) if offered is None else offered
    if scenario.catches_naive and scenario.catches_naive_needs <= offered:
        return CAUGHT
    return PASS | CAUGHT if scenario.catches_naive or scenario.may_catch_naive else PASS


def matrix(
    workflows: list[WorkflowUnderTest], repeat: int | None = None, workers: int = 2
) -> list[Case]:
    """Every case of the workflows. ``repeat`` runs each case that many times (default: the
    delivery plan's own count, e.g. 5 for concurrent duplicates)."""
    if repeat is not None and repeat < 1:
        raise ConfigError(f"--repeat {repeat}: give a number of runs >= 1")
    known = scenarios()
    by_id = {s.id: s for s in known}
    cases = []
    for workflow in workflows:
        _check_negative_control(workflow, by_id)
        _check_production_faults(workflow, by_id)
        offered = capabilities(workflow, workers)
        _check_chosen_scenarios(workflow, known, offered)
        parks = workflow.parks_for_resume  # read from the workflow JSON once, not per scenario
        control, opted_in = workflow.negative_control, set(workflow.production_faults)
        for scenario in known:
            expected = expected_for(workflow, scenario, offered)
            if expected is None or not scenario.needs <= offered:
                continue
            if scenario.resumes_waits != parks:
                continue
            if scenario.opt_in and control is None and scenario.fault not in opted_in:
                continue
            if not _chosen(workflow, scenario):
                continue
            runs = repeat or scenario.repeat
            cases += [
                Case(workflow.name, scenario, expected, run_no, runs)
                for run_no in range(1, runs + 1)
            ]
    return cases


_BUILT: dict[tuple[Path, int | None, int], tuple[list[Case], list[WorkflowUnderTest]]] = {}


def matrix_of(
    root: Path,
    repeat: int | None = None,
    workers: int = 2,
    on_warning: Callable[[str], None] | None = None,
) -> tuple[list[Case], list[WorkflowUnderTest]]:
    """The workflows under ``root`` and their matrix, built once per process: `run`'s check
    of its inputs, the plugin's parametrize, its xdist scheduling and its batches all read
    this one (each xdist worker is a process of its own, and builds it once)."""
    key = (root.resolve(), repeat, workers)
    if key not in _BUILT:
        workflows = discover(root, on_warning=on_warning)
        _BUILT[key] = (matrix(workflows, repeat=repeat, workers=workers), workflows)
    return _BUILT[key]


def not_run(workflow: WorkflowUnderTest, workers: int = 2) -> dict[str, list[str]]:
    """The scenarios the workflow would run but for what it does not offer: what gives the
    missing capabilities -> the scenario ids (a workflow's author learns what to add)."""
    offered = capabilities(workflow, workers)
    wanting: dict[str, list[str]] = {}
    for scenario in scenarios():
        missing = sorted(scenario.needs - offered)
        if not missing or expected_for(workflow, scenario, offered) is None:
            continue
        if scenario.resumes_waits != workflow.parks_for_resume or not _chosen(workflow, scenario):
            continue
        if scenario.opt_in and scenario.fault not in workflow.production_faults:
            continue
        given_by = "; ".join(WORKFLOW_CAPABILITIES[need] for need in missing)
        wanting.setdefault(given_by, []).append(scenario.id)
    return wanting


def doubtful_catches(workflow: WorkflowUnderTest, workers: int = 2) -> dict[str, list[str]]:
    """A negative control's ``caught_by`` scenarios that catch a bug only in a workflow that
    offers what this one does not (an answer that waits for the writes the window holds):
    what is missing -> the scenario ids. Its author expects a catch the window cannot give."""
    control = workflow.negative_control
    if control is None:
        return {}
    offered = capabilities(workflow, workers)
    doubtful: dict[str, list[str]] = {}
    for scenario in scenarios():
        missing = sorted(scenario.catches_naive_needs - offered)
        if scenario.id in control.caught_by and missing:
            given_by = "; ".join(WORKFLOW_CAPABILITIES[need] for need in missing)
            doubtful.setdefault(given_by, []).append(scenario.id)
    return doubtful


def _chosen(workflow: WorkflowUnderTest, scenario: Scenario) -> bool:
    """Whether the manifest's ``scenarios`` (globs over ids) keep it; none named: all."""
    return not workflow.scenarios or any(fnmatchcase(scenario.id, g) for g in workflow.scenarios)


def _check_chosen_scenarios(
    workflow: WorkflowUnderTest, known: list[Scenario], offered: frozenset[str]
) -> None:
    runnable = [s.id for s in known if s.needs <= offered]
    for glob in workflow.scenarios:
        if not any(fnmatchcase(scenario_id, glob) for scenario_id in runnable):
            raise ConfigError(
                f"{workflow.directory or workflow.name}/manifest.json: field 'scenarios': "
                f"{glob!r} names no scenario this workflow can run; name an id or a glob "
                "from `n8n-chaos list`, e.g. 'retry-worker_kill-*'"
            )


def _check_production_faults(workflow: WorkflowUnderTest, by_id: dict[str, Scenario]) -> None:
    opt_in = sorted({s.fault for s in by_id.values() if s.opt_in})
    for fault in workflow.production_faults:
        if fault not in opt_in:
            raise ConfigError(
                f"{workflow.directory or workflow.name}/manifest.json: field "
                f"'production_faults': {fault!r} is not an opt-in fault; name one of "
                f"{', '.join(opt_in)}"
            )


def _check_negative_control(workflow: WorkflowUnderTest, by_id: dict[str, Scenario]) -> None:
    control = workflow.negative_control
    if control is None:
        return
    where = f"{workflow.directory or workflow.name}/manifest.json: field 'negative_control'"
    for scenario_id in (*control.caught_by, *control.passes):
        if scenario_id not in by_id:
            raise ConfigError(
                f"{where}: unknown scenario {scenario_id!r}; the scenarios are "
                f"{', '.join(sorted(by_id))} (`n8n-chaos list` shows them)"
            )
        if by_id[scenario_id].resumes_waits != workflow.parks_for_resume:
            why = (
                "it parks at a Wait node (On Webhook Call), and only the plans that call a "
                "resume URL run such a workflow"
                if workflow.parks_for_resume
                else "its plan calls a resume URL, and no Wait node resumes On Webhook Call"
            )
            raise ConfigError(f"{where}: scenario {scenario_id!r} does not run: {why}")
        needs = by_id[scenario_id].needs - capabilities(workflow)
        if needs:
            raise ConfigError(
                f"{where}: scenario {scenario_id!r} needs {', '.join(sorted(needs))}, which "
                "the workflow does not offer (a ledger, an amount field, ...)"
            )
