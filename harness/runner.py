"""Run one case: reset, drive the crash point (which injects the fault), heal, settle,
collect the evidence, judge it. Data flows one way: case -> stack + fault -> workload ->
ledgers -> oracle -> evidence on disk (the report reads that)."""

from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg

from harness.errors import HarnessError, ServiceStartTimeout
from harness.faults import Fault, FaultContext
from harness.journal import Journal
from harness.oracle import UNRESOLVED_LEDGER_STATES, CommitRow, Evidence, Judgement, judge
from harness.stack.readiness import Readiness, wait_ready
from harness.workload import (
    BackgroundDelivery,
    Delivery,
    DeliveryAttempt,
    History,
    Sender,
    SenderPolicy,
)

if TYPE_CHECKING:
    from harness.cases import Case
    from harness.manifest import WorkflowUnderTest
    from harness.stack.deploy import DeployedWorkflow
    from harness.stack.stack import Stack

SETTLE_DEADLINE_S = 120.0
EXECUTION_SETTLE_S = 45.0
HEAL_DEADLINE_S = 240.0  # a heal may restart every n8n process


@dataclass
class CaseRun:
    """Everything a crash point needs while it drives one case."""

    case: Case
    stack: Stack
    workflow: WorkflowUnderTest
    deployed: DeployedWorkflow
    fault: Fault
    key: str
    body: dict[str, Any]
    journal: Journal = field(default_factory=Journal)
    history: History = field(default_factory=History)
    known_executions: set[str] = field(default_factory=set)
    _heal_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _timed_heal_started: threading.Event = field(default_factory=threading.Event, repr=False)
    _timed_heal_done: threading.Event = field(default_factory=threading.Event, repr=False)
    ctx: FaultContext = field(init=False)

    def __post_init__(self) -> None:
        self.ctx = FaultContext(self.stack, self.journal, self.key)

    # -- delivery --------------------------------------------------------------------
    def sender(self, retry: bool | None = None) -> Sender:
        """The event's sender; it retries what is not definite unless the case says no."""
        assert self.deployed.webhook_url is not None
        if retry is None:
            retry = self.fault.delivery is not Delivery.OPERATOR_RETRY
        return Sender(
            self.deployed.webhook_url, self.workflow.method, self.history, SenderPolicy(retry=retry)
        )

    def heal_before_retry(self, attempt: DeliveryAttempt) -> None:
        """The sender retries once the fault is healed: at once for an open-ended fault, at
        the end of its duration for a timed one (a retry must not cut an outage short)."""
        self.journal.record("delivery.retry", "sender", after_status=attempt.status)
        if self.fault.duration_s is None:
            self.heal()
        else:
            self.wait_timed_heal()

    def deliver(self) -> DeliveryAttempt:
        return self.sender().deliver(self.body, before_retry=self.heal_before_retry)

    def start_delivery(self) -> BackgroundDelivery:
        return BackgroundDelivery(self.sender(), self.body, before_retry=self.heal_before_retry)

    def finish(self, delivery: BackgroundDelivery) -> None:
        delivery.join(timeout_s=600)

    # -- fault -----------------------------------------------------------------------
    def inject(self) -> None:
        self.fault.inject(self.ctx)
        if self.fault.duration_s is not None:
            self._timed_heal_started.set()
            timer = threading.Timer(self.fault.duration_s, self._timed_heal)
            timer.daemon = True
            timer.start()

    def wait_timed_heal(self) -> None:
        """Block until a timed fault's own heal ran (no-op for other faults)."""
        if self._timed_heal_started.is_set():
            self._timed_heal_done.wait(timeout=(self.fault.duration_s or 0) + HEAL_DEADLINE_S)

    def _timed_heal(self) -> None:
        try:
            self.heal()
        finally:
            self._timed_heal_done.set()

    def heal(self) -> None:
        # Heals come from the case, the sender's retry and a fault's timer: one at a time.
        with self._heal_lock:
            self.fault.heal(self.ctx)

    # -- observation -----------------------------------------------------------------
    def new_executions(self) -> list[dict[str, Any]]:
        return [
            e
            for e in self.stack.executions(self.deployed.id)
            if e["id"] not in self.known_executions
        ]

    def wait_running_execution(self, deadline_s: float = 60.0) -> str:
        found: list[str] = []

        def probe() -> bool:
            running = [e["id"] for e in self.new_executions() if e["status"] == "running"]
            found[:] = running
            return bool(running)

        wait_ready(Readiness("the case's execution to be running", probe), deadline_s)
        return found[-1]

    def find_target(self, execution_id: str, deadline_s: float = 30.0) -> int:
        found: list[int] = []

        def probe() -> bool:
            worker = self.stack.worker_running(execution_id)
            if worker is not None:
                found.append(worker)
            return worker is not None

        wait_ready(Readiness(f"the worker running execution {execution_id}", probe), deadline_s)
        self.ctx.target_worker = found[0]
        self.journal.record("crashpoint.target", "worker", worker=found[0], execution=execution_id)
        return found[0]

    def ledger_state(self) -> str | None:
        query = self.workflow.ledger_state_query
        if query is None:
            return None
        with psycopg.connect(self.stack.ledger_dsn) as conn:
            row = conn.execute(query.encode(), {"key": self.key}).fetchone()
        return None if row is None else str(row[0])

    def settle(self) -> None:
        """Wait until nothing of this case is in flight at the provider (a harness error if
        that never happens), then until n8n has finished its executions: one that is still
        new/running after the deadline is what n8n does, recorded as a finding."""
        control = self.stack.require_provider().control

        def provider_quiet() -> bool:
            attempts = control.attempts(reference=self.key)
            return not [a for a in attempts if a.outcome == "in_flight"]

        def n8n_quiet() -> bool:
            return not self.stuck_executions()

        wait_ready(
            Readiness("the provider to finish the case's requests", provider_quiet),
            SETTLE_DEADLINE_S,
        )
        try:
            wait_ready(
                Readiness("n8n to finish the case's executions", n8n_quiet), EXECUTION_SETTLE_S
            )
        except ServiceStartTimeout:
            self.journal.record(
                "finding",
                "execution never finished",
                executions=self.stuck_executions(),
                note=f"still new/running {EXECUTION_SETTLE_S:.0f} s after the faults healed",
            )

    def stuck_executions(self) -> list[str]:
        return [e["id"] for e in self.new_executions() if e["status"] in ("new", "running")]


