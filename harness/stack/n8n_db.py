"""What the harness reads from n8n's own database (rows n8n writes, never changed here)."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.rows import dict_row


def execution_rows(
    dsn: str, workflow_id: str, containing: str | None = None
) -> list[dict[str, Any]]:
    """Execution rows of a workflow (oldest first): id, status, mode, retry links, times.
    ``containing``: only the executions whose data holds that text (a case's business key:
    n8n stores the trigger's input with the execution when it is created)."""
    query = (
        'SELECT e.id::text AS id, e.status, e.mode, e."retryOf" AS retry_of, '
        'e."retrySuccessId" AS retry_success_id, '
        'extract(epoch from e."startedAt")::float AS started_at, '
        'extract(epoch from e."stoppedAt")::float AS stopped_at '
        'FROM execution_entity e WHERE e."workflowId" = %s'
    )
    params: tuple[str, ...] = (workflow_id,)
    if containing is not None:
        query += (
            ' AND EXISTS (SELECT 1 FROM execution_data d WHERE d."executionId" = e.id'
            " AND strpos(d.data, %s) > 0)"
        )
        params += (containing,)
    with psycopg.connect(dsn, row_factory=dict_row) as conn:
        return conn.execute((query + " ORDER BY e.id").encode(), params).fetchall()


def wait_till(dsn: str, execution_id: str) -> float | None:
    """When a waiting execution is due to resume (``waitTill``, epoch seconds), or None."""
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            'SELECT extract(epoch from "waitTill")::float FROM execution_entity WHERE id = %s',
            (int(execution_id),),
        ).fetchone()
    return None if row is None or row[0] is None else float(row[0])
