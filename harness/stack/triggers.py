"""Internal: where n8n serves a workflow's trigger: the trigger node types the harness drives
with one HTTP request, and the production URL n8n gives each (its EndpointsConfig and
NodeHelpers.getNodeWebhookPath). Read from the workflow's JSON, no n8n needed."""

from __future__ import annotations

from typing import Any

from fake_providers.payment.triggers import TRIGGERS, ServiceTrigger
from harness.errors import ConfigError

WEBHOOK_NODE_TYPE = "n8n-nodes-base.webhook"
FORM_TRIGGER_NODE_TYPE = "n8n-nodes-base.formTrigger"
# A service's own trigger node (Stripe Trigger, ...), driven through its fake
# (harness.workflow.service_triggers).
SERVICE_TRIGGER_TYPES = {trigger.node_type: trigger for trigger in TRIGGERS.values()}
# The triggers the harness drives with one HTTP request (a form submission is a POST).
TRIGGER_NODE_TYPES = (WEBHOOK_NODE_TYPE, FORM_TRIGGER_NODE_TYPE, *SERVICE_TRIGGER_TYPES)
# n8n's path of a node's webhook that has a webhookId: <webhookId>/<the node's webhook path>
# (NodeHelpers.getNodeWebhookPath); a service trigger's own webhook path is this.
SERVICE_TRIGGER_WEBHOOK_PATH = "webhook"
# n8n's EndpointsConfig: production webhooks under /webhook, Form Triggers under /form
# (their test URLs, /webhook-test and /form-test, answer only while the editor listens).
WEBHOOK_ENDPOINT = "webhook"
FORM_ENDPOINT = "form"


def trigger_of(node_type: str) -> ServiceTrigger | None:
    return SERVICE_TRIGGER_TYPES.get(node_type)


def trigger_path_of(node: dict[str, Any]) -> Any:
    """The production path of a trigger node. A Form Trigger's is ``path``, else
    ``options.path``, else its webhookId (FormTriggerV2's webhooks[].path expression); a
    service trigger's is ``<webhookId>/webhook``."""
    params = node.get("parameters", {})
    if trigger_of(str(node.get("type"))) is not None:
        webhook_id = node.get("webhookId")
        return f"{webhook_id}/{SERVICE_TRIGGER_WEBHOOK_PATH}" if webhook_id else None
    if node.get("type") != FORM_TRIGGER_NODE_TYPE:
        return params.get("path")
    options = params.get("options") if isinstance(params.get("options"), dict) else {}
    return params.get("path") or options.get("path") or node.get("webhookId")


def webhook_path(workflow: dict[str, Any]) -> str | None:
    """The production path of the workflow's trigger below n8n's base URL:
    ``webhook/<path>`` for a Webhook node, ``form/<path>`` for a Form Trigger."""
    for node in workflow.get("nodes", []):
        if node.get("type") in TRIGGER_NODE_TYPES and not node.get("disabled", False):
            path = trigger_path_of(node)
            if not path:
                raise ConfigError(
                    f"workflow {workflow.get('name')!r}: trigger node {node.get('name')!r} has "
                    "no parameters.path; give it a unique path"
                )
            is_form = node.get("type") == FORM_TRIGGER_NODE_TYPE
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
