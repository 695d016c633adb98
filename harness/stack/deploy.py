"""Put a workflow on a running stack: create it, point its ledger credential at this run's,
publish it, and wait until its production webhook is registered."""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from typing import Any

import psycopg

from harness import workflow_json as wj
from harness.errors import ConfigError, SetupError
from harness.stack.n8n_api import N8nApi, wait_webhook_live
from harness.stack.readiness import Readiness, wait_ready

# n8n's EndpointsConfig: production webhooks under /webhook, Form Triggers under /form
# (their test URLs, /webhook-test and /form-test, answer only while the editor listens).
WEBHOOK_ENDPOINT = "webhook"
FORM_ENDPOINT = "form"


@dataclass(frozen=True)
class DeployedWorkflow:
    id: str
    name: str
    webhook_url: str | None
    seconds_to_live: float


def webhook_path(workflow: dict[str, Any]) -> str | None:
    """The production path of the workflow's trigger below n8n's base URL:
    ``webhook/<path>`` for a Webhook node, ``form/<path>`` for a Form Trigger."""
    for node in workflow.get("nodes", []):
        if node.get("type") in wj.TRIGGER_NODE_TYPES and not node.get("disabled", False):
            path = wj.trigger_path_of(node)
            if not path:
                raise ConfigError(
                    f"workflow {workflow.get('name')!r}: trigger node {node.get('name')!r} has "
                    "no parameters.path; give it a unique path"
                )
            is_form = node.get("type") == wj.FORM_TRIGGER_NODE_TYPE
            return f"{FORM_ENDPOINT if is_form else WEBHOOK_ENDPOINT}/{path}"
    return None


def trigger_url(workflow: dict[str, Any], webhook_base_url: str) -> str | None:
    """Where the harness sends the workflow's trigger (``webhook_base_url`` ends in
    ``/webhook``, the stack's production webhook base)."""
    path = webhook_path(workflow)
    if path is None:
        return None
    base = webhook_base_url.rstrip("/").removesuffix("/" + WEBHOOK_ENDPOINT)
    return f"{base}/{path}"


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


def deploy(
    api: N8nApi,
    n8n_dsn: str,
    workflow: dict[str, Any],
    webhook_base_url: str,
    credentials: dict[str, str],
    live_deadline_s: float = 60.0,
) -> DeployedWorkflow:
    started = time.monotonic()
    url = trigger_url(workflow, webhook_base_url)
    workflow_id = api.create_workflow(bind_credentials(workflow, credentials))
    api.publish(workflow_id)
    name = str(workflow.get("name"))
    wait_ready(
        Readiness(
            f"publication of workflow {name!r}", lambda: publication_done(n8n_dsn, workflow_id)
        ),
        live_deadline_s,
    )
    if url:
        wait_webhook_live(url, live_deadline_s)
    return DeployedWorkflow(workflow_id, name, url, time.monotonic() - started)
