"""What the harness reads from n8n's own database (rows n8n writes, never changed here)."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.rows import dict_row


def execution_rows(dsn: str, workflow_id: str) -> list[dict[str, Any]]:
    """Execution rows of a workflow (oldest first): id, status, mode, retry links, times."""
    with psycopg.connect(dsn, row_factory=dict_row) as conn:
        return conn.execute(
            'SELECT id::text AS id, status, mode, "retryOf" AS retry_of, '
            '"retrySuccessId" AS retry_success_id, '
            'extract(epoch from "startedAt")::float AS started_at, '
            'extract(epoch from "stoppedAt")::float AS stopped_at '
            'FROM execution_entity WHERE "workflowId" = %s ORDER BY id',
            (workflow_id,),
        ).fetchall()


def wait_till(dsn: str, execution_id: str) -> float | None:
    """When a waiting execution is due to resume (``waitTill``, epoch seconds), or None."""
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            'SELECT extract(epoch from "waitTill")::float FROM execution_entity WHERE id = %s',
            (int(execution_id),),
        ).fetchone()
    return None if row is None or row[0] is None else float(row[0])
