"""Workflows under test: one folder per workflow, the n8n JSON plus a small manifest.

    workflows_under_test/<name>/
        manifest.json   how to trigger it, which body field is the business key, what it promises
        workflow.json   the n8n workflow (exported from n8n, or written by hand)
        ledger.sql      optional: the workflow's own ledger tables (CREATE TABLE IF NOT EXISTS ...)

``manifest.json``::

    {
      "name": "payment_idempotent",                 # = the folder name
      "description": "one line",
      "workflow": "workflow.json",
      "promise": "exactly_once",                    # exactly_once | at_most_once | none
      "trigger": {"method": "POST", "path": "pay-idempotent",
                  "body": {"order_id": "{key}", "event_id": "{event_id}", "amount": 1250}},
      "business_key": "order_id",                   # body field carrying the provider reference
      "effect": "charges",                          # charges | emails: the provider endpoint
      "ledger": {                                   # optional, and so is each field
        "schema": "ledger.sql",
        "state_query": "SELECT status FROM pay_ledger WHERE op_key = 'pay:' || %(key)s",
        "done_state": "confirmed",                  # the state once the effect is known done
        "unknown_states": ["claimed", "unknown"],   # states that mean "nobody knows yet"
        "failed_states": ["failed"]                 # states that mean "definitely not done"
      },
      "acknowledge": "after_effect",                # optional: after_effect | early (see below)
      "response": {"effect_id_field": "charge_id"}, # optional: where a 2xx answer names the effect
      "reconciler": {                               # optional: a second, webhook-triggered workflow
        "workflow": "reconciler.json",              # that resolves unknown operations; the harness
        "trigger": {"method": "POST", "path": "pay-reconcile",   # calls it once faults healed
                    "body": {"order_id": "{key}"}}
      },
      "error_workflow": {                           # optional: an n8n Error Workflow (Error
        "workflow": "error_workflow.json",          # Trigger) deployed first, named in the main
        "runs_query": "SELECT count(*) FROM pay_errors WHERE op_key = 'pay:' || %(key)s"
      },                                            # workflow's settings.errorWorkflow
      "negative_control": {                         # optional: a deliberately broken workflow
        "bug": "one line",                          # that the matrix runs only in these scenarios,
        "caught_by": {"retry-worker_kill-after_commit": "DUPLICATE"}   # expecting this verdict
      }
    }

``load_manifest(folder)`` reads one folder, ``discover(root)`` every folder under a root. Every
problem is a ``ConfigError`` that names the file, the field and the fix. The workflow JSON is
checked as far as the harness relies on it: exactly one Webhook node, whose path and method are
the manifest's, with ``responseMode`` ``lastNode``, ``responseNode`` or ``onReceived``.

When the sender's 2xx comes before the effect (``acknowledges_early``), the harness judges
the operation only after the work and the reconciler ran. The rule is explicit, never guessed
from the graph: ``responseMode: onReceived`` acknowledges early by definition; a workflow that
answers early from a Respond to Webhook node says so with ``"acknowledge": "early"``
(``lastNode`` cannot answer early). A reconciler's webhook must answer synchronously: the
harness waits for its answer before judging.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from fake_providers.payment import Effect as ProviderEffect
from harness.errors import ConfigError

MANIFEST_FILE = "manifest.json"
WEBHOOK_NODE_TYPE = "n8n-nodes-base.webhook"
ERROR_TRIGGER_NODE_TYPE = "n8n-nodes-base.errorTrigger"
KEY_PLACEHOLDER = "{key}"
EVENT_ID_PLACEHOLDER = "{event_id}"
STATE_QUERY_PARAMETER = "%(key)s"
# n8n's Webhook node answers GET when httpMethod is absent.
WEBHOOK_DEFAULT_METHOD = "GET"
SYNCHRONOUS_RESPONSE_MODES = ("lastNode", "responseNode")
EARLY_RESPONSE_MODE = "onReceived"  # n8n answers as soon as the request is received
RESPONSE_MODES = (*SYNCHRONOUS_RESPONSE_MODES, EARLY_RESPONSE_MODE)
# n8n's Webhook node acknowledges on receipt when responseMode is absent.
WEBHOOK_DEFAULT_RESPONSE_MODE = EARLY_RESPONSE_MODE
ACKNOWLEDGE_CHOICES = ("after_effect", "early")
# The verdicts a negative control may name (harness/oracle.py judges them).
NEGATIVE_CONTROL_VERDICTS = (
    "DUPLICATE",
    "LOST",
    "NOT-DONE",
    "CONTRADICTED",
    "STRAY",
    "UNRECONCILED",
    "UNHANDLED",
    "STUCK",
)
HTTP_METHODS = ("DELETE", "GET", "HEAD", "PATCH", "POST", "PUT")

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
# A static production path: no leading/trailing slash, no ":param" segments, no whitespace.
_PATH = re.compile(r"^[A-Za-z0-9_.~-]+(/[A-Za-z0-9_.~-]+)*$")
# <delivery>-<fault>-<crash point>, e.g. retry-worker_kill-after_commit.
_SCENARIO_ID = re.compile(r"^[a-z0-9_]+-[a-z0-9_]+-[a-z0-9_]+$")
# A dotted path into a JSON answer: charge_id, data.charge.id, items.0.id
_DOTTED = re.compile(r"^[A-Za-z0-9_$]+(\.[A-Za-z0-9_$]+)*$")

_TOP_FIELDS = (
    "name",
    "description",
    "workflow",
    "promise",
    "trigger",
    "business_key",
    "effect",
    "ledger",
    "acknowledge",
    "response",
    "reconciler",
    "error_workflow",
    "negative_control",
)
_TRIGGER_FIELDS = ("method", "path", "body")
_LEDGER_FIELDS = ("schema", "state_query", "done_state", "unknown_states", "failed_states")
_RESPONSE_FIELDS = ("effect_id_field",)
_RECONCILER_FIELDS = ("workflow", "trigger")
_ERROR_WORKFLOW_FIELDS = ("workflow", "runs_query")
_NEGATIVE_CONTROL_FIELDS = ("bug", "caught_by")

T = TypeVar("T")
E = TypeVar("E", bound=StrEnum)


class Promise(StrEnum):
    """What the workflow claims about its side effect, per business event."""

    EXACTLY_ONCE = "exactly_once"
    AT_MOST_ONCE = "at_most_once"
    NONE = "none"  # naive: nothing promised; the harness is expected to catch it


class EffectEndpoint(StrEnum):
    """Which endpoint of the fake provider is the workflow's side effect."""

    CHARGES = "charges"
    EMAILS = "emails"

    @property
    def provider_effect(self) -> ProviderEffect:
        """The effect kind the provider records its commits under."""
        return ProviderEffect.CHARGE if self is EffectEndpoint.CHARGES else ProviderEffect.EMAIL


