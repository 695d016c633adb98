"""Small workflows the integration tests deploy: a Webhook that hands its request to one
HTTP Request node, answered with that node's output."""

from __future__ import annotations

import uuid
from typing import Any


def webhook_then_http(path: str, node: str, parameters: dict[str, Any]) -> dict[str, Any]:
    """Webhook (POST ``path``, answered by the last node) -> HTTP Request ``node``."""
    return {
        "name": f"{node} {path}",
        "nodes": [
            {
                "id": str(uuid.uuid4()),
                "name": "Webhook",
                "type": "n8n-nodes-base.webhook",
                "typeVersion": 2.1,
                "position": [0, 0],
                "webhookId": str(uuid.uuid4()),
                "parameters": {
                    "httpMethod": "POST",
                    "path": path,
                    "responseMode": "lastNode",
                    "options": {},
                },
            },
            {
                "id": str(uuid.uuid4()),
                "name": node,
                "type": "n8n-nodes-base.httpRequest",
                "typeVersion": 4.2,
                "position": [220, 0],
                "parameters": parameters,
            },
        ],
        "connections": {"Webhook": {"main": [[{"node": node, "type": "main", "index": 0}]]}},
        "settings": {"executionOrder": "v1"},
    }
