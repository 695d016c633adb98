"""Internal: One case while it runs: the world the plug-ins act on (stack, fault, sender, journal).

``CaseRun`` implements ``harness.engine.contract.CaseWorld``, the narrow view delivery plans and
crash points get (faults get ``FaultContext``); the runner creates it, drives the phases and
turns what was observed into evidence. Every wait here has a deadline; an
expired one is written to the journal (``deadline.expired``) and returned to the caller.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx
import redis

from harness.engine.contract import Check
from harness.engine.faults import Fault, FaultContext
from harness.engine.journal import Journal
from harness.engine.service_sender import ServiceSender
from harness.engine.settle import (
    Activity,
    Settler,
    SettleResult,
    bull_execution_ids,
    latest_activity,
)
from harness.engine.workload import (
    BackgroundDelivery,
    DeliveryAttempt,
    History,
    Sender,
    SenderPolicy,
)
from harness.errors import ConfigError, HarnessError, SetupError, WindowNotOpened
from harness.stack import n8n_db
from harness.stack.ports import established_to
from harness.stack.stack import PROVIDER_UPSTREAM

if TYPE_CHECKING:
    from fake_providers.payment import ProviderControl
    from harness.matrix.cases import Case
    from harness.stack.stack import Stack
    from harness.stack.toxiproxy import Proxy
    from harness.workflow.deployment import Deployment
    from harness.workflow.manifest import WorkflowUnderTest

HEAL_DEADLINE_S = 240.0  # a heal may restart every n8n process
POLL_S = 0.1


@dataclass
class CaseRun:
    case: Case
    stack: Stack
    workflow: WorkflowUnderTest
    deployment: Deployment
    fault: Fault
    key: str
    body: dict[str, Any]
    journal: Journal = field(default_factory=Journal)
    history: History = field(default_factory=History)
    started_at: float = field(default_factory=time.time)
    # The newest execution id of its workflows before the case: ids come from a sequence, so
    # the case's own executions are the ones after it.
    executions_before: int = 0
    # Deliveries sent with another payload than the original event (the oracle's "changed").
    changed_deliveries: set[str] = field(default_factory=set)
    # The business keys of the cases running beside this one on the stack (its own among
    # them; harness.engine.batch), or None when the case has the stack alone. Beside others, what
    # the case reads of n8n and the provider is narrowed to its own key.
    beside: frozenset[str] | None = None
    # Each process's log size when the case began: what it logged since is the case's.
    log_marks: dict[str, int] = field(default_factory=dict)
    _heal_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _timed_heal: threading.Timer | None = field(default=None, repr=False)
    _timed_heal_done: threading.Event = field(default_factory=threading.Event, repr=False)
    ctx: FaultContext = field(init=False)

    def __post_init__(self) -> None:
        self.ctx = FaultContext(
            self.stack,
            self.journal,
            self.key,
            effect=self.workflow.effect_kind,
            workflow_id=self.deployment.main.id,
            execution_timeout_s=self.workflow.execution_timeout_s,
        )

    # -- what plug-ins may read --------------------------------------------------------
    @property
    def effect(self) -> str:
        return self.ctx.effect

    @property
    def provider(self) -> ProviderControl:
        return self.stack.require_provider().control

    @property
    def ledger_dsn(self) -> str:
        return self.stack.ledger_dsn

    def seed(self) -> None:
        """Write the state the case needs before its event into the fakes (manifest seed):
        set-up, never one of its commits. A seed the fake refuses is the manifest's fault."""
        for index, seed in enumerate(self.workflow.render_seeds(self.key, f"evt-{self.key}")):
            where = f"{seed.method} {seed.upstream}{seed.path}"
            status, body = self.provider.seed(seed.upstream, seed.method, seed.path, seed.body)
            made = _made_id(body)
            self.journal.record("seeded", where, status=status, id=made)
            if status >= 400:
                raise ConfigError(
                    f"{self.workflow.manifest_label}: seed {index} ({where}) was refused by its "
                    f"fake: {status} {str(body)[:300]}; fix seed.{index}.body"
                )

    def write_links(self, worker: int) -> list[Proxy]:
        return [
            self.stack.worker_upstream_proxy(worker, "postgres"),
            self.stack.proxies["ledger_postgres"],
        ]

    @contextmanager
    def keys_expired(self) -> Iterator[None]:
        with self.stack.require_provider().keys_expired():
            yield

    @contextmanager
    def workers_held(self) -> Iterator[bool]:
        if self.beside is not None:
            yield False
            return
        workers = list(self.stack.workers)
        for worker in workers:
            worker.pause()
        self.journal.record("workers.held", "pickup", workers=[w.name for w in workers])
        try:
            yield True
        finally:
            for worker in workers:
                worker.resume()
            self.journal.record("workers.released", "pickup")

    def retry_execution(self, execution_id: str) -> Mapping[str, Any]:
        if self.stack.api is None:
            raise SetupError("n8n's public API is not set up on this stack")
        return self.stack.api.retry_execution(execution_id)

    def attempts(self, delivery: str | None = None) -> list[DeliveryAttempt]:
        return [a for a in self.history.attempts if delivery is None or a.delivery == delivery]

    # -- the sender ------------------------------------------------------------------
    @property
    def webhook_url(self) -> str:
        url = self.deployment.main.webhook_url
        assert url is not None, "a workflow under test is triggered by its webhook"
        return url

    def sender(self, retry: bool = True, attempt_timeout_s: float | None = None) -> Sender:
        request = self.workflow.render_request(self.key, f"evt-{self.key}")
        if attempt_timeout_s is None:  # a synchronous answer comes after the Wait nodes
            attempt_timeout_s = SenderPolicy().attempt_timeout_s + self.workflow.waits_s
        policy = SenderPolicy(retry=retry, attempt_timeout_s=attempt_timeout_s)
        trigger = self.workflow.service_trigger
        if trigger is not None:  # the service's fake sends, to the URL n8n registered
            return ServiceSender(trigger, self.provider, self.webhook_url, self.history, policy)
        return Sender(
            self.webhook_url,
            self.workflow.method,
            self.history,
            policy,
            headers=request.headers,
            query=request.query,
        )

    def heal_before_retry(self, attempt: DeliveryAttempt) -> None:
        """The sender retries once the fault is healed: at once for an open-ended fault, at
        the end of its duration for a timed one (a retry must not cut an outage short)."""
        self.journal.record("delivery.retry", "sender", after_status=attempt.status)
        if self.fault.duration_s is not None:
            self.wait_timed_heal()
        elif self.fault.retry_needs_heal:
            self.heal()
        else:  # e.g. a killed worker restarts while the live one serves the retry
            threading.Thread(target=self._heal_noting_errors, daemon=True).start()

    def deliver(
        self, body: dict[str, Any] | None = None, delivery: str = "d1", retry: bool = True
    ) -> DeliveryAttempt:
        if body is not None and body != self.body:
            self.changed_deliveries.add(delivery)
        return self.sender(retry).deliver(
            self.body if body is None else body, delivery, before_retry=self.heal_before_retry
        )

    def start_delivery(
        self, retry: bool = True, attempt_timeout_s: float | None = None
    ) -> BackgroundDelivery:
        sender = self.sender(retry, attempt_timeout_s)
        return BackgroundDelivery(
            lambda: sender.deliver(self.body, before_retry=self.heal_before_retry)
        )

    def start_concurrent(self, copies: int) -> BackgroundDelivery:
        sender = self.sender()
        return BackgroundDelivery(lambda: sender.deliver_concurrently(self.body, copies))

    def start_work(self, work: Callable[[], object]) -> BackgroundDelivery:
        return BackgroundDelivery(work)

    def call(self, url: str, body: dict[str, Any], delivery: str) -> DeliveryAttempt:
        return Sender(url, "POST", self.history, SenderPolicy(retry=False)).attempt(
            body, delivery, 1
        )

    # -- the fault -------------------------------------------------------------------
    def inject(self) -> None:
        try:
            self.fault.inject(self.ctx)
        except WindowNotOpened as exc:
            # Not a harness error: the case is judged on what happened, with no proof that
            # the fault landed (a violation the ground truth shows still outranks that).
            self.journal.record("window.not_opened", self.fault.name, reason=str(exc))
            return
        if self.fault.duration_s is not None:
            self._timed_heal = threading.Timer(self.fault.duration_s, self._heal_on_timer)
            self._timed_heal.daemon = True
            self._timed_heal.start()

    def wait_timed_heal(self, at_most_s: float | None = None) -> bool:
        """Block until a timed fault's own heal ran (True), or ``at_most_s`` passed (False)."""
        if self._timed_heal is None:
            return True
        limit = (self.fault.duration_s or 0) + HEAL_DEADLINE_S if at_most_s is None else at_most_s
        return self._timed_heal_done.wait(timeout=limit)

    def _heal_on_timer(self) -> None:
        try:
            self.heal()
        finally:
            self._timed_heal_done.set()

    def _heal_noting_errors(self) -> None:
        try:
            self.heal()
        except Exception as exc:  # the case's own final heal tries again and reports
            self.journal.record("harness.error", "background heal", message=str(exc)[:300])

    def heal(self) -> None:
        # Heals come from the case, the sender's retry and a fault's timer: one at a time.
        with self._heal_lock:
            self.fault.heal(self.ctx)

    # -- observation -----------------------------------------------------------------
    def workflow_ids(self) -> list[str]:
        """The workflow, its reconciler, its Error Workflow and the workflows it calls: the
        case waits for them all."""
        return self.deployment.workflow_ids

    def _rows(self, workflow_ids: list[str]) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        mine = None if self.beside is None else self.key  # beside others: its key's only
        for workflow_id in workflow_ids:
            rows += self.stack.executions(workflow_id, mine, self.executions_before)
        return rows

    def failures(self, rows: list[dict[str, Any]]) -> list[str]:
        """What n8n says stopped each failed execution among ``rows`` (its node and error);
        executions that failed alike share one line ("executions 19, 20: ...")."""
        api = self.stack.api
        alike: dict[str, list[str]] = {}
        if api is None:
            return []
        for row in rows:
            if row["status"] in ("error", "crashed"):
                with suppress(HarnessError, httpx.HTTPError):
                    failure = api.node_failure(row["id"])
                    if failure is not None:
                        called = f" (workflow {row['workflow']!r})" if row.get("workflow") else ""
                        alike.setdefault(f"{called}: {failure.line()}", []).append(str(row["id"]))
        return [
            f"execution{'s' if len(ids) > 1 else ''} {', '.join(ids)}{line}"
            for line, ids in alike.items()
        ]

    def executions(self) -> list[dict[str, Any]]:
        """Rows of the executions this case caused of the workflow, its reconciler and its
        Error Workflow (the ones the sender, the operator and the worker log know)."""
        called = self.deployment.called
        return self._rows([w for w in self.workflow_ids() if w not in called])

    def called_executions(self) -> list[dict[str, Any]]:
        """Rows of the executions of the workflows it calls (sub-workflows run inside their
        caller's execution, on its worker), each with the called workflow's name."""
        called = self.deployment.called
        return [{**row, "workflow": called[wid]} for wid in called for row in self._rows([wid])]

    def all_executions(self) -> list[dict[str, Any]]:
        """``executions()`` and ``called_executions()``, oldest first."""
        return sorted([*self.executions(), *self.called_executions()], key=lambda r: int(r["id"]))

    def wait_for(
        self, what: str, probe: Check, deadline_s: float, give_up: Check | None = None
    ) -> bool:
        """Poll ``probe`` until true (True), or until ``give_up`` says it never will, or the
        deadline passes (False; both journaled)."""
        start = time.monotonic()
        while True:
            if probe():
                return True
            if give_up is not None and give_up():
                self.journal.record(
                    "wait.abandoned", what, after_s=round(time.monotonic() - start, 2)
                )
                return False
            if time.monotonic() - start >= deadline_s:
                self.journal.record("deadline.expired", what, deadline_s=deadline_s)
                return False
            time.sleep(POLL_S)

    def work_over(self, delivery: BackgroundDelivery | None = None) -> bool:
        """Nothing more will come of this case's work: the sender is done, executions exist
        and none of them is new or running (a quick look; ``settle`` is the careful one)."""
        if delivery is not None and not delivery.done:
            return False
        rows = self.executions()
        return bool(rows) and all(r["status"] not in ("new", "running", "waiting") for r in rows)

    def wait_running_execution(self, deadline_s: float, give_up: Check) -> str | None:
        found: list[str] = []

        def probe() -> bool:
            found[:] = [e["id"] for e in self.executions() if e["status"] == "running"]
            return bool(found)

        ok = self.wait_for("the case's execution to be running", probe, deadline_s, give_up)
        return found[-1] if ok else None

    def find_target(self, execution_id: str, deadline_s: float = 30.0) -> int | None:
        found: list[int] = []

        def probe() -> bool:
            worker = self.stack.worker_running(execution_id)
            if worker is not None:
                found.append(worker)
            return worker is not None

        if not self.wait_for(f"the worker running execution {execution_id}", probe, deadline_s):
            return None
        worker = self._holding_worker(found[0])
        self.ctx.target_worker = worker
        # By process name, as the faults name it (a slot's process changes as spares take over).
        name = self.stack.workers[worker].name
        self.journal.record("crashpoint.target", "worker", worker=name, execution=execution_id)
        return worker

    def _holding_worker(self, running_it: int) -> int:
        """The worker whose request the provider holds. With several of the case's executions
        running on different workers (two parked executions resumed at once), the newest one
        need not be the one at the provider: the one worker with a connection open on its
        provider link (the kernel's socket table) is. Otherwise ``running_it``."""
        running = [e["id"] for e in self.executions() if e["status"] == "running"]
        workers = {w for w in map(self.stack.worker_running, running) if w is not None}
        if len(workers) < 2:
            return running_it
        names = {w: f"{self.stack.workers[w].name}_{PROVIDER_UPSTREAM}" for w in workers}
        ports = {w: self.stack.listen_ports.get(name) for w, name in names.items()}
        talking = [w for w, port in ports.items() if port is not None and established_to(port)]
        if len(talking) != 1:
            return running_it
        if talking[0] != running_it:
            named = self.stack.workers
            self.journal.record(
                "crashpoint.target.connection",
                "worker",
                worker=named[talking[0]].name,
                instead_of=named[running_it].name,
            )
        return talking[0]

    def ledger_state(self) -> str | None:
        query = self.workflow.ledger_state_query
        if query is None:
            return None
        rows = n8n_db.query(self.stack.ledger_dsn, query, {"key": self.key})
        return None if not rows else str(next(iter(rows[0].values())))

    def queued_executions(self) -> set[str]:
        """Execution ids that still have a job in n8n's Bull queue (in Redis)."""
        with redis.Redis.from_url(self.stack.redis_url) as client:
            return bull_execution_ids(client, f"bull-{self.stack.run.run_id}")

    def activity(self) -> Activity:
        control = self.stack.require_provider().control
        attempts = [
            a
            for a in control.attempts(since=self.started_at - 1)
            # beside others: theirs are theirs (a request without a reference counts for all)
            if (self.beside is None or a.reference in (None, "", self.key))
        ]
        top, called = self.executions(), self.called_executions()
        queued = self.queued_executions()
        if any(r["id"] in queued for r in top):
            # A sub-execution runs inside its caller's job: while Bull holds that job, the
            # sub-execution is live too (once it is gone, an unfinished one is orphaned).
            queued |= {r["id"] for r in called}
        return Activity(
            executions=[*top, *called],
            queued=queued,
            provider_busy=any(str(a.outcome) == "in_flight" for a in attempts),
            provider_last=latest_activity(
                t for a in attempts for t in (a.received_at, a.finished_at)
            ),
            ledger_state=self.ledger_state(),
        )

    def settle(self, deadline_s: float, why: str) -> SettleResult:
        """Wait until the case is quiet (see harness.engine.settle); an expiry is journaled."""
        expect = any(a.status is not None for a in self.history.attempts)
        result = Settler(self.activity, expect_executions=expect).wait(deadline_s)
        if result.orphaned:
            self.journal.record(
                "finding",
                "execution left live without a job",
                executions=result.orphaned,
                note="n8n's row says new/running but Bull holds no job for it",
            )
        if not result.settled:
            self.journal.record(
                "deadline.expired", f"settle ({why})", deadline_s=deadline_s, live=result.live
            )
        else:
            self.journal.record("settled", why, waited_s=round(result.waited_s, 2))
        return result


def _made_id(answer: Any) -> Any:
    """The id a seed's answer names: top level, or inside the `data` envelope some APIs use
    (Pipedrive's `{"success": true, "data": {...}}`)."""
    if isinstance(answer, dict) and isinstance(answer.get("data"), dict):
        answer = answer["data"]
    return answer.get("id") if isinstance(answer, dict) else None