@dataclass(frozen=True)
class Companion:
    """A second workflow the harness triggers itself through its webhook (the reconciler):
    ``render_body`` gives the body for one business key, like the main trigger's."""

    workflow: dict[str, Any] = field(hash=False, repr=False)
    method: str
    path: str
    body_template: dict[str, Any] = field(hash=False)

    def render_body(self, key: str, event_id: str) -> dict[str, Any]:
        """The trigger body with ``{key}`` and ``{event_id}`` replaced in every string value."""
        rendered = _render(self.body_template, key, event_id)
        assert isinstance(rendered, dict)
        return rendered

    def with_path(self, path: str) -> Companion:
        """A copy whose Webhook node (and trigger) use another path."""
        where = f"{self.workflow.get('name')}: with_path({path!r})"
        _check_path(path, where)
        workflow = copy.deepcopy(self.workflow)
        _webhook_node(workflow, where)["parameters"]["path"] = path
        return dataclasses.replace(self, workflow=workflow, path=path)


@dataclass(frozen=True)
class ErrorWorkflowSpec:
    """An n8n Error Workflow (it starts with an Error Trigger): deployed before the main
    workflow, whose ``settings.errorWorkflow`` names it. ``runs_query`` counts how often it ran
    for one business key (``%(key)s``), from the workflow's own ledger."""

    workflow: dict[str, Any] = field(hash=False, repr=False)
    runs_query: str


