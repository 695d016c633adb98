"""What a probe sees and does on a running stack: a timeline, the sender, waits with a
deadline, n8n's execution rows (sampled in the background, so every state a row passes
through is seen), Bull's job states in Redis, the n8n processes' log lines and the
provider's commits and attempts for the probe's reference."""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg
import redis

from harness import loopback
from harness.errors import HarnessError
from harness.findings.evidence import sender_seen
from harness.stack import n8n_db

if TYPE_CHECKING:
    from fake_providers.payment import ProviderControl
    from harness.stack.deploy import DeployedWorkflow
    from harness.stack.n8n import N8nProcess
    from harness.stack.stack import Stack
    from harness.stack.toxiproxy import Proxy

POLL_S = 0.1
LOG_LINES_PER_PROCESS = 40
LOG_LINE_CHARS = 300
# The statuses n8n finishes an execution's row in.
FINISHED = ("success", "error", "crashed", "canceled")
# The log lines by which a worker says it took up and ended an execution.
WORKER_LINES = ("Worker started execution", "Worker finished execution")
T = TypeVar("T")


@dataclass
class Timeline:
    """Events in seconds since the probe began (wall-clock start kept for the report)."""

    started_at: float = field(default_factory=time.time)
    _t0: float = field(default_factory=time.monotonic)
    events: list[dict[str, Any]] = field(default_factory=list)

    def now(self) -> float:
        return round(time.monotonic() - self._t0, 3)

    def record(self, event: str, **detail: Any) -> float:
        at = self.now()
        self.events.append({"t": at, "event": event, **detail})
        return at


class Sender:
    """One webhook delivery in the background: what the sender saw, and when."""

    def __init__(self, timeline: Timeline, url: str, body: dict[str, Any], timeout_s: float):
        self.timeline, self.timeout_s = timeline, timeout_s
        self.result: dict[str, Any] = {"url": url, "sent_at": timeline.now()}
        self._thread = threading.Thread(
            target=self._send, args=(url, body, timeout_s), daemon=True, name="probe-sender"
        )
        self._thread.start()

    def _send(self, url: str, body: dict[str, Any], timeout_s: float) -> None:
        try:
            response = loopback.post(url, json=body, timeout=timeout_s)
            self.result |= {"status": response.status_code, "body": response.text[:300]}
        except Exception as exc:  # the sender's view of a failure is evidence, never raised
            self.result |= {"status": None, "error": f"{type(exc).__name__}: {exc}"[:300]}
        self.result["answered_at"] = self.timeline.now()
        self.timeline.record("sender answered", status=self.result.get("status"))

    def done(self) -> bool:
        return not self._thread.is_alive()

    def seen(self) -> str:
        """got 200 | got 500 | got another status | got no answer (a closed word)."""
        return sender_seen(self.result if self.done() else None)


class RowWatcher:
    """Samples a workflow's execution rows every POLL_S in a thread: each row's status path
    (every status it was seen in, with when), so a flip between states is not missed."""

    def __init__(self, dsn: str, workflow_id: str, timeline: Timeline) -> None:
        self.dsn, self.workflow_id, self.timeline = dsn, workflow_id, timeline
        self.paths: dict[str, list[dict[str, Any]]] = {}
        self.rows: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._watch, daemon=True, name="probe-rows")
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.is_set():
            try:
                rows = n8n_db.execution_rows(self.dsn, self.workflow_id)
            except psycopg.Error:
                rows = None  # Postgres busy or restarting: the next sample tells
            if rows is not None:
                self._take(rows)
            self._stop.wait(POLL_S)

    def _take(self, rows: list[dict[str, Any]]) -> None:
        with self._lock:
            self.rows = rows
            for row in rows:
                path = self.paths.setdefault(row["id"], [])
                if not path or path[-1]["status"] != row["status"]:
                    at = self.timeline.record(
                        "execution row", execution=row["id"], status=row["status"], mode=row["mode"]
                    )
                    path.append({"t": at, "status": row["status"]})

    def status(self, execution_id: str) -> str | None:
        with self._lock:
            path = self.paths.get(execution_id)
            return path[-1]["status"] if path else None

    def snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(r) for r in self.rows]

    def statuses(self, execution_id: str) -> list[str]:
        with self._lock:
            return [p["status"] for p in self.paths.get(execution_id, [])]

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


