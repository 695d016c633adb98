"""in_ledger_write: the workflow's own ledger write after the effect is in flight, blocked
on a lock the harness holds, when the fault strikes.

The provider holds its committed response; the harness takes EXCLUSIVE locks on the ledger
database's tables (reads go on, writes wait), lets the response go, and waits until Postgres
shows a statement of the workflow waiting on the harness's lock. Then it strikes, and ends
the blocked backends with the worker: the write is lost, as a write in flight is when its
connection dies before the commit.

Proof, from Postgres: ``pg_stat_activity`` shows that statement, and ``pg_blocking_pids``
names the harness's backend, at the strike. A workflow that writes nothing after the effect
never opens this window (no proof: the oracle says why).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import psycopg
from psycopg import sql

from harness.engine.crashpoints.base import HeldAtCommit, committed_and_running, register

if TYPE_CHECKING:
    from harness.engine.contract import CaseWorld
    from harness.engine.workload import BackgroundDelivery

BLOCKED_QUERY = """
SELECT pid, left(query, 200) FROM pg_stat_activity
WHERE datname = current_database() AND %s = ANY(pg_blocking_pids(pid))
"""
WRITE_WAIT_S = 30.0


@register("in_ledger_write")
class InLedgerWrite(HeldAtCommit):
    offers = frozenset({"in_flight", "committed"})
    needs = frozenset({"ledger"})

    def __init__(self) -> None:
        super().__init__()
        self.lock: psycopg.Connection[tuple[object, ...]] | None = None

    def strike(self, run: CaseWorld, delivery: BackgroundDelivery) -> None:
        barrier = self.barrier
        assert barrier is not None
        _, worker = committed_and_running(run, barrier, delivery)
        if worker is None:
            return
        self.lock = lock = psycopg.connect(run.ledger_dsn)
        tables = [
            sql.Identifier(schema, name)
            for schema, name in lock.execute(
                "SELECT schemaname, tablename FROM pg_tables WHERE schemaname = 'public'"
            ).fetchall()
        ]
        if not tables:
            return
        # EXCLUSIVE: the workflow's reads go on, its writes wait for the harness.
        lock.execute(sql.SQL("LOCK TABLE {} IN EXCLUSIVE MODE").format(sql.SQL(", ").join(tables)))
        holder = lock.info.backend_pid
        barrier.release()
        blocked: list[tuple[object, ...]] = []

        def write_blocked() -> bool:
            with psycopg.connect(run.ledger_dsn) as conn:
                blocked[:] = conn.execute(BLOCKED_QUERY, (holder,)).fetchall()
            return bool(blocked)

        if not run.wait_for(
            "the ledger write to block on the harness's lock",
            write_blocked,
            WRITE_WAIT_S,
            lambda: run.work_over(delivery),
        ):
            return
        struck = time.time()
        run.inject()
        # The write dies with the worker: without this, Postgres would run the queued
        # statement once the lock is gone (a backend waiting on a lock never notices that
        # its client died), and the case would be "the write landed after all".
        with psycopg.connect(run.ledger_dsn, autocommit=True) as conn:
            ended = [
                pid
                for (pid, _) in blocked
                if conn.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone() == (True,)
            ]
        pid, query = blocked[0]
        self.fact = (
            f"Postgres showed the ledger statement {query!r} (backend {pid}) waiting on the "
            f"harness's lock (backend {holder}) at the strike ({struck:.3f}); backends "
            f"{ended} ended with the worker, so the write never committed"
        )

    def disarm(self, run: CaseWorld) -> None:
        super().disarm(run)
        if self.lock is not None:
            self.lock.rollback()
            self.lock.close()
