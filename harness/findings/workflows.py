"""The minimal workflows probes deploy: a webhook that charges the fake provider once.

``Webhook (answers with the last node) -> Charge (HTTP POST /v1/charges, no node retries,
no Idempotency-Key)``: every run of the Charge node that reaches the provider is one commit,
so the provider's commits count how often n8n ran the execution's work.
"""

from __future__ import annotations

import uuid
from typing import Any

from harness.minimal_workflow import webhook_then_http

# Far beyond any hold or pause a probe makes: the HTTP node never times out on its own.
CHARGE_TIMEOUT_MS = 240_000


def charge_workflow(name: str, path: str) -> dict[str, Any]:
    return webhook_then_http(
        path,
        "Charge",
        {
            "method": "POST",
            "url": "={{ $env.N8N_CHAOS_UPSTREAM_PROVIDER }}/v1/charges",
            "sendBody": True,
            "contentType": "json",
            "specifyBody": "json",
            "jsonBody": "={{ JSON.stringify({ amount: 1250, currency: 'EUR', "
            "reference: $json.body.key }) }}",
            "options": {"timeout": CHARGE_TIMEOUT_MS},
        },
        name=f"n8n-chaos probe {name}",
        seed=uuid.uuid5(uuid.NAMESPACE_URL, f"n8n-chaos-probe/{name}"),
        settings={
            "saveDataSuccessExecution": "all",
            "saveDataErrorExecution": "all",
            "saveExecutionProgress": True,
        },
    )
