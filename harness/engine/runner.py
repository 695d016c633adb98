"""Run one case end to end, in phases: prepare, deliver (the crash point strikes meanwhile),
await the fault, heal, settle, later deliveries, reconcile, collect, judge.

Data flows one way: case -> stack + fault -> workload -> ledgers -> oracle -> evidence on
disk. The evidence file is rewritten at every phase and the history is appended as it
happens, so a harness that dies mid-case still leaves what happened. The engine never
branches on a fault's kind: the plug-ins carry their own behaviour and proofs.
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager, suppress
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import httpx
import psycopg

from harness import loopback
from harness.engine.case_run import CaseRun
from harness.engine.crashpoints import CrashPoint, get_crashpoint
from harness.engine.deliveries import DeliveryPlan, get_delivery
from harness.engine.faults import get_fault
from harness.engine.settle import SettleResult
from harness.engine.workload import DeliveryAttempt
from harness.errors import CaseAborted
from harness.judge.oracle import (
    UNRESOLVED_LEDGER_STATES,
    AttemptRow,
    CommitRow,
    Evidence,
    Judgement,
    Proof,
    judge,
)
from harness.workflow.deployment import route_upstreams
from harness.workflow.manifest import case_key

if TYPE_CHECKING:
    from fake_providers.payment import Commit
    from harness.matrix.cases import Case
    from harness.stack.intercept.journal import JournalEntry
    from harness.stack.stack import Stack
    from harness.workflow.deployment import Deployment, route_upstreams
    from harness.workflow.manifest import WorkflowUnderTest

DELIVERY_S = 300.0  # the sender's own attempts (6 x 30 s + pacing) end well before
FAULT_MEET_S = 60.0  # a planted fault waits this long for the effect request to meet it
SETTLE_S = 90.0
RECONCILER_TIMEOUT_S = 60.0
# What main (or the webhook processor) logs when the stall sweep fails an execution's job.
STALL_LINE = re.compile(r"job stalled more than maxStalledCount \(execution (\d+)\)")


@dataclass(frozen=True)
class CaseResult:
    case_id: str
    judgement: Judgement
    evidence: Evidence
    evidence_path: Path


class PhaseObserver(Protocol):
    """Watches a case's phases as they happen (the terminal's live line, Allure's steps).
    ``phase`` is entered when the phase starts and exited when it ends; an exception in the
    phase passes through it."""

    def phase(self, case_id: str, name: str) -> AbstractContextManager[object]: ...


@dataclass
class CaseRecord:
    """The case's evidence on disk, kept current phase by phase."""

    directory: Path
    doc: dict[str, Any]
    phases: list[dict[str, Any]] = field(default_factory=list)
    # What the case has seen so far (journal, history), merged into every write.
    snapshot: Callable[[], dict[str, Any]] = dict
    observers: Sequence[PhaseObserver] = ()

    @property
    def path(self) -> Path:
        return self.directory / "evidence.json"

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        entry: dict[str, Any] = {"name": name, "started_at": time.time(), "ended_at": None}
        self.phases.append(entry)
        self.write()
        with ExitStack() as watching:
            for observer in self.observers:
                watching.enter_context(observer.phase(str(self.doc.get("case")), name))
            try:
                yield
            finally:
                entry["ended_at"] = time.time()
                self.write()

    def attempt(self, attempt: DeliveryAttempt) -> None:
        with (self.directory / "history.jsonl").open("a") as out:
            out.write(json.dumps(attempt.to_json()) + "\n")

    def write(self, **more: Any) -> None:
        self.doc.update(self.snapshot(), phases=self.phases)
        self.doc.update(more)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.doc, indent=2, default=str) + "\n")
        tmp.replace(self.path)


def reset_stack(stack: Stack) -> None:
    """Undo whatever an earlier case may have left: toxics, links, processes, provider plan."""
    stack.reset_links()
    stack.revive()
    provider = stack.require_provider()
    provider.control.clear_faults()
    provider.restore_ttl()