@dataclass(frozen=True)
class NegativeControl:
    """A deliberately broken workflow: the matrix runs it only in the scenarios of
    ``caught_by`` (scenario id -> the verdict the harness must give there)."""

    bug: str
    caught_by: dict[str, str] = field(hash=False)


@dataclass(frozen=True)
class WorkflowUnderTest:
    """One workflow under test, validated. ``workflow`` is the n8n JSON as a dict."""

    name: str
    description: str
    promise: Promise
    workflow: dict[str, Any] = field(hash=False, repr=False)
    method: str
    path: str
    body_template: dict[str, Any] = field(hash=False)
    business_key: str
    effect: EffectEndpoint
    ledger_schema_sql: str | None = field(default=None, repr=False)
    ledger_state_query: str | None = None
    ledger_done_state: str | None = None
    ledger_unknown_states: tuple[str, ...] = ()
    ledger_failed_states: tuple[str, ...] = ()
    acknowledges_early: bool = False
    effect_id_field: str | None = None
    reconciler: Companion | None = None
    error_workflow: ErrorWorkflowSpec | None = None
    negative_control: NegativeControl | None = None
    directory: Path | None = None

    def render_body(self, key: str, event_id: str) -> dict[str, Any]:
        """The trigger body with ``{key}`` and ``{event_id}`` replaced in every string value."""
        rendered = _render(self.body_template, key, event_id)
        assert isinstance(rendered, dict)
        return rendered

    def with_path(self, path: str) -> WorkflowUnderTest:
        """A copy whose Webhook node (and trigger) use another path, e.g. a unique one per
        deployment: n8n refuses to publish two workflows on the same method and path."""
        where = f"{self.name}: with_path({path!r})"
        _check_path(path, where)
        workflow = copy.deepcopy(self.workflow)
        _webhook_node(workflow, where)["parameters"]["path"] = path
        return dataclasses.replace(self, workflow=workflow, path=path)

    def with_path_suffix(self, suffix: str) -> WorkflowUnderTest:
        """A copy whose webhook paths (main and reconciler) end in ``-<suffix>``: unique ones
        per deployment when the same workflow is deployed twice on one stack."""
        moved = self.with_path(f"{self.path}-{suffix}")
        if self.reconciler is None:
            return moved
        reconciler = self.reconciler.with_path(f"{self.reconciler.path}-{suffix}")
        return dataclasses.replace(moved, reconciler=reconciler)

    def routes(self) -> list[tuple[str, str]]:
        """Every (method, path) this workflow's webhooks take on n8n."""
        found = [(self.method, self.path)]
        if self.reconciler is not None:
            found.append((self.reconciler.method, self.reconciler.path))
        return found

    def effect_id_in(self, answer: Any) -> str | None:
        """The provider's effect id that a 2xx JSON answer carries at ``effect_id_field``
        (None when the manifest names no field or the answer lacks it)."""
        if self.effect_id_field is None:
            return None
        value = answer
        for part in self.effect_id_field.split("."):
            if isinstance(value, dict):
                value = value.get(part)
            elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
                value = value[int(part)]
            else:
                return None
        return None if value is None or isinstance(value, dict | list) else str(value)


# -- loading -------------------------------------------------------------------------------