class ProbeWorld:
    """One probe's run on a stack: its business key, timeline, waits and observations."""

    def __init__(self, stack: Stack, probe_name: str) -> None:
        self.stack = stack
        self.key = f"{probe_name}-{uuid.uuid4().hex[:8]}"
        self.timeline = Timeline()
        self.provider: ProviderControl = stack.require_provider().control
        self._log_offsets = {p.name: p.process.log_size() for p in stack.n8n_processes}
        self.watcher: RowWatcher | None = None
        self.deployed: DeployedWorkflow | None = None

    # -- doing ---------------------------------------------------------------------------
    def deploy(self, workflow: dict[str, Any]) -> DeployedWorkflow:
        self.deployed = self.stack.deploy(workflow)
        self.timeline.record("workflow live", workflow=self.deployed.id)
        self.watcher = RowWatcher(self.stack.postgres_dsn, self.deployed.id, self.timeline)
        return self.deployed

    def send(self, timeout_s: float = 150.0) -> Sender:
        assert self.deployed is not None and self.deployed.webhook_url is not None
        self.timeline.record("sender sends", key=self.key)
        return Sender(self.timeline, self.deployed.webhook_url, {"key": self.key}, timeout_s)

    def wait_for(self, what: str, predicate: Callable[[], bool], deadline_s: float) -> bool:
        """Poll until ``predicate`` holds or ``deadline_s`` passed; both are journaled."""
        started = time.monotonic()
        while True:
            if predicate():
                self.timeline.record("reached", what=what)
                return True
            if time.monotonic() - started > deadline_s:
                self.timeline.record("gave up", what=what, after_s=deadline_s)
                return False
            time.sleep(POLL_S)

    def wait_found(self, what: str, find: Callable[[], T | None], deadline_s: float) -> T | None:
        """Poll ``find`` until it finds something (returned) or ``deadline_s`` passed (None)."""
        found: list[T] = []

        def seen() -> bool:
            value = find()
            found[:] = [value] if value is not None else []
            return bool(found)

        return found[0] if self.wait_for(what, seen, deadline_s) else None

    def wait_finished(self, what: str, execution: str, deadline_s: float) -> bool:
        """Wait until the execution's row is in a finished status (``FINISHED``)."""
        return self.wait_for(what, lambda: self.status(execution) in FINISHED, deadline_s)

    # -- striking -----------------------------------------------------------------------
    def kill(self, victim: N8nProcess) -> tuple[float, str | None]:
        """SIGKILL an n8n process, on the timeline: (when, the kernel's word that it was a
        SIGKILL, or None)."""
        at = self.timeline.record("SIGKILL", process=victim.name, pid=victim.pid)
        victim.kill()
        return at, victim.process.kill_proof()

    @contextlib.contextmanager
    def slowed(self, link: Proxy, toxic: str, latency_ms: int, healed: str) -> Iterator[None]:
        """Every command sent through ``link`` arrives ``latency_ms`` late (a latency toxic
        upstream named ``toxic``) until the block ends; then the toxic is removed and the
        link enabled (the timeline says ``<link> <healed>``)."""
        link.add_toxic("latency", stream="upstream", name=toxic, latency=latency_ms)
        self.timeline.record(f"{link.name} slowed", latency_ms=latency_ms)
        try:
            yield
        finally:
            with contextlib.suppress(HarnessError):
                link.remove_toxic(toxic)
            link.enable()
            self.timeline.record(f"{link.name} {healed}")

    def restart(self, victim: N8nProcess) -> None:
        """Start a killed n8n process again and wait until it is ready, on the timeline."""
        self.timeline.record("restart", process=victim.name)
        victim.restart(self.stack.config.ready_timeout_s)
        self.timeline.record("ready", process=victim.name)

    def close(self) -> None:
        if self.watcher is not None:
            self.watcher.stop()

    def __enter__(self) -> ProbeWorld:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- observing -----------------------------------------------------------------------
    def status(self, execution_id: str) -> str | None:
        assert self.watcher is not None
        return self.watcher.status(execution_id)

    def rows(self) -> list[dict[str, Any]]:
        assert self.watcher is not None
        return self.watcher.snapshot()

    def seconds_to_leave(
        self, execution_id: str, since: float, statuses: tuple[str, ...] = ("new", "running")
    ) -> float | None:
        """Seconds from ``since`` (timeline time) until the row was first seen out of
        ``statuses``; None if it never was."""
        assert self.watcher is not None
        for step in self.watcher.paths.get(execution_id, []):
            if step["t"] >= since and step["status"] not in statuses:
                return round(float(step["t"]) - since, 2)
        return None

    def running_execution(self) -> str | None:
        found = [r["id"] for r in self.rows() if r["status"] == "running"]
        return found[0] if found else None

    def worker_starts(self, execution_id: str) -> int:
        """How often a worker logged "Worker started execution N" since the probe began."""
        return self._worker_logged(f"Worker started execution {execution_id} (")

    def worker_finishes(self, execution_id: str) -> int:
        """How often a worker logged "Worker finished execution N" since the probe began."""
        return self._worker_logged(f"Worker finished execution {execution_id} (")

    def _worker_logged(self, needle: str) -> int:
        return sum(
            self.log_since(p.name).count(needle) for p in self.stack.workers if p is not None
        )

    def log_since(self, process_name: str) -> str:
        proc = next(p for p in self.stack.n8n_processes if p.name == process_name)
        return proc.process.log_since(self._log_offsets.get(process_name, 0))

    def log_lines(self, needles: Iterable[str]) -> dict[str, list[str]]:
        """Each n8n process's log lines since the probe began that contain a needle."""
        wanted = [n.lower() for n in needles]
        found: dict[str, list[str]] = {}
        for proc in self.stack.n8n_processes:
            lines = [
                line.strip()[:LOG_LINE_CHARS]
                for line in self.log_since(proc.name).splitlines()
                if any(n in line.lower() for n in wanted)
            ]
            if lines:
                found[proc.name] = lines[-LOG_LINES_PER_PROCESS:]
        return found

    def commits(self) -> list[dict[str, Any]]:
        return [
            {"effect_id": c.effect_id, "attempt_no": c.attempt_no, "committed_at": c.committed_at}
            for c in self.provider.commits(self.key)
        ]

    def attempts(self) -> list[dict[str, Any]]:
        return [
            {
                "id": a.id,
                "attempt_no": a.attempt_no,
                "outcome": str(a.outcome),
                "http_status": a.http_status,
                "fault": str(a.fault) if a.fault else None,
                "received_at": a.received_at,
            }
            for a in self.provider.attempts(self.key)
        ]

    def bull_jobs(self) -> list[dict[str, Any]]:
        return bull_jobs(self.stack.redis_url, bull_prefix(self.stack))

    def row_without_job(self, deadline_s: float) -> str | None:
        """The first execution row once it exists with no Bull job in Redis (the window
        between the row and the enqueue), or None at the deadline."""

        def found() -> str | None:
            rows = [r["id"] for r in self.rows()]
            jobs = {j.get("execution") for j in self.bull_jobs()}
            return rows[0] if rows and rows[0] not in jobs else None

        return self.wait_found("a row with no job in Redis", found, deadline_s)

    def jobs_of(self, execution: str) -> list[dict[str, Any]]:
        """The Bull jobs in Redis now that carry the execution."""
        return [j for j in self.bull_jobs() if j.get("execution") == execution]

    def reran(self, execution: str, effects: Callable[[], list[Any]]) -> bool:
        """Anything ran the execution again: another row of the workflow, a second worker
        start of it, or more than one of ``effects`` (the provider's commits or attempts)."""
        others = [r for r in self.rows() if r["id"] != execution]
        return bool(others) or self.worker_starts(execution) > 1 or len(effects()) > 1

    def evidence(self, needles: Iterable[str], **extra: Any) -> dict[str, Any]:
        """The probe's evidence now: rows and their status paths, Bull jobs, log lines,
        provider commits and attempts, and the timeline."""
        assert self.watcher is not None
        rows = self.rows()
        ours = {r["id"] for r in rows}
        return {
            "key": self.key,
            "workflow_id": self.deployed.id if self.deployed else None,
            "execution_rows": rows,
            "status_paths": dict(self.watcher.paths),
            # The stack's queue holds every probe's jobs: this probe's executions only.
            "bull_jobs": [
                j for j in self.bull_jobs() if j.get("execution") in ours or "error" in j
            ],
            "log_lines": self.log_lines(needles),
            "provider_commits": self.commits(),
            "provider_attempts": self.attempts(),
            "timeline": list(self.timeline.events),
            "started_at": self.timeline.started_at,
            **extra,
        }