def run_case(
    case: Case,
    stack: Stack,
    workflow: WorkflowUnderTest,
    deployment: Deployment,
    observers: Sequence[PhaseObserver] = (),
    key: str | None = None,
    beside: frozenset[str] | None = None,
) -> CaseResult:
    """``beside``: the keys of the cases running together with this one (``key`` among
    them; harness.engine.batch), which reset and route the stack once for all: a case beside others
    neither resets the stack nor reads their executions, attempts or commits."""
    if beside is None:
        reset_stack(stack)
        route_upstreams(stack, workflow)
    key = key or case_key(case.id)
    plan = get_delivery(case.delivery)
    point = get_crashpoint(case.crashpoint)
    run = CaseRun(
        case=case,
        stack=stack,
        workflow=workflow,
        deployment=deployment,
        fault=get_fault(case.fault),
        key=key,
        body=workflow.render_body(key=key, event_id=f"evt-{key}"),
        beside=beside,
    )
    run.executions_before = stack.newest_execution_id()
    case_dir = stack.run.run_dir / "cases" / case.id
    case_dir.mkdir(parents=True, exist_ok=True)
    (case_dir / "history.jsonl").unlink(missing_ok=True)
    record = CaseRecord(
        case_dir,
        _header(case, key) | {"workflow_sha256": workflow.file_sha256},
        observers=observers,
    )
    run.history.sink = record.attempt
    record.snapshot = lambda: {"journal": run.journal.to_json(), "history": run.history.to_json()}
    run.log_marks = {p.name: p.log_size() for p in stack.processes}
    failure: BaseException | None = None
    settled = SettleResult(settled=False, waited_s=0.0)
    try:
        _deliver(run, plan, point, record)
        settled = _aftermath(run, plan, record)
    except BaseException as exc:  # re-raised below, once the evidence is on disk
        failure = exc
        run.journal.record("harness.error", type(exc).__name__, message=str(exc)[:500])
        with suppress(Exception):
            run.heal()
            if beside is None:
                reset_stack(stack)
    with record.phase("collect"):
        intercepted = _intercepted(run)  # read once: the verdict and the file use it
        evidence = collect(run, plan, point, settled, intercepted)
        judgement = judge(evidence)
    _finish(record, run, evidence, judgement, run.log_marks, intercepted)
    if failure is not None and not isinstance(failure, KeyboardInterrupt):
        # The terminal, the report and this file say the same: no verdict, a harness error
        # (what the oracle made of what was seen is kept beside it).
        record.write(
            verdict=None,
            explanation=f"harness error: {failure}",
            harness_error=f"{type(failure).__name__}: {failure}",
            seen=judgement.verdict.value,
            seen_explanation=judgement.explanation,
        )
    if isinstance(failure, KeyboardInterrupt):
        raise failure  # Ctrl-C ends the run, not just this case (its evidence is on disk)
    if failure is not None:
        raise CaseAborted(
            f"case {case.id} did not complete ({failure}); evidence kept in {record.path}"
        ) from failure
    return CaseResult(case.id, judgement, evidence, record.path)


def _deliver(run: CaseRun, plan: DeliveryPlan, point: CrashPoint, record: CaseRecord) -> None:
    with record.phase("prepare"):
        run.seed()
        run.fault.prepare(run.ctx)
    try:
        point.arm(run)
        with record.phase("deliver"):
            delivery = plan.start(run)
            with record.phase("strike"):
                point.strike(run, delivery)
    finally:
        # Holds end with the strike: the sender's retries must find the links open again.
        point.disarm(run)
    with record.phase("await answer"):
        if not delivery.join(DELIVERY_S):
            run.journal.record("deadline.expired", "the first delivery", deadline_s=DELIVERY_S)


def _aftermath(run: CaseRun, plan: DeliveryPlan, record: CaseRecord) -> SettleResult:
    with record.phase("await fault"):
        # An acknowledge-first workflow answered before its effect: the planted fault stays
        # until the effect request met it, or the work is over without meeting it.
        run.wait_for(
            "the fault to meet the effect request",
            lambda: run.fault.met(run.ctx),
            FAULT_MEET_S,
            give_up=run.work_over,
        )
    with record.phase("heal"):
        run.heal()
        if not run.wait_timed_heal():
            run.journal.record("deadline.expired", "the timed fault's own heal")
        if run.beside is None:  # beside others: its fault touched only its own reference
            reset_stack(run.stack)
    # A workflow's Wait nodes hold every execution by design: the deadline grows by them.
    deadline_s = SETTLE_S + run.workflow.waits_s
    with record.phase("settle"):
        settled = run.settle(deadline_s, "first delivery")
    with record.phase("later deliveries"):
        if plan.after_settle(run):
            settled = run.settle(deadline_s, "later deliveries")
    if run.deployment.reconciler is not None and run.workflow.reconciler is not None:
        with record.phase("reconcile"):
            _reconcile(run)
            settled = run.settle(deadline_s, "reconciler")
    return settled


