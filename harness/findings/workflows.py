"""The minimal workflows probes deploy: a webhook that charges the fake provider once.

``Webhook (answers with the last node) -> Charge (HTTP POST /v1/charges, no node retries,
no Idempotency-Key)``: every run of the Charge node that reaches the provider is one commit,
so the provider's commits count how often n8n ran the execution's work.
"""

from __future__ import annotations

import uuid
from typing import Any

# Far beyond any hold or pause a probe makes: the HTTP node never times out on its own.
CHARGE_TIMEOUT_MS = 240_000


def charge_workflow(name: str, path: str) -> dict[str, Any]:
    seed = uuid.uuid5(uuid.NAMESPACE_URL, f"n8n-chaos-probe/{name}")
    return {
        "name": f"n8n-chaos probe {name}",
        "nodes": [
            {
                "id": str(uuid.uuid5(seed, "webhook")),
                "name": "Webhook",
                "type": "n8n-nodes-base.webhook",
                "typeVersion": 2.1,
                "position": [0, 0],
                "webhookId": str(uuid.uuid5(seed, f"webhook-id/{path}")),
                "parameters": {
                    "httpMethod": "POST",
                    "path": path,
                    "responseMode": "lastNode",
                    "options": {},
                },
            },
            {
                "id": str(uuid.uuid5(seed, "charge")),
                "name": "Charge",
                "type": "n8n-nodes-base.httpRequest",
                "typeVersion": 4.2,
                "position": [240, 0],
                "parameters": {
                    "method": "POST",
                    "url": "={{ $env.N8N_CHAOS_UPSTREAM_PROVIDER }}/v1/charges",
                    "sendBody": True,
                    "contentType": "json",
                    "specifyBody": "json",
                    "jsonBody": "={{ JSON.stringify({ amount: 1250, currency: 'EUR', "
                    "reference: $json.body.key }) }}",
                    "options": {"timeout": CHARGE_TIMEOUT_MS},
                },
            },
        ],
        "connections": {
            "Webhook": {"main": [[{"node": "Charge", "type": "main", "index": 0}]]},
        },
        "settings": {
            "executionOrder": "v1",
            "saveDataSuccessExecution": "all",
            "saveDataErrorExecution": "all",
            "saveExecutionProgress": True,
        },
    }