def bull_prefix(stack: Stack) -> str:
    overrides = dict(stack.config.n8n_env)
    return overrides.get("QUEUE_BULL_PREFIX", f"bull-{stack.run.run_id}")


def bull_jobs(redis_url: str, prefix: str, queue: str = "jobs") -> list[dict[str, Any]]:
    """Every job Bull still holds for n8n's queue, with its state (wait, active, stalled,
    completed, failed, delayed, paused) and the execution it carries. Jobs n8n removed on
    completion or failure (N8N_EXECUTIONS_QUEUE_KEEP_LAST_* = 0, the default) are gone."""
    base = f"{prefix}:{queue}"
    client = redis.Redis.from_url(redis_url, decode_responses=True, socket_timeout=5)
    try:
        members: dict[str, set[str]] = {}
        for name in ("wait", "active", "paused"):
            members[name] = {str(m) for m in client.lrange(f"{base}:{name}", 0, -1)}
        for name in ("completed", "failed", "delayed"):
            members[name] = {str(m) for m in client.zrange(f"{base}:{name}", 0, -1)}
        members["stalled"] = {str(m) for m in client.smembers(f"{base}:stalled")}
        ids = {
            key.rsplit(":", 1)[1]
            for key in client.scan_iter(f"{base}:*", count=500)
            if key.rsplit(":", 1)[1].isdigit()
        } | set().union(*members.values())
        jobs = []
        for job_id in sorted(ids, key=int):
            fields = client.hgetall(f"{base}:{job_id}")
            try:
                data = json.loads(fields.get("data") or "{}")
            except ValueError:
                data = {}
            jobs.append(
                {
                    "job": job_id,
                    "execution": str(data.get("executionId", "")) or None,
                    "states": sorted(n for n, ids_ in members.items() if job_id in ids_),
                    "locked": bool(client.exists(f"{base}:{job_id}:lock")),
                    "failed_reason": fields.get("failedReason"),
                    "stalled_counter": fields.get("stalledCounter"),
                    "attempts_made": fields.get("attemptsMade"),
                    # When the adding client called add (its clock, epoch ms).
                    "added_at_ms": fields.get("timestamp"),
                }
            )
        return jobs
    except redis.RedisError as exc:
        return [{"error": f"Redis: {exc}"}]
    finally:
        client.close()


def execution_row(dsn: str, execution_id: str) -> dict[str, Any] | None:
    rows = n8n_db.query(
        dsn,
        'SELECT id::text AS id, status, mode, finished, "retryOf" AS retry_of '
        "FROM execution_entity WHERE id = %s",
        (int(execution_id),),
    )
    return rows[0] if rows else None