def _reconcile(run: CaseRun) -> None:
    """Run the workflow's reconciler once, as an operator's scheduled job would."""
    spec, deployed = run.workflow.reconciler, run.deployment.reconciler
    assert spec is not None and deployed is not None and deployed.webhook_url is not None
    request = spec.render_request(key=run.key, event_id=f"evt-{run.key}")
    try:
        answer = loopback.request(
            spec.method,
            deployed.webhook_url,
            json=request.body,
            headers=request.headers,
            params=request.query,
            timeout=RECONCILER_TIMEOUT_S,
        )
        run.journal.record(
            "reconciler.run", deployed.name, status=answer.status_code, body=answer.text[:300]
        )
    except httpx.HTTPError as exc:
        run.journal.record("reconciler.run", deployed.name, error=f"{type(exc).__name__}: {exc}")


def _commit_row(c: Commit) -> CommitRow:
    return CommitRow(
        c.effect_id, c.attempt_no, c.committed_at, c.idempotency_key, c.reference, str(c.effect)
    )


def _effect_id(attempt: DeliveryAttempt, workflow: WorkflowUnderTest) -> str | None:
    if attempt.outcome != "ok":
        return None
    try:
        return workflow.effect_id_in(json.loads(attempt.detail))
    except ValueError:
        return None


def collect(
    run: CaseRun,
    plan: DeliveryPlan,
    point: CrashPoint,
    settled: SettleResult,
    intercepted: Sequence[JournalEntry] = (),
) -> Evidence:
    wut = run.workflow
    rows = run.all_executions()
    control = run.stack.require_provider().control
    effect = wut.effect_kind  # "" for a workflow judged through its upstreams' fakes
    in_window = [c for c in control.commits() if c.committed_at >= run.started_at]
    mine = [
        c for c in in_window if c.reference == run.key and (not effect or str(c.effect) == effect)
    ]
    # Beside others, their commits are theirs (a stray is a reference none of them has).
    theirs = (run.beside or frozenset()) - {run.key}
    stray = [c for c in in_window if c not in mine and c.reference not in theirs]
    attempts = control.attempts(reference=run.key)
    proofs = [
        Proof("delivery", plan.name, *_held(plan.proof())),
        Proof("fault", run.fault.name, *_held(run.fault.proof(run.ctx))),
        Proof("crashpoint", point.name, *_held(point.proof())),
        *_unprovoked_stalls(run, {e["id"] for e in rows}),
    ]
    effect_possible = run.fault.effect_possible
    return Evidence(
        key=run.key,
        promise=str(wut.promise),
        effect=effect,
        commits=[_commit_row(c) for c in mine],
        attempts=[
            AttemptRow(
                a.delivery,
                a.outcome,
                a.status,
                _effect_id(a, wut),
                changed_payload=a.delivery in run.changed_deliveries,
            )
            for a in run.history.attempts
        ],
        proofs=proofs,
        stray_commits=[_commit_row(c) for c in stray],
        acknowledges_early=wut.acknowledges_early,
        effects_per_event=wut.effects_per_event,
        updated_effects=sorted(
            {
                str(a.effect_id)
                for a in attempts
                if str(a.outcome) == "processed" and a.effect_id in {c.effect_id for c in mine}
            }
        ),
        declined=any(str(a.outcome) == "declined_402" for a in attempts),
        rejections=sorted(
            {
                f"{a.http_status} {a.detail or ''}".strip()
                for a in attempts
                if a.outcome == "rejected_4xx"
            }
        ),
        effect_possible=effect_possible,
        ledger_state=run.ledger_state(),
        ledger_done_state=wut.ledger_done_state,
        ledger_unknown_states=sorted(wut.ledger_unknown_states or UNRESOLVED_LEDGER_STATES),
        ledger_failed_states=sorted(wut.ledger_failed_states),
        error_workflow_runs=_error_runs(run) if not effect_possible else None,
        settled=settled.settled,
        live_executions=settled.live,
        execution_ids=[e["id"] for e in rows],
        node_failures=run.failures(rows),
        control=run.case.scenario.is_control,
        refused_requests=[
            f"{e.method} {e.scheme}://{e.host}{e.path} (by {e.listener})"
            for e in intercepted
            if e.outcome != "forwarded" and e.outcome != "loopback"
        ],
    )