def load_manifest(directory: Path) -> WorkflowUnderTest:
    """Read and validate ``<directory>/manifest.json`` and the files it names."""
    manifest_path = directory / MANIFEST_FILE
    if not manifest_path.is_file():
        raise ConfigError(
            f"{manifest_path}: file not found; every folder of workflows under test needs a "
            f"{MANIFEST_FILE} (see harness/manifest.py for the format)"
        )
    doc = _object(_read_json(manifest_path, "the manifest"), manifest_path, "(top level)")
    m = _Fields(manifest_path)
    m.only(doc, _TOP_FIELDS, "")

    name = m.string(doc, "name")
    if not _NAME.match(name):
        m.fail("name", f"{name!r} is not a usable name; use letters, digits, '_', '-', '.'")
    if name != directory.name:
        m.fail(
            "name",
            f"{name!r} differs from its folder {directory.name!r}; rename one so they match",
        )
    description = m.string(doc, "description", allow_empty=True)
    promise = m.choice(doc, "promise", Promise)
    effect = m.choice(doc, "effect", EffectEndpoint)

    method, path, body = _trigger(doc, m, "trigger")

    business_key = m.string(doc, "business_key")
    if body.get(business_key) != KEY_PLACEHOLDER:
        m.fail(
            "business_key",
            f"trigger.body.{business_key} must be the string {KEY_PLACEHOLDER!r}, got "
            f"{body.get(business_key, '(missing)')!r}: the provider counts commits per "
            f"reference, and the workflow must send the business key as that reference",
        )

    workflow_file = m.string(doc, "workflow")
    workflow = _load_workflow(_sibling(directory, workflow_file, m, "workflow"))
    mode = _check_webhook(workflow, directory / workflow_file, method, path, manifest_path)
    acknowledges_early = _acknowledges_early(doc, m, mode, directory / workflow_file)

    schema_sql, state_query, done_state, unknown_states, failed_states = _ledger(doc, directory, m)
    reconciler = _reconciler(doc, directory, m)
    if reconciler is not None and (reconciler.method, reconciler.path) == (method, path):
        m.fail(
            "reconciler.trigger.path",
            f"{method} {path!r} is also the main trigger; give the reconciler its own path",
        )
    negative_control = _negative_control(doc, m)
    if negative_control is not None and promise is Promise.NONE:
        m.fail(
            "negative_control",
            "a negative control breaks its own promise; set promise to what the workflow "
            "claims (exactly_once or at_most_once)",
        )
    return WorkflowUnderTest(
        name=name,
        description=description,
        promise=promise,
        workflow=workflow,
        method=method,
        path=path,
        body_template=body,
        business_key=business_key,
        effect=effect,
        ledger_schema_sql=schema_sql,
        ledger_state_query=state_query,
        ledger_done_state=done_state,
        ledger_unknown_states=unknown_states,
        ledger_failed_states=failed_states,
        acknowledges_early=acknowledges_early,
        effect_id_field=_effect_id_field(doc, m),
        reconciler=reconciler,
        error_workflow=_error_workflow(doc, directory, m),
        negative_control=negative_control,
        directory=directory,
    )


def discover(root: Path) -> list[WorkflowUnderTest]:
    """Every workflow under ``root`` (one folder each), sorted by name.

    Folders whose name starts with ``.`` or ``_`` are skipped; any other folder must hold a
    manifest. Two webhooks (main triggers and reconcilers) may not share a method and path: n8n
    would refuse to publish the second.
    """
    if not root.is_dir():
        raise ConfigError(
            f"{root}: not a folder; point the harness at the folder that holds one folder per "
            "workflow under test"
        )
    found = [
        load_manifest(folder)
        for folder in sorted(root.iterdir())
        if folder.is_dir() and not folder.name.startswith((".", "_"))
    ]
    by_route: dict[tuple[str, str], WorkflowUnderTest] = {}
    for wut in found:
        for route, field_name in zip(
            wut.routes(), ("trigger.path", "reconciler.trigger.path"), strict=False
        ):
            other = by_route.setdefault(route, wut)
            if other is not wut:
                raise ConfigError(
                    f"{_manifest_of(wut)}: field {field_name!r}: {route[0]} {route[1]!r} is "
                    f"already a webhook of {_manifest_of(other)}; give each webhook its own path"
                )
    return sorted(found, key=lambda wut: wut.name)


