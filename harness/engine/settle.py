"""Internal: When is a case over? Settle means quiet, read from the parts themselves:

- no execution of the case is live: new/running/waiting in n8n's database AND still a job in
  Bull's queue (or not yet long enough without one to call it orphaned: an execution row left
  `running` after its job is gone is an n8n finding, not work in progress);
- the provider has no request in flight and saw none for a quiet period;
- the workflow's ledger state did not change for that period.

All three must hold together for ``QUIET_S``. The deadline is the caller's; an expired one
is returned (and journaled by the caller), never treated as quiet.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import redis

QUIET_S = 1.5  # how long everything must stay quiet
ORPHAN_GRACE_S = 4.0  # a live-looking row without a Bull job this long is orphaned
POLL_S = 0.25
LIVE_STATUSES = frozenset({"new", "running", "waiting"})
BULL_QUEUE = "jobs"  # n8n's Bull queue name (ScalingService)


@dataclass(frozen=True)
class Activity:
    """One look at everything that may still be moving."""

    executions: list[dict[str, Any]]  # the case's execution rows
    queued: set[str]  # execution ids that have a job in Bull (waiting, active, delayed)
    provider_busy: bool  # a request of the case is in flight at the provider
    provider_last: float  # time of the provider's last activity for the case (0: none)
    ledger_state: str | None


@dataclass
class SettleResult:
    settled: bool
    waited_s: float
    live: list[str] = field(default_factory=list)
    orphaned: list[str] = field(default_factory=list)


def bull_execution_ids(client: redis.Redis, prefix: str) -> set[str]:
    """Execution ids of every job Bull still holds (wait, active, delayed, paused)."""
    base = f"{prefix}:{BULL_QUEUE}"
    job_ids: list[Any] = []
    for state in ("wait", "active", "paused"):
        job_ids += client.lrange(f"{base}:{state}", 0, -1)
    job_ids += client.zrange(f"{base}:delayed", 0, -1)
    found: set[str] = set()
    for job_id in job_ids:
        raw = client.hget(f"{base}:{_text(job_id)}", "data")
        if raw is None:
            continue
        try:
            execution_id = json.loads(_text(raw)).get("executionId")
        except (ValueError, AttributeError):
            continue
        if execution_id is not None:
            found.add(str(execution_id))
    return found


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class Settler:
    """Polls ``look`` until quiet for ``QUIET_S`` or the deadline passes."""

    def __init__(self, look: Callable[[], Activity], expect_executions: bool) -> None:
        self.look = look
        self.expect_executions = expect_executions
        self._orphan_since: dict[str, float] = {}

    def live(self, activity: Activity, now: float) -> tuple[list[str], list[str]]:
        """(live, orphaned) execution ids."""
        live: list[str] = []
        orphaned: list[str] = []
        for row in activity.executions:
            eid = row["id"]
            if row["status"] not in LIVE_STATUSES:
                self._orphan_since.pop(eid, None)
                continue
            if eid in activity.queued or row["status"] == "waiting":
                self._orphan_since.pop(eid, None)
                live.append(eid)
                continue
            since = self._orphan_since.setdefault(eid, now)
            (orphaned if now - since >= ORPHAN_GRACE_S else live).append(eid)
        return live, orphaned

    def wait(self, deadline_s: float) -> SettleResult:
        start = time.monotonic()
        quiet_since: float | None = None
        last_state: object = object()
        live: list[str] = []
        orphaned: list[str] = []
        while True:
            now, wall = time.monotonic(), time.time()
            activity = self.look()
            live, orphaned = self.live(activity, wall)
            quiet = (
                not live
                and not activity.provider_busy
                and activity.ledger_state == last_state
                and (activity.executions or not self.expect_executions)
            )
            last_state = activity.ledger_state
            # The quiet period runs from the provider's last activity when that came later
            # (a request that began and ended between two looks): one period, not two.
            quiet_since = max(quiet_since or wall, activity.provider_last) if quiet else None
            if quiet_since is not None and wall - quiet_since >= QUIET_S:
                return SettleResult(True, now - start, [], orphaned)
            if now - start >= deadline_s:
                return SettleResult(False, now - start, live, orphaned)
            time.sleep(POLL_S)  # a poll with a deadline: n8n offers no signal for "all done"


def latest_activity(times: Iterable[float | None]) -> float:
    return max((t for t in times if t is not None), default=0.0)
