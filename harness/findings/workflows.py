"""The minimal workflows probes deploy: a webhook that charges the fake provider once.

``Webhook (answers with the last node) -> Charge (HTTP POST /v1/charges, no node retries,
no Idempotency-Key)``: every run of the Charge node that reaches the provider is one commit,
so the provider's commits count how often n8n ran the execution's work.
"""

from __future__ import annotations

import copy
import itertools
import uuid
from typing import Any

from harness.minimal_workflow import webhook_then_http

# Far beyond any hold or pause a probe makes: the HTTP node never times out on its own.
CHARGE_TIMEOUT_MS = 240_000


def charge_workflow(name: str, path: str) -> dict[str, Any]:
    return webhook_then_http(
        path,
        "Charge",
        _charge_parameters("$json.body.key"),
        name=f"n8n-chaos probe {name}",
        seed=uuid.uuid5(uuid.NAMESPACE_URL, f"n8n-chaos-probe/{name}"),
        settings={
            "saveDataSuccessExecution": "all",
            "saveDataErrorExecution": "all",
            "saveExecutionProgress": True,
        },
    )


def _charge_parameters(reference: str) -> dict[str, Any]:
    return {
        "method": "POST",
        "url": "={{ $env.N8N_CHAOS_UPSTREAM_PROVIDER }}/v1/charges",
        "sendBody": True,
        "contentType": "json",
        "specifyBody": "json",
        "jsonBody": "={{ JSON.stringify({ amount: 1250, currency: 'EUR', "
        f"reference: {reference} }}) }}}}",
        "options": {"timeout": CHARGE_TIMEOUT_MS},
    }


def wait_resume_workflow(name: str, path: str) -> dict[str, Any]:
    """``Webhook -> Respond to Webhook (answers {resumeUrl, execution}) -> Wait (On Webhook
    Call, POST, answered on receipt) -> Charge``: the sender learns ``$execution.resumeUrl``
    from the first answer, the execution parks as ``waiting``, and every resumed run of the
    Charge node commits one charge for the first delivery's key."""
    seed = uuid.uuid5(uuid.NAMESPACE_URL, f"n8n-chaos-probe/{name}")

    def node(
        label: str, kind: str, version: float, x: int, parameters: dict[str, Any]
    ) -> dict[str, Any]:
        return {
            "id": str(uuid.uuid5(seed, label)),
            "name": label,
            "type": f"n8n-nodes-base.{kind}",
            "typeVersion": version,
            "position": [x, 0],
            "parameters": parameters,
        }

    webhook = node(
        "Webhook",
        "webhook",
        2.1,
        0,
        {"httpMethod": "POST", "path": path, "responseMode": "responseNode", "options": {}},
    )
    webhook["webhookId"] = str(uuid.uuid5(seed, f"webhook-id/{path}"))
    respond = node(
        "Respond",
        "respondToWebhook",
        1.1,
        240,
        {
            "respondWith": "json",
            "responseBody": "={{ JSON.stringify({ resumeUrl: $execution.resumeUrl, "
            "execution: $execution.id }) }}",
            "options": {},
        },
    )
    wait = node(
        "Wait",
        "wait",
        1.1,
        480,
        {"resume": "webhook", "httpMethod": "POST", "responseMode": "onReceived", "options": {}},
    )
    wait["webhookId"] = str(uuid.uuid5(seed, "wait-webhook-id"))
    charge = node(
        "Charge", "httpRequest", 4.2, 720, _charge_parameters("$('Webhook').first().json.body.key")
    )
    order = ["Webhook", "Respond", "Wait", "Charge"]
    return {
        "name": f"n8n-chaos probe {name}",
        "nodes": [webhook, respond, wait, charge],
        "connections": {
            a: {"main": [[{"node": b, "type": "main", "index": 0}]]}
            for a, b in itertools.pairwise(order)
        },
        "settings": {
            "executionOrder": "v1",
            "saveDataSuccessExecution": "all",
            "saveDataErrorExecution": "all",
            "saveExecutionProgress": True,
        },
    }


def error_recorder_workflow(name: str, reference: str) -> dict[str, Any]:
    """``Error Trigger -> Record (HTTP POST /v1/charges, reference ``reference``)``: an
    Error Workflow whose every run commits one charge under its own reference (so its runs
    are counted at the provider as well as by its execution rows)."""
    seed = uuid.uuid5(uuid.NAMESPACE_URL, f"n8n-chaos-probe/{name}/error-workflow")
    return {
        "name": f"n8n-chaos probe {name} (Error Workflow)",
        "nodes": [
            {
                "id": str(uuid.uuid5(seed, "error-trigger")),
                "name": "Error Trigger",
                "type": "n8n-nodes-base.errorTrigger",
                "typeVersion": 1,
                "position": [0, 0],
                "parameters": {},
            },
            {
                "id": str(uuid.uuid5(seed, "record")),
                "name": "Record",
                "type": "n8n-nodes-base.httpRequest",
                "typeVersion": 4.2,
                "position": [240, 0],
                "parameters": _charge_parameters(repr(reference)),
            },
        ],
        "connections": {
            "Error Trigger": {"main": [[{"node": "Record", "type": "main", "index": 0}]]}
        },
        "settings": {"executionOrder": "v1", "saveDataSuccessExecution": "all"},
    }


def with_node_retries(workflow: dict[str, Any], node: str, tries: int) -> dict[str, Any]:
    """A copy of ``workflow`` whose ``node`` retries on failure (``tries`` runs in all, 100 ms
    apart: n8n's own node setting)."""
    bound = copy.deepcopy(workflow)
    for each in bound["nodes"]:
        if each["name"] == node:
            each |= {"retryOnFail": True, "maxTries": tries, "waitBetweenTries": 100}
    return bound
