"""A fake stack for driving the case engine without n8n: a provider ledger in memory, n8n's
execution rows in memory, and a workflow played by a respx route. Only for unit tests of our
own engine; the chaos tests run the real parts."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

WEBHOOK_URL = "http://127.0.0.1:9/webhook/pay"


@dataclass
class FakeCommit:
    effect_id: str
    attempt_no: int
    committed_at: float
    idempotency_key: str | None
    reference: str
    effect: str = "charge"


@dataclass
class FakeAttempt:
    reference: str
    outcome: str
    received_at: float
    finished_at: float | None


@dataclass
class FakePlanted:
    id: str
    reference_prefix: str
    hits: int = 0


@dataclass
class FakeControl:
    ledger: list[FakeCommit] = field(default_factory=list)
    log: list[FakeAttempt] = field(default_factory=list)
    plan: list[FakePlanted] = field(default_factory=list)
    ttl: float = 86400.0

    def set_upstreams(self, upstreams: list[Any]) -> None:
        assert not upstreams, "the fake workflows declare no upstreams"

    def commit(self, reference: str) -> FakeCommit:
        now = time.time()
        row = FakeCommit(f"ch_{len(self.ledger)}", len(self.ledger) + 1, now, None, reference)
        self.ledger.append(row)
        self.log.append(FakeAttempt(reference, "committed", now, now))
        for planted in self.plan:
            if reference.startswith(planted.reference_prefix):
                planted.hits += 1
        return row

    def commits(self, reference: str | None = None, **_: Any) -> list[FakeCommit]:
        return [c for c in self.ledger if reference is None or c.reference == reference]

    def attempts(
        self, reference: str | None = None, since: float | None = None, **_: Any
    ) -> list[FakeAttempt]:
        return [
            a
            for a in self.log
            if reference in (None, a.reference) and (since is None or a.received_at >= since)
        ]

    def add_fault(self, kind: Any, reference_prefix: str, **_: Any) -> FakePlanted:
        planted = FakePlanted(f"fault_{len(self.plan)}", reference_prefix)
        self.plan.append(planted)
        return planted

    def faults(self) -> list[FakePlanted]:
        return list(self.plan)

    def clear_faults(self) -> None:
        self.plan.clear()

    def health(self) -> dict[str, Any]:
        return {"key_ttl_seconds": self.ttl}

    def set_ttl(self, seconds: float) -> None:
        self.ttl = seconds


@dataclass
class FakeProvider:
    control: FakeControl = field(default_factory=FakeControl)

    def restore_ttl(self) -> None:
        self.control.ttl = 86400.0

    @contextmanager
    def keys_expired(self) -> Iterator[None]:
        self.control.ttl = 0
        try:
            yield
        finally:
            self.restore_ttl()


@dataclass
class FakeRun:
    run_dir: Path
    run_id: str = "test"


@dataclass
class FakeLog:
    """A process's log, as the engine reads it (sizes and what came after one)."""

    name: str
    text: str = ""

    def log_size(self) -> int:
        return len(self.text)

    def log_since(self, offset: int) -> str:
        return self.text[offset:]


@dataclass
class FakeN8n:
    process: FakeLog


@dataclass
class FakeWorker:
    """A worker the engine may hold: it notes how many execution rows existed at each step."""

    name: str
    rows: list[dict[str, Any]]
    steps: list[tuple[str, int]] = field(default_factory=list)

    def pause(self) -> None:
        self.steps.append(("paused", len(self.rows)))

    def resume(self) -> None:
        self.steps.append(("resumed", len(self.rows)))


@dataclass
class FakeStack:
    run: FakeRun
    provider: FakeProvider = field(default_factory=FakeProvider)
    rows: list[dict[str, Any]] = field(default_factory=list)
    ledger: dict[str, str] = field(default_factory=dict)
    processes: list[Any] = field(default_factory=list)
    n8n_processes: list[Any] = field(default_factory=list)
    workers: list[Any] = field(default_factory=list)
    intercept: Any = None  # no intercepting proxy: the fake workflows call no upstream host
    api: Any = None
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    def __post_init__(self) -> None:
        self.workers = self.workers or [FakeWorker(f"worker{i}", self.rows) for i in range(2)]

    def require_provider(self) -> FakeProvider:
        return self.provider

    def revive(self, reconnecting: object = None) -> list[str]:
        return []

    def newest_execution_id(self) -> int:
        return max((int(r["id"]) for r in self.rows), default=0)

    def reset_links(self) -> None:
        pass

    def executions(
        self, workflow_id: str, containing: str | None = None, after_id: int = 0
    ) -> list[dict[str, Any]]:
        return [
            dict(r)
            for r in self.rows
            if r["workflow"] == workflow_id
            and (containing is None or containing in str(r))
            and int(r["id"]) > after_id
        ]

    def execution(self, status: str = "success", data: str = "") -> dict[str, Any]:
        """A new execution row; ``data`` stands for its execution data (the trigger body)."""
        now = time.time()
        row = {
            "data": data,
            "id": str(next(self._ids)),
            "workflow": "wf1",
            "status": status,
            "mode": "webhook",
            "started_at": now,
            "stopped_at": None if status == "running" else now,
        }
        self.rows.append(row)
        return row


# A workflow under test, played by the fake: (stack, request body) -> HTTP answer.
Behaviour = Callable[[FakeStack, dict[str, Any]], httpx.Response]


def charges_once(stack: FakeStack, body: dict[str, Any]) -> httpx.Response:
    key = body["order_id"]
    stack.execution(data=key)
    if not stack.provider.control.commits(key):
        stack.provider.control.commit(key)
    stack.ledger[key] = "confirmed"
    return httpx.Response(200, json={"status": "confirmed"})


def charges_every_time(stack: FakeStack, body: dict[str, Any]) -> httpx.Response:
    stack.execution()
    stack.provider.control.commit(body["order_id"])
    return httpx.Response(200, json={})


def never_charges(stack: FakeStack, body: dict[str, Any]) -> httpx.Response:
    del body
    stack.execution()
    return httpx.Response(503)


def acknowledges_without_charging(stack: FakeStack, body: dict[str, Any]) -> httpx.Response:
    del body
    stack.execution()
    return httpx.Response(200, json={"status": "accepted"})


def charges_and_answers_failed(stack: FakeStack, body: dict[str, Any]) -> httpx.Response:
    stack.execution()
    stack.provider.control.commit(body["order_id"])
    stack.ledger[body["order_id"]] = "failed"
    return httpx.Response(422, json={"status": "failed"})


def hangs_running(stack: FakeStack, body: dict[str, Any]) -> httpx.Response:
    del body
    stack.execution(status="running")
    return httpx.Response(503)
