"""What the harness reads from n8n's own database (rows n8n writes, never changed here)."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import psycopg
from psycopg.rows import dict_row

_kept = threading.local()


Params = Sequence[object] | Mapping[str, object]


def query(dsn: str, sql: str, params: Params = ()) -> list[dict[str, Any]]:
    """Rows of a read-only query, on a connection this thread keeps for ``dsn``.

    A case polls the database several times a second; a fresh connection costs a backend's
    fork and a SCRAM handshake (about 7 ms of CPU, measured: a poll on a kept one, 0.1 ms),
    which across a matrix's stacks was a share of the machine. Kept per thread and process (a
    forked runner must not share its parent's socket); a connection that broke is opened
    again once, as the read is safe to repeat."""
    try:
        return _read(dsn, sql, params)
    except psycopg.OperationalError:
        return _read(dsn, sql, params)


def _read(dsn: str, sql: str, params: Params) -> list[dict[str, Any]]:
    conns: dict[tuple[str, int], psycopg.Connection[Any]] = _kept.__dict__.setdefault("conns", {})
    key = (dsn, os.getpid())
    conn = conns.get(key)
    if conn is None or conn.closed:
        conn = conns[key] = psycopg.connect(dsn, autocommit=True)
    try:
        with conn.cursor(row_factory=dict_row) as cursor:
            return cursor.execute(sql.encode(), params).fetchall()
    except psycopg.OperationalError:
        del conns[key]
        conn.close()
        raise


def execution_rows(
    dsn: str, workflow_id: str, containing: str | None = None, after_id: int = 0
) -> list[dict[str, Any]]:
    """Execution rows of a workflow (oldest first): id, status, mode, retry links, times.
    ``containing``: only the executions whose data holds that text (a case's business key:
    n8n stores the trigger's input with the execution when it is created). ``after_id``: only
    those created after that one (ids come from a sequence), so a case's poll reads its own
    window rather than every execution the stack ran before it."""
    sql = (
        'SELECT e.id::text AS id, e.status, e.mode, e."retryOf" AS retry_of, '
        'e."retrySuccessId" AS retry_success_id, '
        'extract(epoch from e."startedAt")::float AS started_at, '
        'extract(epoch from e."stoppedAt")::float AS stopped_at '
        'FROM execution_entity e WHERE e."workflowId" = %s AND e.id > %s'
    )
    params: tuple[str | int, ...] = (workflow_id, after_id)
    if containing is not None:
        sql += (
            ' AND EXISTS (SELECT 1 FROM execution_data d WHERE d."executionId" = e.id'
            " AND strpos(d.data, %s) > 0)"
        )
        params += (containing,)
    return query(dsn, sql + " ORDER BY e.id", params)


def newest_execution_id(dsn: str) -> int:
    """The newest execution's id (0: none yet): ids come from one sequence, so every
    execution created later has a greater one (``execution_rows``' ``after_id``)."""
    return int(query(dsn, "SELECT coalesce(max(id), 0) AS id FROM execution_entity")[0]["id"])


def wait_till(dsn: str, execution_id: str) -> float | None:
    """When a waiting execution is due to resume (``waitTill``, epoch seconds), or None."""
    rows = query(
        dsn,
        'SELECT extract(epoch from "waitTill")::float AS due FROM execution_entity WHERE id = %s',
        (int(execution_id),),
    )
    return None if not rows or rows[0]["due"] is None else float(rows[0]["due"])
