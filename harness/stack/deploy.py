"""Put a workflow on a running stack: create it, point its ledger credential at this run's,
publish it, and wait until its production webhook is registered.

A workflow another one calls by id (an Execute Workflow node's sub-workflow, an Error
Workflow named in ``settings.errorWorkflow``) is deployed with that id: n8n's API picks a new
id on create, so ``give_id`` renames the fresh, unpublished workflow in n8n's database, in
one transaction, together with every row that refers to it by foreign key; it is published
under its new id afterwards. n8n 2.x runs a sub-workflow only from its published version
("Workflow is not active and cannot be executed"); an Execute Workflow Trigger counts as a
trigger, so publishing it is accepted.
"""

from __future__ import annotations

import copy
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from harness.errors import SetupError
from harness.stack.n8n_api import N8nApi, wait_webhook_live
from harness.stack.readiness import Readiness, wait_ready
from harness.stack.triggers import trigger_url


@dataclass(frozen=True)
class DeployedWorkflow:
    id: str
    name: str
    webhook_url: str | None
    seconds_to_live: float


def bind_credentials(workflow: dict[str, Any], credentials: dict[str, str]) -> dict[str, Any]:
    """A copy of the workflow whose credential references (by name) carry this run's ids."""
    bound = copy.deepcopy(workflow)
    for node in bound.get("nodes", []):
        for ref in node.get("credentials", {}).values():
            if ref.get("name") in credentials:
                ref["id"] = credentials[ref["name"]]
    return bound


def publication_done(n8n_dsn: str, workflow_id: str) -> bool:
    """True once n8n finished publishing; raises if the publication failed.

    On 2.40+ ``/publish`` only writes an outbox row that the leader processes later; the
    webhook is live once that row is ``completed``. Older versions have no outbox table
    and publish synchronously.
    """
    with psycopg.connect(n8n_dsn) as conn:
        exists = conn.execute("SELECT to_regclass('workflow_publication_outbox')").fetchone()
        if exists is None or exists[0] is None:
            return True
        row = conn.execute(
            'SELECT status, "errorMessage" FROM workflow_publication_outbox '
            'WHERE "workflowId" = %s ORDER BY id DESC LIMIT 1',
            (workflow_id,),
        ).fetchone()
    if row is None:
        # 2.33 has the table but publishes synchronously and writes no row; on 2.40+ the
        # row is written before /publish answers. Either way: nothing left to wait for.
        return True
    if row[0] in ("pending", "in_progress"):
        return False
    if row[0] != "completed":
        raise SetupError(
            f"n8n could not publish workflow {workflow_id}: {row[0]} {row[1] or ''} "
            "(see the main log in the run directory)"
        )
    return True


# The foreign keys that point at workflow_entity.id (shared_workflow, workflow_history, ...).
_REFERENCES = """
SELECT cl.relname, att.attname
FROM pg_constraint con
JOIN pg_class cl ON cl.oid = con.conrelid
JOIN pg_attribute att ON att.attrelid = con.conrelid AND att.attnum = con.conkey[1]
WHERE con.contype = 'f' AND con.confrelid = 'workflow_entity'::regclass
"""


def workflow_exists(n8n_dsn: str, workflow_id: str) -> bool:
    with psycopg.connect(n8n_dsn) as conn:
        row = conn.execute("SELECT 1 FROM workflow_entity WHERE id = %s", (workflow_id,))
        return row.fetchone() is not None


def give_id(n8n_dsn: str, created: str, wanted: str) -> None:
    """Rename the unpublished workflow ``created`` to ``wanted`` (and every row referring to
    it), in one transaction; the foreign keys are not deferrable, so their triggers are off
    for this transaction only (``session_replication_role``, the database owner's right)."""
    with psycopg.connect(n8n_dsn) as conn, conn.transaction():
        conn.execute("SET LOCAL session_replication_role = replica")
        for table, column in conn.execute(_REFERENCES).fetchall():
            conn.execute(
                sql.SQL("UPDATE {t} SET {c} = %s WHERE {c} = %s").format(
                    t=sql.Identifier(table), c=sql.Identifier(column)
                ),
                (wanted, created),
            )
        conn.execute("UPDATE workflow_entity SET id = %s WHERE id = %s", (wanted, created))


def write_variables(n8n_dsn: str, variables: Mapping[str, str]) -> None:
    """n8n Variables ($vars.NAME), global, straight into n8n's ``variables`` table: its API
    refuses them without an enterprise licence (``feat:variables``), but executions read
    the table (``WorkflowHelpers.getVariables``, no licence check) through a cache each
    process fills on its first execution, so this runs before any."""
    if not variables:
        return
    with psycopg.connect(n8n_dsn) as conn, conn.transaction():
        for key, value in variables.items():
            conn.execute("DELETE FROM variables WHERE key = %s", (key,))
            conn.execute(
                "INSERT INTO variables (id, key, type, value) VALUES (%s, %s, 'string', %s)",
                (secrets.token_hex(8), key, value),
            )


def deploy(
    api: N8nApi,
    n8n_dsn: str,
    workflow: dict[str, Any],
    webhook_base_url: str,
    credentials: dict[str, str],
    live_deadline_s: float = 60.0,
    workflow_id: str | None = None,
) -> DeployedWorkflow:
    """Create and publish ``workflow``; with ``workflow_id``, under that id (a workflow this
    stack already holds under it is taken as deployed: the same file, called twice)."""
    started = time.monotonic()
    url = trigger_url(workflow, webhook_base_url)
    name = str(workflow.get("name"))
    if workflow_id is not None and workflow_exists(n8n_dsn, workflow_id):
        return DeployedWorkflow(workflow_id, name, url, 0.0)
    created = api.create_workflow(bind_credentials(workflow, credentials))
    if workflow_id is not None:
        give_id(n8n_dsn, created, workflow_id)
    else:
        workflow_id = created
    api.publish(workflow_id)
    wait_ready(
        Readiness(
            f"publication of workflow {name!r}",
            lambda: publication_done(n8n_dsn, workflow_id),
            not_yet="n8n's publication outbox still holds it as pending (main's log in the run "
            "directory says what n8n did instead)",
        ),
        live_deadline_s,
    )
    if url:
        wait_webhook_live(url, live_deadline_s)
    return DeployedWorkflow(workflow_id, name, url, time.monotonic() - started)
