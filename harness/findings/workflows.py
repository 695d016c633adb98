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

from harness.workflow.minimal_workflow import webhook_then_http

# Far beyond any hold or pause a probe makes: the HTTP node never times out on its own.
CHARGE_TIMEOUT_MS = 240_000


def charge_workflow(name: str, path: str) -> dict[str, Any]:
    return webhook_then_http(
        path,
        "Charge",
        _charge_parameters("$json.body.key"),
        name=f"n8n-chaos probe {name}",
        seed=_seed(name),
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


def _seed(name: str) -> uuid.UUID:
    """Where a probe workflow's node ids come from: the same ids at every deploy."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"n8n-chaos-probe/{name}")


def _node(
    seed: uuid.UUID, label: str, kind: str, version: float, x: int, parameters: dict[str, Any]
) -> dict[str, Any]:
    return {
        "id": str(uuid.uuid5(seed, label)),
        "name": label,
        "type": f"n8n-nodes-base.{kind}",
        "typeVersion": version,
        "position": [x, 0],
        "parameters": parameters,
    }


def _chain(name: str, nodes: list[dict[str, Any]]) -> dict[str, Any]:
    """A workflow of ``nodes`` connected one after the other, every execution saved."""
    return {
        "name": f"n8n-chaos probe {name}",
        "nodes": nodes,
        "connections": {
            a["name"]: {"main": [[{"node": b["name"], "type": "main", "index": 0}]]}
            for a, b in itertools.pairwise(nodes)
        },
        "settings": {
            "executionOrder": "v1",
            "saveDataSuccessExecution": "all",
            "saveDataErrorExecution": "all",
            "saveExecutionProgress": True,
        },
    }


def _webhook(seed: uuid.UUID, path: str, response_mode: str) -> dict[str, Any]:
    webhook = _node(
        seed,
        "Webhook",
        "webhook",
        2.1,
        0,
        {"httpMethod": "POST", "path": path, "responseMode": response_mode, "options": {}},
    )
    webhook["webhookId"] = str(uuid.uuid5(seed, f"webhook-id/{path}"))
    return webhook


def _wait_then_charge(seed: uuid.UUID, x: int, wait: dict[str, Any]) -> list[dict[str, Any]]:
    """A Wait node (its parameters ``wait``) at ``x``, then the Charge node, whose reference
    is the first delivery's key."""
    reference = "$('Webhook').first().json.body.key"
    return [
        _node(seed, "Wait", "wait", 1.1, x, wait),
        _node(seed, "Charge", "httpRequest", 4.2, x + 240, _charge_parameters(reference)),
    ]


def wait_resume_workflow(name: str, path: str) -> dict[str, Any]:
    """``Webhook -> Respond to Webhook (answers {resumeUrl, execution}) -> Wait (On Webhook
    Call, POST, answered on receipt) -> Charge``: the sender learns ``$execution.resumeUrl``
    from the first answer, the execution parks as ``waiting``, and every resumed run of the
    Charge node commits one charge for the first delivery's key."""
    seed = _seed(name)
    respond = _node(
        seed,
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
    resumed = {
        "resume": "webhook",
        "httpMethod": "POST",
        "responseMode": "onReceived",
        "options": {},
    }
    wait, charge = _wait_then_charge(seed, 480, resumed)
    wait["webhookId"] = str(uuid.uuid5(seed, "wait-webhook-id"))
    return _chain(name, [_webhook(seed, path, "responseNode"), respond, wait, charge])


def wait_interval_workflow(name: str, path: str, seconds: int) -> dict[str, Any]:
    """``Webhook (answered on receipt) -> Wait (a time interval of
    ``seconds``) -> Charge``: over n8n's in-process threshold (65 s, the Wait node's code) the
    execution is parked in the database as ``waiting`` with ``waitTill``, and main's wait
    tracker starts it again once ``waitTill`` is near; each resumed run commits one charge."""
    seed = _seed(name)
    interval = {"resume": "timeInterval", "amount": seconds, "unit": "seconds"}
    return _chain(
        name, [_webhook(seed, path, "onReceived"), *_wait_then_charge(seed, 240, interval)]
    )


def error_recorder_workflow(name: str, reference: str) -> dict[str, Any]:
    """``Error Trigger -> Record (HTTP POST /v1/charges, reference ``reference``)``: an
    Error Workflow whose every run commits one charge under its own reference (so its runs
    are counted at the provider as well as by its execution rows)."""
    seed = _seed(f"{name}/error-workflow")
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