# -- helpers -------------------------------------------------------------------------------


def _render(value: Any, key: str, event_id: str) -> Any:
    if isinstance(value, str):
        return value.replace(KEY_PLACEHOLDER, key).replace(EVENT_ID_PLACEHOLDER, event_id)
    if isinstance(value, dict):
        return {k: _render(v, key, event_id) for k, v in value.items()}
    if isinstance(value, list):
        return [_render(v, key, event_id) for v in value]
    return value


def _manifest_of(wut: WorkflowUnderTest) -> Path | str:
    return wut.directory / MANIFEST_FILE if wut.directory else wut.name


def _check_path(path: str, where: str) -> None:
    if not _PATH.match(path):
        raise ConfigError(
            f"{where}: {path!r} is not a static webhook path; use segments of letters, digits "
            "and '_.~-' separated by '/', without a leading '/' or ':param' parts"
        )


def _read_text(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read {what}: {exc}; save it as UTF-8 text") from exc


def _read_json(path: Path, what: str) -> Any:
    text = _read_text(path, what)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{path}: line {exc.lineno} column {exc.colno}: {what} is not valid JSON "
            f"({exc.msg}); fix the syntax there (JSON has no comments or trailing commas)"
        ) from exc


def _object(value: Any, path: Path, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(
            f"{path}: {where}: expected a JSON object, got {_json_type(value)}; "
            "the file must hold one {...} object"
        )
    return value


def _sibling(directory: Path, name: str, m: _Fields, field_name: str) -> Path:
    candidate = directory / name
    if Path(name).is_absolute() or ".." in Path(name).parts:
        m.fail(field_name, f"{name!r} must be a file name inside {directory}")
    if not candidate.is_file():
        m.fail(field_name, f"file {candidate} not found; put it beside the manifest or fix it")
    return candidate


def _load_workflow(path: Path) -> dict[str, Any]:
    workflow = _object(_read_json(path, "the workflow"), path, "(top level)")
    name = workflow.get("name")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{path}: field 'name': the workflow needs a non-empty name")
    nodes = workflow.get("nodes")
    if not isinstance(nodes, list) or not all(isinstance(n, dict) for n in nodes):
        raise ConfigError(
            f"{path}: field 'nodes': expected a list of node objects, got {_json_type(nodes)}; "
            "export the workflow from n8n (Download) to get the right shape"
        )
    if not isinstance(workflow.get("connections"), dict):
        raise ConfigError(
            f"{path}: field 'connections': expected an object, got "
            f"{_json_type(workflow.get('connections'))}; export the workflow from n8n"
        )
    return workflow


def _webhook_node(workflow: dict[str, Any], where: str) -> dict[str, Any]:
    webhooks: list[dict[str, Any]] = [
        n for n in workflow["nodes"] if n.get("type") == WEBHOOK_NODE_TYPE
    ]
    if not webhooks:
        raise ConfigError(
            f"{where}: field 'nodes': no Webhook node (type {WEBHOOK_NODE_TYPE!r}); the harness "
            "triggers a workflow through its production webhook, so start it with one"
        )
    if len(webhooks) > 1:
        names = ", ".join(repr(n.get("name")) for n in webhooks)
        raise ConfigError(
            f"{where}: field 'nodes': {len(webhooks)} Webhook nodes ({names}); keep exactly one, "
            "the trigger the manifest describes"
        )
    node = webhooks[0]
    if not isinstance(node.get("parameters"), dict):
        raise ConfigError(f"{where}: Webhook node {node.get('name')!r} has no 'parameters' object")
    return node


def _check_webhook(
    workflow: dict[str, Any],
    path: Path,
    method: str,
    trigger_path: str,
    manifest_path: Path,
    modes: tuple[str, ...] = RESPONSE_MODES,
    field_prefix: str = "trigger.",
) -> str:
    """Check the Webhook node against the manifest's trigger; returns its responseMode."""
    node = _webhook_node(workflow, str(path))
    params = node["parameters"]
    label = f"{path}: Webhook node {node.get('name')!r}"
    if params.get("path") != trigger_path:
        raise ConfigError(
            f"{label}: parameters.path is {params.get('path')!r} but {manifest_path} field "
            f"'{field_prefix}path' is {trigger_path!r}; make them the same"
        )
    methods = params.get("httpMethod", WEBHOOK_DEFAULT_METHOD)
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


def _trigger(doc: dict[str, Any], m: _Fields, name: str) -> tuple[str, str, dict[str, Any]]:
    """method, path and body template of a webhook trigger (``trigger`` or
    ``reconciler.trigger``); the reconciler's body is optional."""
    trigger = m.mapping(doc, name.rsplit(".", 1)[-1], name)
    m.only(trigger, _TRIGGER_FIELDS, f"{name}.")
    method = m.string(trigger, "method", f"{name}.method").upper()
    if method not in HTTP_METHODS:
        m.fail(f"{name}.method", f"{method!r} is not one of {', '.join(HTTP_METHODS)}")
    path = m.string(trigger, "path", f"{name}.path")
    _check_path(path, f"{m.path}: field '{name}.path'")
    default: Any = {} if name != "trigger" else _Fields._MISSING
    body = m.mapping(trigger, "body", f"{name}.body", default=default)
    return method, path, body


def _acknowledges_early(doc: dict[str, Any], m: _Fields, mode: str, workflow_path: Path) -> bool:
    acknowledge = m.optional_string(doc, "acknowledge", "acknowledge")
    if acknowledge is not None and acknowledge not in ACKNOWLEDGE_CHOICES:
        m.fail(
            "acknowledge",
            f"unknown acknowledge {acknowledge!r}; use 'after_effect' (the 2xx means the effect "
            "is done) or 'early' (the 2xx only means the event was accepted)",
        )
    if mode == EARLY_RESPONSE_MODE:
        if acknowledge == "after_effect":
            m.fail(
                "acknowledge",
                f"'after_effect' but the Webhook node of {workflow_path} has responseMode "
                f"'{EARLY_RESPONSE_MODE}', which answers before any work; drop the field or "
                "set it to 'early'",
            )
        return True
    if acknowledge == "early" and mode != "responseNode":
        m.fail(
            "acknowledge",
            f"'early' but the Webhook node of {workflow_path} has responseMode {mode!r}, which "
            "answers after the last node; use 'responseNode' with a Respond to Webhook node "
            f"placed before the effect, or '{EARLY_RESPONSE_MODE}'",
        )
    return acknowledge == "early"


def _effect_id_field(doc: dict[str, Any], m: _Fields) -> str | None:
    response = m.mapping(doc, "response", default={})
    m.only(response, _RESPONSE_FIELDS, "response.")
    dotted = m.optional_string(response, "effect_id_field", "response.effect_id_field")
    if dotted is not None and not _DOTTED.match(dotted):
        m.fail(
            "response.effect_id_field",
            f"{dotted!r} is not a dotted path; name the field of the 2xx JSON answer that "
            "holds the provider's id, e.g. 'charge_id' or 'charge.id'",
        )
    return dotted


def _reconciler(doc: dict[str, Any], directory: Path, m: _Fields) -> Companion | None:
    if doc.get("reconciler") is None:
        return None
    spec = m.mapping(doc, "reconciler")
    m.only(spec, _RECONCILER_FIELDS, "reconciler.")
    method, path, body = _trigger(spec, m, "reconciler.trigger")
    workflow_file = m.string(spec, "workflow", "reconciler.workflow")
    workflow = _load_workflow(_sibling(directory, workflow_file, m, "reconciler.workflow"))
    _check_webhook(
        workflow,
        directory / workflow_file,
        method,
        path,
        m.path,
        SYNCHRONOUS_RESPONSE_MODES,
        "reconciler.trigger.",
    )
    return Companion(workflow=workflow, method=method, path=path, body_template=body)


def _error_workflow(doc: dict[str, Any], directory: Path, m: _Fields) -> ErrorWorkflowSpec | None:
    if doc.get("error_workflow") is None:
        return None
    spec = m.mapping(doc, "error_workflow")
    m.only(spec, _ERROR_WORKFLOW_FIELDS, "error_workflow.")
    workflow_file = m.string(spec, "workflow", "error_workflow.workflow")
    workflow_path = _sibling(directory, workflow_file, m, "error_workflow.workflow")
    workflow = _load_workflow(workflow_path)
    triggers = [n for n in workflow["nodes"] if n.get("type") == ERROR_TRIGGER_NODE_TYPE]
    if len(triggers) != 1:
        raise ConfigError(
            f"{workflow_path}: field 'nodes': {len(triggers)} Error Trigger nodes (type "
            f"{ERROR_TRIGGER_NODE_TYPE!r}); an Error Workflow starts with exactly one"
        )
    if any(n.get("type") == WEBHOOK_NODE_TYPE for n in workflow["nodes"]):
        raise ConfigError(
            f"{workflow_path}: field 'nodes': an Error Workflow has a Webhook node; n8n starts "
            "it with the failed execution's data, remove the Webhook node"
        )
    runs_query = m.string(spec, "runs_query", "error_workflow.runs_query")
    if STATE_QUERY_PARAMETER not in runs_query:
        m.fail(
            "error_workflow.runs_query",
            f"the query must count the Error Workflow's runs for one business key with the "
            f"placeholder {STATE_QUERY_PARAMETER} (psycopg named parameter)",
        )
    return ErrorWorkflowSpec(workflow=workflow, runs_query=runs_query)


def _negative_control(doc: dict[str, Any], m: _Fields) -> NegativeControl | None:
    if doc.get("negative_control") is None:
        return None
    spec = m.mapping(doc, "negative_control")
    m.only(spec, _NEGATIVE_CONTROL_FIELDS, "negative_control.")
    bug = m.string(spec, "bug", "negative_control.bug")
    if "\n" in bug.strip():
        m.fail("negative_control.bug", "say the bug in one line")
    caught_by = m.mapping(spec, "caught_by", "negative_control.caught_by")
    if not caught_by:
        m.fail(
            "negative_control.caught_by",
            "empty; name at least one scenario id and the verdict expected there, e.g. "
            '{"retry-worker_kill-after_commit": "DUPLICATE"}',
        )
    for scenario, verdict in caught_by.items():
        name = f"negative_control.caught_by.{scenario}"
        if not _SCENARIO_ID.match(scenario):
            m.fail(
                name,
                f"{scenario!r} is not a scenario id; write <delivery>-<fault>-<crash point> "
                "in lower case, e.g. 'retry-worker_kill-after_commit' (n8n-chaos list)",
            )
        if verdict not in NEGATIVE_CONTROL_VERDICTS:
            m.fail(
                name,
                f"unknown verdict {verdict!r}; use one of {', '.join(NEGATIVE_CONTROL_VERDICTS)}",
            )
    return NegativeControl(bug=bug, caught_by=dict(caught_by))


def _ledger(
    doc: dict[str, Any], directory: Path, m: _Fields
) -> tuple[str | None, str | None, str | None, tuple[str, ...], tuple[str, ...]]:
    ledger = m.mapping(doc, "ledger", default={})
    m.only(ledger, _LEDGER_FIELDS, "ledger.")
    schema_sql = None
    schema_file = m.optional_string(ledger, "schema", "ledger.schema")
    if schema_file is not None:
        schema_path = _sibling(directory, schema_file, m, "ledger.schema")
        schema_sql = _read_text(schema_path, "the ledger schema")
        if not schema_sql.strip():
            m.fail(
                "ledger.schema", f"{schema_path} is empty; put the CREATE TABLE statements in it"
            )
    state_query = m.optional_string(ledger, "state_query", "ledger.state_query")
    if state_query is not None and STATE_QUERY_PARAMETER not in state_query:
        m.fail(
            "ledger.state_query",
            f"the query must select by the business key with the placeholder "
            f"{STATE_QUERY_PARAMETER} (psycopg named parameter)",
        )
    done_state = m.optional_string(ledger, "done_state", "ledger.done_state")
    unknown = _states(ledger, "unknown_states", m)
    failed = _states(ledger, "failed_states", m)
    if (done_state is not None or unknown or failed) and state_query is None:
        m.fail(
            "ledger.state_query",
            "missing: done_state/unknown_states/failed_states name states of a query; add "
            "the state_query",
        )
    overlap = sorted(set(failed) & {*unknown, *([done_state] if done_state else [])})
    if overlap:
        m.fail(
            "ledger.failed_states",
            f"{', '.join(map(repr, overlap))} is also the done state or an unknown state; a "
            "failed state means 'definitely not done', so list each state once",
        )
    return schema_sql, state_query, done_state, unknown, failed


def _states(ledger: dict[str, Any], key: str, m: _Fields) -> tuple[str, ...]:
    states = ledger.get(key, [])
    if not isinstance(states, list) or not all(isinstance(s, str) and s for s in states):
        m.fail(f"ledger.{key}", f"expected a list of state names, got {states!r}")
    return tuple(states)


def _json_type(value: Any) -> str:
    names: Mapping[type, str] = {
        dict: "an object",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        type(None): "null",
    }
    return names.get(type(value), type(value).__name__)


class _Fields:
    """Typed reads of manifest fields; every failure names the file, the field and the fix."""

    _MISSING = object()

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, name: str, problem: str) -> NoReturn:
        raise ConfigError(f"{self.path}: field {name!r}: {problem}")

    def only(self, doc: dict[str, Any], known: tuple[str, ...], prefix: str) -> None:
        for key in doc:
            if key not in known:
                self.fail(
                    prefix + key,
                    f"unknown field; the known ones are {', '.join(prefix + k for k in known)}",
                )

    def _get(self, doc: dict[str, Any], key: str, name: str, default: Any) -> Any:
        value = doc.get(key, self._MISSING)
        if value is self._MISSING:
            if default is self._MISSING:
                self.fail(name, "missing; add it (see harness/manifest.py for the format)")
            return default
        return value

    def _typed(
        self,
        doc: dict[str, Any],
        key: str,
        name: str | None,
        kind: type[T],
        what: str,
        default: Any = _MISSING,
    ) -> T:
        name = name or key
        value = self._get(doc, key, name, default)
        if not isinstance(value, kind):
            self.fail(name, f"expected {what}, got {_json_type(value)} {value!r}")
        return value

    def string(
        self, doc: dict[str, Any], key: str, name: str | None = None, allow_empty: bool = False
    ) -> str:
        value = self._typed(doc, key, name, str, "a string")
        if not value.strip() and not allow_empty:
            self.fail(name or key, "must not be empty")
        return value

    def optional_string(self, doc: dict[str, Any], key: str, name: str) -> str | None:
        if doc.get(key) is None:
            return None
        return self.string(doc, key, name)

    def mapping(
        self, doc: dict[str, Any], key: str, name: str | None = None, default: Any = _MISSING
    ) -> dict[str, Any]:
        value: dict[str, Any] = self._typed(doc, key, name, dict, "an object", default)
        return value

    def choice(self, doc: dict[str, Any], key: str, kind: type[E]) -> E:
        value = self.string(doc, key)
        try:
            return kind(value)
        except ValueError:
            known = ", ".join(repr(str(v)) for v in kind)
            self.fail(key, f"unknown {key} {value!r}; use one of {known}")
