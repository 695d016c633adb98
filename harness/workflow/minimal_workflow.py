"""Internal: the smallest workflow the harness itself deploys (probes, tests, benchmarks): a
Webhook answered by its last node, handing its request to one HTTP Request node."""

from __future__ import annotations

import uuid
from typing import Any


def webhook_then_http(
    path: str,
    node: str,
    parameters: dict[str, Any],
    *,
    name: str | None = None,
    seed: uuid.UUID | None = None,
    settings: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Webhook (POST ``path``) -> HTTP Request ``node`` with ``parameters``. With ``seed`` the
    ids are derived from it (the same workflow each time: a redeploy finds it unchanged)."""

    def new_id(what: str) -> str:
        return str(uuid.uuid5(seed, what) if seed is not None else uuid.uuid4())

    return {
        "name": name or f"{node} {path}",
        "nodes": [
            {
                "id": new_id("webhook"),
                "name": "Webhook",
                "type": "n8n-nodes-base.webhook",
                "typeVersion": 2.1,
                "position": [0, 0],
                "webhookId": new_id(f"webhook-id/{path}"),
                "parameters": {
                    "httpMethod": "POST",
                    "path": path,
                    "responseMode": "lastNode",
                    "options": {},
                },
            },
            {
                "id": new_id(node.lower()),
                "name": node,
                "type": "n8n-nodes-base.httpRequest",
                "typeVersion": 4.2,
                "position": [240, 0],
                "parameters": parameters,
            },
        ],
        "connections": {"Webhook": {"main": [[{"node": node, "type": "main", "index": 0}]]}},
        "settings": {"executionOrder": "v1", **(settings or {})},
    }
