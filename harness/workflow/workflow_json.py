"""Internal: Checks of an n8n workflow's JSON, as far as the harness relies on it.

The JSON is taken as the n8n editor exports it: ``id``, ``active``, ``pinData``, ``meta``,
``tags``, ``settings``, ``versionId`` may be there or not, and a missing ``name`` is the
folder's name. Errors (``ConfigError``): the shape n8n exports, exactly one trigger the harness
can drive (a Webhook node, or n8n's Form Trigger) whose path, method and responseMode match
the manifest. Warnings (one line each, never an error): the two things
that silently make a case meaningless: the workflow does not reach the provider through
``$env.N8N_CHAOS_UPSTREAM_PROVIDER`` (so no fault and no ground truth sees its calls), or it
never sends the business key as the provider's ``reference`` (so its commits are not counted).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from harness.errors import ConfigError
from harness.stack.triggers import (
    FORM_TRIGGER_NODE_TYPE,
    SERVICE_TRIGGER_WEBHOOK_PATH,
    TRIGGER_NODE_TYPES,
    WEBHOOK_NODE_TYPE,
    trigger_of,
    trigger_path_of,
)
from harness.workflow import service_triggers
from harness.workflow.manifest_model import json_type

FORM_METHOD = "POST"
ERROR_TRIGGER_NODE_TYPE = "n8n-nodes-base.errorTrigger"
WAIT_NODE_TYPE = "n8n-nodes-base.wait"
# How a node reads the parked execution's resume URL (the second is the older alias).
RESUME_URL_EXPRESSIONS = ("$execution.resumeUrl", "$resumeWebhookUrl")
_UNIT_S = {"seconds": 1.0, "minutes": 60.0, "hours": 3600.0, "days": 86400.0}
# n8n's Webhook node answers GET when httpMethod is absent.
WEBHOOK_DEFAULT_METHOD = "GET"
SYNCHRONOUS_RESPONSE_MODES = ("lastNode", "responseNode")
EARLY_RESPONSE_MODE = "onReceived"  # n8n answers as soon as the request is received
RESPONSE_MODES = (*SYNCHRONOUS_RESPONSE_MODES, EARLY_RESPONSE_MODE)
# n8n's Webhook node acknowledges on receipt when responseMode is absent.
WEBHOOK_DEFAULT_RESPONSE_MODE = EARLY_RESPONSE_MODE
# harness/stack/n8n.py upstream_env_name("provider"): the provider's URL behind its proxy.
PROVIDER_ENV = "N8N_CHAOS_UPSTREAM_PROVIDER"

# `reference: <expr>` in code or a JSON body, `"reference": "<expr>"`.
_REFERENCE = re.compile(r"""["']?\breference["']?\s*:\s*([^,}\n;]+)""")
_BRACKET = re.compile(r"""\[\s*["']([^"']+)["']\s*\]""")
# Member accesses and calls only ($('Webhook').first().json.body.order_id): no operators.
_MEMBER_PATH = re.compile(r"""^[\w$.()'"]+$""")
_CONVERSIONS = re.compile(r"^String\((.*)\)$|^(.*)\.toString\(\)$")
IDEMPOTENCY_HEADER = "idempotency-key"
# A name in a JSON object (n8n's "Using JSON" headers): `"Idempotency-Key": ...`.
_QUOTED_NAME = re.compile(r"""["']([\w-]+)["']\s*:""")


def load_workflow(path: Path, read_json: Any, default_name: str | None = None) -> dict[str, Any]:
    """The workflow JSON of ``path`` (``read_json`` reads it with the loader's messages).
    An export without ``name`` is named ``default_name`` (the folder's name), if given."""
    workflow = single_workflow(read_json(path, "the workflow"), path)
    if not isinstance(workflow, dict):
        raise ConfigError(
            f"{path}: (top level): expected a JSON object, got {json_type(workflow)}; "
            "the file must hold one {...} object"
        )
    if "name" not in workflow and default_name is not None:
        workflow["name"] = default_name
    name = workflow.get("name")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{path}: field 'name': the workflow needs a non-empty name")
    nodes = workflow.get("nodes")
    if not isinstance(nodes, list) or not all(isinstance(n, dict) for n in nodes):
        raise ConfigError(
            f"{path}: field 'nodes': expected a list of node objects, got {json_type(nodes)}; "
            "export the workflow from n8n (Download) to get the right shape"
        )
    if not isinstance(workflow.get("connections"), dict):
        raise ConfigError(
            f"{path}: field 'connections': expected an object, got "
            f"{json_type(workflow.get('connections'))}; export the workflow from n8n"
        )
    _check_connections(workflow, path)
    _check_node_ids(nodes, path)
    return workflow


# n8n keeps a node's id in 36 characters (the editor's UUIDs); 2.40's publication records a
# trigger's status under it, fails on a longer one and then stalls the next publications.
NODE_ID_MAX = 36


def _check_node_ids(nodes: list[dict[str, Any]], path: Path) -> None:
    for node in nodes:
        node_id = node.get("id")
        if isinstance(node_id, str) and len(node_id) > NODE_ID_MAX:
            raise ConfigError(
                f"{path}: node {node.get('name')!r}: id {node_id!r} has {len(node_id)} "
                f"characters; n8n keeps node ids in {NODE_ID_MAX} (the editor's UUIDs, e.g. "
                "'5b0e3a1c-7d2f-4f6a-9a61-0c4e8f2b1a01'): give it a UUID, or export the "
                "workflow from n8n"
            )


def single_workflow(doc: Any, path: Path) -> Any:
    """The one workflow of a file that wraps it: a JSON array (``n8n export:workflow --all``,
    a copy of several) holding one, or ``{"data": ...}`` (the shape of n8n's API answers); any other
    document as it is. A file of several workflows is a ``ConfigError``."""
    if isinstance(doc, dict) and "nodes" not in doc and isinstance(doc.get("data"), dict | list):
        doc = doc["data"]
    if not isinstance(doc, list):
        return doc
    if len(doc) != 1:
        raise ConfigError(
            f"{path}: (top level): the file holds {len(doc)} workflows, not one (as `n8n "
            "export:workflow --all` writes them); put each workflow in a file of its own "
            "(`--separate` does): one folder per workflow under test, those it calls beside it"
        )
    return doc[0]


def _check_connections(workflow: dict[str, Any], path: Path) -> None:
    """Every connection joins two nodes of the file, by name (n8n refuses the workflow
    otherwise, with a longer message, only when the stack is up)."""
    names = {node.get("name") for node in workflow["nodes"]}
    for source, outputs in workflow["connections"].items():
        missing = [name for name in (source, *connection_targets(outputs)) if name not in names]
        if missing:
            raise ConfigError(
                f"{path}: field 'connections.{source}': names node {missing[0]!r}, which the "
                "file does not have (connections name nodes by their 'name'); fix or remove "
                "the connection in the editor and export the workflow again"
            )


def connection_targets(outputs: Any) -> list[Any]:
    """The nodes one node's outputs connect to, as its ``connections`` entry names them
    (every kind of output, every branch), in order; what is not a link is skipped."""
    return [
        link.get("node")
        for kind in (outputs.values() if isinstance(outputs, dict) else [])
        for branch in (kind if isinstance(kind, list) else [])
        for link in (branch if isinstance(branch, list) else [])
        if isinstance(link, dict)
    ]


def webhook_node(workflow: dict[str, Any], where: str) -> dict[str, Any]:
    """The workflow's one trigger node the harness drives: a Webhook or a Form Trigger
    (disabled nodes do not count: n8n registers no webhook for them)."""
    webhooks: list[dict[str, Any]] = [
        n
        for n in workflow["nodes"]
        if n.get("type") in TRIGGER_NODE_TYPES and not n.get("disabled", False)
    ]
    if not webhooks and (unserved := service_triggers.unserved_trigger(workflow["nodes"])):
        raise ConfigError(service_triggers.unserved_message(where, unserved))
    if not webhooks:
        others = [
            f"{n.get('name')!r} ({n.get('type')})"
            for n in workflow["nodes"]
            if str(n.get("type", "")).endswith(("Trigger", ".cron", ".interval"))
        ]
        started = f"it starts from {', '.join(others)}, which " if others else ""
        raise ConfigError(
            f"{where}: field 'nodes': no Webhook node (type {WEBHOOK_NODE_TYPE!r}) or Form "
            f"Trigger ({FORM_TRIGGER_NODE_TYPE!r}); {started}the harness cannot fire: it "
            "delivers each event to a production webhook (a scheduled or polling workflow is "
            "not run), so for the test start the workflow with a Webhook node that receives "
            "the event"
        )
    if len(webhooks) > 1:
        names = ", ".join(repr(n.get("name")) for n in webhooks)
        raise ConfigError(
            f"{where}: field 'nodes': {len(webhooks)} Webhook/Form Trigger nodes ({names}); keep "
            "exactly one, the trigger the manifest describes"
        )
    node = webhooks[0]
    if not isinstance(node.get("parameters"), dict):
        raise ConfigError(f"{where}: Webhook node {node.get('name')!r} has no 'parameters' object")
    return node


def check_webhook(
    workflow: dict[str, Any],
    path: Path,
    method: str,
    trigger_path: str,
    manifest_path: Path,
    modes: tuple[str, ...] = RESPONSE_MODES,
    field_prefix: str = "trigger.",
) -> str:
    """Check the Webhook node against the manifest's trigger; returns its responseMode."""
    node = webhook_node(workflow, str(path))
    params = node["parameters"]
    is_form = node.get("type") == FORM_TRIGGER_NODE_TYPE
    label = f"{path}: {'Form Trigger' if is_form else 'Webhook'} node {node.get('name')!r}"
    where_path = "parameters.path"
    if trigger_of(str(node.get("type"))) is not None:
        label = f"{path}: {node.get('type')} node {node.get('name')!r}"
        where_path = f"its webhook path (webhookId/{SERVICE_TRIGGER_WEBHOOK_PATH})"
    if trigger_path_of(node) != trigger_path:
        raise ConfigError(
            f"{label}: {where_path} is {trigger_path_of(node)!r} but {manifest_path} field "
            f"'{field_prefix}path' is {trigger_path!r}; make them the same"
        )
    # A form is submitted with a POST; its GET only renders the page.
    # A service trigger's webhook is a POST (its node description's, not a parameter).
    fixed = is_form or trigger_of(str(node.get("type"))) is not None
    methods = FORM_METHOD if fixed else params.get("httpMethod", WEBHOOK_DEFAULT_METHOD)
    allowed = [methods] if isinstance(methods, str) else methods
    if not isinstance(allowed, list) or method not in [str(m).upper() for m in allowed]:
        raise ConfigError(
            f"{label}: parameters.httpMethod is {methods!r} but {manifest_path} field "
            f"'{field_prefix}method' is {method!r}; make them the same"
        )
    mode = params.get("responseMode", WEBHOOK_DEFAULT_RESPONSE_MODE)
    if mode not in modes:
        if modes == SYNCHRONOUS_RESPONSE_MODES:
            fix = (
                "the harness waits for this webhook's answer, so set it to 'lastNode' or "
                "'responseNode' (a Respond to Webhook node)"
            )
        else:
            fix = (
                "set it to 'lastNode' or 'responseNode' (answer once the effect is known) or "
                "'onReceived' (acknowledge first, work afterwards)"
            )
        raise ConfigError(f"{label}: parameters.responseMode is {mode!r}; {fix}")
    return str(mode)


# The trigger node's `authentication` parameter -> the credential type n8n checks it with.
TRIGGER_AUTH_TYPES = {"basicAuth": "httpBasicAuth", "headerAuth": "httpHeaderAuth"}


def trigger_auth_type(node: dict[str, Any], where: str) -> str | None:
    """The credential type the trigger checks each request against (None: no auth)."""
    method = node.get("parameters", {}).get("authentication", "none")
    if method in (None, "none"):
        return None
    if method not in TRIGGER_AUTH_TYPES:
        raise ConfigError(
            f"{where}: {node.get('name')!r}: parameters.authentication is {method!r}; the "
            f"harness can send only {', '.join(TRIGGER_AUTH_TYPES)} (it creates the credential "
            "and sends its secret), so switch the trigger to one of those for the test"
        )
    return TRIGGER_AUTH_TYPES[method]


def form_field_names(node: dict[str, Any]) -> dict[str, str]:
    """A Form Trigger's fields: the name its output item uses -> the name its form submits.
    n8n (Form/utils: addFormResponseDataToReturnItem) reads the submission's ``field-<i>``
    and names it ``fieldName`` from node version 2.4 when set, else ``fieldLabel``; both the
    label and the field name are accepted here."""
    if node.get("type") != FORM_TRIGGER_NODE_TYPE:
        return {}
    fields = node.get("parameters", {}).get("formFields", {})
    values = fields.get("values", []) if isinstance(fields, dict) else []
    names: dict[str, str] = {}
    for index, item in enumerate(values):
        if isinstance(item, dict):
            for key in ("fieldLabel", "fieldName"):
                if isinstance(item.get(key), str) and item[key]:
                    names.setdefault(item[key], f"field-{index}")
    return names


def check_error_workflow(workflow: dict[str, Any], path: Path) -> None:
    triggers = [n for n in workflow["nodes"] if n.get("type") == ERROR_TRIGGER_NODE_TYPE]
    if len(triggers) != 1:
        raise ConfigError(
            f"{path}: field 'nodes': {len(triggers)} Error Trigger nodes (type "
            f"{ERROR_TRIGGER_NODE_TYPE!r}); an Error Workflow starts with exactly one"
        )
    if any(n.get("type") == WEBHOOK_NODE_TYPE for n in workflow["nodes"]):
        raise ConfigError(
            f"{path}: field 'nodes': an Error Workflow has a Webhook node; n8n starts "
            "it with the failed execution's data, remove the Webhook node"
        )


# -- warnings ------------------------------------------------------------------------------


def reach_warnings(
    workflows: list[tuple[Path, dict[str, Any]]], key_path: tuple[str, ...], effect: str
) -> list[str]:
    """Why the cases of a workflow would judge nothing it did (empty: none found). The
    workflows are the main one and its companions (reconciler, Error Workflow): the call to
    the provider may sit in any of them."""
    main_path = workflows[0][0]
    if not calls_provider(workflows):
        return [
            f"{main_path}: no node calls the provider through $env.{PROVIDER_ENV} nor a "
            "host mapped in the manifest's 'upstreams'; the harness injects faults and counts "
            "commits only there, so these cases judge nothing the workflow does. Map the "
            "hosts the workflow calls in 'upstreams', or set the HTTP Request node's URL to "
            f"'={{{{ $env.{PROVIDER_ENV} }}}}/v1/{effect}'"
        ]
    dotted = ".".join(key_path)
    if not any(_is_key(expr, key_path) for expr in _references(workflows)):
        return [
            f"{main_path}: the workflow never sends the business key "
            f"(trigger.body.{dotted}) as the provider's 'reference'; the harness counts "
            f"commits per reference, so these cases would see none. Send e.g. "
            f"reference: $json.body.{dotted}"
        ]
    return []


def calls_provider(workflows: list[tuple[Path, dict[str, Any]]]) -> bool:
    """Does any node use the bundled provider's URL variable?"""
    texts = (t for _, workflow in workflows for t in _strings(workflow.get("nodes", [])))
    return any(PROVIDER_ENV in text for text in texts)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _pairs(value: Any) -> Iterator[dict[str, Any]]:
    """Every object of the JSON (n8n's keypair parameters are {"name":..,"value":..})."""
    if isinstance(value, dict):
        yield value
        for item in value.values():
            yield from _pairs(item)
    elif isinstance(value, list):
        for item in value:
            yield from _pairs(item)


def _references(workflows: list[tuple[Path, dict[str, Any]]]) -> Iterator[str]:
    """Every expression a node assigns to ``reference``."""
    for _, workflow in workflows:
        nodes = workflow.get("nodes", [])
        for pair in _pairs(nodes):
            if pair.get("name") == "reference" and isinstance(pair.get("value"), str):
                yield pair["value"]
        for text in _strings(nodes):
            for found in _REFERENCE.finditer(text):
                yield found.group(1)


def _is_key(expression: str, key_path: tuple[str, ...]) -> bool:
    """True when the expression is a plain member path ending in the business key's path:
    ``body.order_id``, ``String($json.body.order_id)``, ``={{ $json["body"]["order_id"] }}``,
    ``$('Webhook').first().json.body.order_id``; a computed value (``'order-' +
    body.order_id``) is not the key."""
    expr = expression.strip().strip("\"'")
    expr = expr.removeprefix("=").strip()
    if expr.startswith("{{") and expr.endswith("}}"):
        expr = expr[2:-2].strip()
    expr = _BRACKET.sub(lambda m: "." + m.group(1), expr).strip()
    while converted := _CONVERSIONS.match(expr):
        expr = (converted.group(1) or converted.group(2)).strip()
    if not _MEMBER_PATH.match(expr):
        return False
    dotted = ".".join(key_path)
    return expr == dotted or expr.endswith("." + dotted)


def sends_idempotency_key(workflow: dict[str, Any], headers: Iterable[str] = ()) -> bool:
    """Does an enabled node send an ``Idempotency-Key`` header (or one of ``headers``, e.g. a
    record fake's ``idempotency_header``), as a keypair header or in a JSON header object?"""
    names = {IDEMPOTENCY_HEADER, *(h.lower() for h in headers)}
    for node in workflow.get("nodes", []):
        if node.get("disabled", False):
            continue
        params = node.get("parameters")
        for pair in _pairs(params):
            name = pair.get("name")
            if isinstance(name, str) and name.strip().lower() in names:
                return True
        for text in _strings(params):
            quoted = (found.group(1).lower() for found in _QUOTED_NAME.finditer(text))
            if any(name in names for name in quoted):
                return True
    return False


def resume_wait_nodes(workflow: dict[str, Any]) -> list[str]:
    """The enabled Wait nodes that resume "On Webhook Call": each execution parks there
    until somebody calls its resume URL (an approval, a provider's callback)."""
    return [
        str(node.get("name"))
        for node in workflow.get("nodes", [])
        if node.get("type") == WAIT_NODE_TYPE
        and not node.get("disabled", False)
        and isinstance(node.get("parameters"), dict)
        and node["parameters"].get("resume") == "webhook"
    ]


def hands_out_resume_url(workflow: dict[str, Any]) -> bool:
    """Does any node use ``$execution.resumeUrl`` (the parked execution's resume URL; the
    harness learns it from the workflow's answer)?"""
    texts = _strings(workflow.get("nodes", []))
    return any(expr in text for text in texts for expr in RESUME_URL_EXPRESSIONS)


def wait_seconds(workflow: dict[str, Any]) -> float:
    """How long the workflow's Wait nodes ("after a time interval") hold an execution, in
    all: the case's deadlines grow by it, so a Wait by design is not judged STUCK. A Wait
    that resumes on a webhook, a form or a date is not counted (no interval to read)."""
    total = 0.0
    for node in workflow.get("nodes", []):
        if node.get("type") != WAIT_NODE_TYPE or node.get("disabled", False):
            continue
        params = node.get("parameters") if isinstance(node.get("parameters"), dict) else {}
        assert isinstance(params, dict)
        if params.get("resume", "timeInterval") != "timeInterval":
            continue
        first = node.get("typeVersion", 1) == 1  # version 1: 1 hour by default, later: 5 s
        amount = params.get("amount", 1 if first else 5)
        unit = _UNIT_S.get(str(params.get("unit", "hours" if first else "seconds")), 0.0)
        if isinstance(amount, int | float):
            total += float(amount) * unit
    return total


def execution_timeout_s(workflow: dict[str, Any]) -> float | None:
    """The workflow's own execution timeout (``settings.executionTimeout``, seconds; n8n
    cancels an execution that runs longer), or None when it sets none (-1 or absent)."""
    settings = workflow.get("settings")
    return timeout_s(settings.get("executionTimeout") if isinstance(settings, dict) else None)


def timeout_s(value: object) -> float | None:
    """A timeout in seconds (a number, or its text as in an environment variable); None for
    none: absent, -1 (n8n's "no timeout"), 0, or not a number."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
        return None
    return float(value)