@dataclass(frozen=True)
class CaseResult:
    case_id: str
    judgement: Judgement
    evidence: Evidence
    evidence_path: Path


def new_key(case_id: str) -> str:
    return f"{case_id[:40]}-{uuid.uuid4().hex[:10]}"


def reset_stack(stack: Stack) -> None:
    """Undo whatever an earlier case may have left: toxics, links, processes, provider plan."""
    stack.toxiproxy.reset()
    stack.revive()
    provider = stack.require_provider()
    provider.control.clear_faults()
    provider.restore_ttl()


def run_case(
    case: Case, stack: Stack, workflow: WorkflowUnderTest, deployed: DeployedWorkflow
) -> CaseResult:
    from harness.crashpoints import get_crashpoint

    reset_stack(stack)
    key = new_key(case.id)
    run = CaseRun(
        case=case,
        stack=stack,
        workflow=workflow,
        deployed=deployed,
        fault=case.make_fault(),
        key=key,
        body=workflow.render_body(key=key, event_id=f"evt-{key}"),
    )
    run.known_executions = {e["id"] for e in stack.executions(deployed.id)}
    log_marks = {p.name: p.log_size() for p in stack.processes}
    case_dir = stack.run.run_dir / "cases" / case.id
    case_dir.mkdir(parents=True, exist_ok=True)
    started = time.time()
    failure: BaseException | None = None
    proof: str | None = None
    try:
        get_crashpoint(case.crashpoint).drive(run)
    except BaseException as exc:  # re-raised below, once the evidence is on disk
        failure = exc
        run.journal.record("harness.error", type(exc).__name__, message=str(exc)[:500])
    finally:
        # Before healing: a heal clears the provider's fault plan, part of the proof.
        proof = run.fault.proof(run.ctx)
        run.heal()
        reset_stack(stack)
        try:
            run.settle()
        except Exception as exc:
            failure = failure or exc
            run.journal.record("harness.error", "settle", message=str(exc)[:500])
    evidence = collect(run, proof)
    judgement = judge(evidence)
    path = save(case_dir, run, evidence, judgement, started, log_marks)
    if failure is not None:
        raise CaseAborted(
            f"case {case.id} did not complete ({failure}); evidence kept in {path}"
        ) from failure
    return CaseResult(case.id, judgement, evidence, path)


class CaseAborted(HarnessError):
    """The case could not be driven to its end; its evidence is on disk all the same."""


def collect(run: CaseRun, proof: str | None) -> Evidence:
    control = run.stack.require_provider().control
    commits = control.commits(reference=run.key)
    crash_proof = [e for e in run.journal.entries if e.kind == "crashpoint.landed"]
    landed = proof is not None and (run.case.crashpoint in ("none",) or bool(crash_proof))
    attempts = run.history.attempts
    return Evidence(
        key=run.key,
        commits=[
            CommitRow(c.effect_id, c.attempt_no, c.committed_at, c.idempotency_key) for c in commits
        ],
        acknowledged=run.history.acknowledged,
        attempts_ok=sum(a.outcome == "ok" for a in attempts),
        attempts_info=sum(a.outcome == "info" for a in attempts),
        attempts_fail=sum(a.outcome == "fail" for a in attempts),
        ledger_state=run.ledger_state(),
        ledger_unresolved_states=sorted(
            run.workflow.ledger_unknown_states or UNRESOLVED_LEDGER_STATES
        ),
        fault_landed=landed,
        landing_proof="; ".join(filter(None, [proof, *(str(e.data) for e in crash_proof)]))
        or "no journal entry proves the fault landed in its window",
        execution_ids=[e["id"] for e in run.new_executions()],
    )


def save(
    case_dir: Path,
    run: CaseRun,
    evidence: Evidence,
    judgement: Judgement,
    started: float,
    log_marks: dict[str, int],
) -> Path:
    """Write everything a failed case needs to be understood (and re-judged offline)."""
    control = run.stack.require_provider().control
    doc = {
        "case": run.case.id,
        "workflow": run.workflow.name,
        "fault": run.case.fault,
        "crashpoint": run.case.crashpoint,
        "expected": sorted(v.value for v in run.case.expected),
        "verdict": judgement.verdict.value,
        "explanation": judgement.explanation,
        "started_at": started,
        "ended_at": time.time(),
        "evidence": evidence.to_json(),
        "history": run.history.to_json(),
        "journal": run.journal.to_json(),
        "provider_attempts": [
            a.__dict__ | {"outcome": str(a.outcome)} for a in control.attempts(reference=run.key)
        ],
        "executions": run.new_executions(),
    }
    path = case_dir / "evidence.json"
    path.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    logs = case_dir / "logs"
    logs.mkdir(exist_ok=True)
    for proc in run.stack.processes:
        (logs / f"{proc.name}.log").write_text(proc.log_since(log_marks.get(proc.name, 0)))
    return path