def _intercepted(run: CaseRun) -> list[JournalEntry]:
    """The requests of n8n's processes the intercepting proxy saw during the case."""
    if run.stack.intercept is None:
        return []
    return [e for e in run.stack.intercept.journal() if e.time >= run.started_at]


def _unprovoked_stalls(run: CaseRun, execution_ids: set[str]) -> list[Proof]:
    """A proof that fails when n8n's stall sweep failed one of the case's executions that the
    fault did not strike: the stack was starved of CPU (a lock renewal came too late), so
    what followed is not the case's scenario. None otherwise. A fault that does not say
    which executions it struck (``FaultContext.struck_executions``) is not checked."""
    # A fault that touches no process or link strikes nothing.
    struck = set() if run.fault.shares_stack else run.ctx.struck_executions
    if struck is None:
        return []
    logs = (
        proc.process.log_since(run.log_marks.get(proc.process.name, 0))
        for proc in run.stack.n8n_processes
    )
    found = {m.group(1) for log in logs for m in STALL_LINE.finditer(log)}
    stalled = sorted((found & execution_ids) - struck, key=int)
    if not stalled:
        return []
    fact = (
        f"n8n's stall sweep failed execution(s) {', '.join(stalled)}, which fault "
        f"{run.fault.name} did not strike: the stack was starved of CPU, not faulted"
    )
    return [Proof("stack", "unprovoked stall", False, fact)]


def set_aside(case_dir: Path, try_no: int) -> Path:
    """Move a try's evidence to ``<case>.try<k>`` so the next try starts from an empty folder."""
    kept = case_dir.with_name(f"{case_dir.name}.try{try_no}")
    shutil.rmtree(kept, ignore_errors=True)  # an earlier run's leftover in a reused run folder
    case_dir.rename(kept)
    return kept


def _held(fact: str | None) -> tuple[bool, str]:
    return (True, fact) if fact is not None else (False, "no outside fact shows it landed")


def _error_runs(run: CaseRun) -> int | None:
    spec = run.workflow.error_workflow
    if spec is None:
        return None
    with psycopg.connect(run.stack.ledger_dsn) as conn:
        row = conn.execute(spec.runs_query.encode(), {"key": run.key}).fetchone()
    return int(row[0]) if row is not None and row[0] is not None else 0


@functools.cache
def _judged_by() -> dict[str, str]:
    """Which copy of the harness ran the case: its folder and, in a git checkout, its commit
    (a trial's evidence could not say which of two checkouts had judged it)."""
    root = Path(__file__).resolve().parents[2]
    commit = ""
    with suppress(OSError, subprocess.SubprocessError):
        done = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
        commit = done.stdout.strip() if done.returncode == 0 else ""
    return {"path": str(root), "commit": commit}


def _header(case: Case, key: str) -> dict[str, Any]:
    return {
        "harness": _judged_by(),
        "case": case.id,
        "workflow": case.workflow,
        "delivery": case.delivery,
        "fault": case.fault,
        "crashpoint": case.crashpoint,
        "run": case.run_no,
        "key": key,
        "expected": sorted(v.value for v in case.expected),
        "started_at": time.time(),
    }


def _finish(
    record: CaseRecord,
    run: CaseRun,
    evidence: Evidence,
    judgement: Judgement,
    log_marks: dict[str, int],
    intercepted: Sequence[JournalEntry],
) -> None:
    """Write everything a failed case needs to be understood (and re-judged offline)."""
    control = run.stack.require_provider().control
    logs = record.directory / "logs"
    logs.mkdir(exist_ok=True)
    for proc in run.stack.processes:
        (logs / f"{proc.name}.log").write_text(proc.log_since(log_marks.get(proc.name, 0)))
    record.write(
        verdict=judgement.verdict.value,
        explanation=judgement.explanation,
        ended_at=time.time(),
        evidence=evidence.to_json(),
        history=run.history.to_json(),
        journal=run.journal.to_json(),
        intercepted=[asdict(e) for e in intercepted],
        # The case's reference, and every other attempt of its window (a stray commit's,
        # with where its reference was read and what was there).
        provider_attempts=[
            a.__dict__ | {"outcome": str(a.outcome)}
            for a in control.attempts(since=run.started_at - 1)  # the key is the case's own
            if a.reference == run.key or a.received_at >= run.started_at
        ],
        executions=run.all_executions(),
    )
