"""Workflows under test: one folder per workflow, the n8n JSON plus a small manifest.

    workflows_under_test/<name>/
        manifest.json   how to trigger it, where the body carries the business key, its promise
        workflow.json   the n8n workflow (exported from n8n, or written by hand)
        ledger.sql      optional: the workflow's own ledger tables (CREATE TABLE IF NOT EXISTS ...)

``ledger.schema`` may instead name a schema several workflows share, in a folder beside theirs
(``../_ledgers/charge.sql``; discovery skips ``_`` folders): it writes ``{prefix}`` where its
table names start, and each manifest's ``ledger.prefix`` (``pay``) makes its own tables of it.

The manifest's fields are pydantic models (``harness.workflow.manifest_model``; README's manifest
section describes each, ``n8n-chaos schema`` prints the JSON Schema). ``load_manifest(folder)``
reads one folder, ``discover(root)`` every folder under a root. Every problem is a
``ConfigError`` that names the file, the field and the fix. The workflow JSON is checked as far
as the harness relies on it (``harness.workflow.workflow_json``); what makes a case silently
meaningless (no call through the provider's upstream variable, no business key sent as the
reference) is a warning in ``WorkflowUnderTest.warnings``, emitted at discovery.

When the sender's 2xx comes before the effect (``acknowledges_early``), the harness judges
the operation only after the work and the reconciler ran. The rule is explicit, never guessed
from the graph: ``responseMode: onReceived`` acknowledges early by definition; a workflow that
answers early from a Respond to Webhook node says so with ``"acknowledge": "early"``
(``lastNode`` cannot answer early). A reconciler's webhook must answer synchronously: the
harness waits for its answer before judging.
"""

from __future__ import annotations

import base64
import copy
import dataclasses
import hashlib
import importlib.resources
import json
import re
import secrets
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from harness.errors import ConfigError
from harness.stack.triggers import FORM_TRIGGER_NODE_TYPE, trigger_of
from harness.workflow import answer_timing, subworkflows, upstream_config
from harness.workflow import credentials as creds
from harness.workflow import manifest_model as mm
from harness.workflow import workflow_hosts as wh
from harness.workflow import workflow_json as wj
from harness.workflow.credential_fill import FillContext, credential_data
from harness.workflow.manifest_model import (
    EVENT_ID_PLACEHOLDER,
    KEY_PLACEHOLDER,
    NEGATIVE_CONTROL_VERDICTS,
    EffectEndpoint,
    Promise,
)
from harness.workflow.manifest_upstreams import UpstreamSpec

if TYPE_CHECKING:
    from fake_providers.payment.triggers import ServiceTrigger
    from fake_providers.upstreams import Upstream

__all__ = [
    "KEY_PLACEHOLDER",
    "MANIFEST_FILE",
    "NEGATIVE_CONTROL_VERDICTS",
    "PROJECT_FILE",
    "Companion",
    "EffectEndpoint",
    "ErrorWorkflowSpec",
    "ManifestWarning",
    "NegativeControl",
    "Promise",
    "TriggerAuth",
    "TriggerRequest",
    "WorkflowUnderTest",
    "case_key",
    "discover",
    "load_manifest",
    "load_project",
]

MANIFEST_FILE = "manifest.json"
# What a manifest written in YAML is called: refused with the fix (convert it to JSON).
YAML_MANIFEST_FILES = ("manifest.yaml", "manifest.yml")
# A folder of n8n exports judged together (harness.workflow.manifest_model.ProjectManifest).
PROJECT_FILE = "n8n-chaos-project.json"
# The Content-Type that makes the sender post the body as a multipart form (Form Trigger).
FORM_CONTENT_TYPE = "multipart/form-data"
FORM_CONTENT_TYPE_HEADER = "Content-Type"


_NOT_IN_KEY = re.compile(r"[^\w.\-]")


def case_key(case_id: str) -> str:
    """A fresh business key for one run of a case: "<case id>-<10 hex digits>", in the
    characters a default reference finds inside a text (fake_providers.upstreams.KEY_IN_TEXT:
    a Slack message, an SMS, "<key>@example.com")."""
    stem = _NOT_IN_KEY.sub("_", case_id[:40])
    return f"{stem}-{secrets.token_hex(5)}"


class ManifestWarning(UserWarning):
    """A workflow loads, but its cases may judge nothing it does (see ``warnings``)."""


@dataclass(frozen=True)
class TriggerRequest:
    """One rendered webhook request: the JSON body, extra headers and the query string."""

    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    query: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class TriggerAuth:
    """The credential the trigger node checks each request against (Basic or header auth):
    the harness creates it with this data (a secret new at every load) and sends it."""

    credential_type: str
    data: dict[str, Any] = field(repr=False)

    def headers(self) -> dict[str, str]:
        if self.credential_type == "httpBasicAuth":
            pair = f"{self.data.get('user', '')}:{self.data.get('password', '')}"
            return {"Authorization": "Basic " + base64.b64encode(pair.encode()).decode()}
        return {str(self.data.get("name", "")): str(self.data.get("value", ""))}


@dataclass(frozen=True)
class _Triggered:
    """A workflow the harness triggers through its webhook, and how."""

    workflow: dict[str, Any] = field(hash=False, repr=False)
    method: str
    path: str
    body_template: dict[str, Any] = field(hash=False)
    headers_template: dict[str, str] = field(default_factory=dict, hash=False, kw_only=True)
    query_template: dict[str, Any] = field(default_factory=dict, hash=False, kw_only=True)
    # A Form Trigger's fields: the body's key (the field's label) -> the name posted.
    form_fields: dict[str, str] | None = field(default=None, hash=False, kw_only=True)
    trigger_auth: TriggerAuth | None = field(
        default=None, hash=False, compare=False, repr=False, kw_only=True
    )

    def render_body(self, key: str, event_id: str) -> dict[str, Any]:
        """The trigger body with ``{key}`` and ``{event_id}`` replaced in every string value;
        for a Form Trigger, the form's fields (``field-0``: value, ...)."""
        rendered = _render(self.body_template, key, event_id)
        assert isinstance(rendered, dict)
        fields = self.form_fields
        if fields is None:
            return rendered
        return {
            fields.get(str(k), str(k)): v if isinstance(v, str) else json.dumps(v)
            for k, v in rendered.items()
        }

    def render_request(self, key: str, event_id: str) -> TriggerRequest:
        """Body, headers and query string, each with ``{key}`` and ``{event_id}`` replaced;
        the headers carry the trigger's auth and, for a form, its content type."""
        headers = {FORM_CONTENT_TYPE_HEADER: FORM_CONTENT_TYPE} if self.form_fields else {}
        headers |= self.trigger_auth.headers() if self.trigger_auth else {}
        headers |= {k: str(_render(v, key, event_id)) for k, v in self.headers_template.items()}
        query = {k: _query_value(_render(v, key, event_id)) for k, v in self.query_template.items()}
        return TriggerRequest(self.render_body(key, event_id), headers, query)


@dataclass(frozen=True)
class Companion(_Triggered):
    """A second workflow the harness triggers itself through its webhook (the reconciler)."""

    def with_path(self, path: str) -> Companion:
        """A copy whose Webhook node (and trigger) use another path."""
        return dataclasses.replace(self, workflow=_moved(self.workflow, path), path=path)


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
    ``caught_by`` (scenario id -> the verdict the harness must give there), and ``passes``
    (scenario ids where its guard holds: PASS)."""

    bug: str
    caught_by: dict[str, str] = field(hash=False)
    passes: tuple[str, ...] = ()


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
    effects_per_event: int = 1  # a line item each: exactly this many of each kind is once
    # Its sender hears only after n8n and the ledger wrote (harness.workflow.answer_timing).
    answers_after_writes: bool = False
    effect_id_field: str | None = None
    reconciler: Companion | None = None
    error_workflow: ErrorWorkflowSpec | None = None
    negative_control: NegativeControl | None = None
    # Opt-in faults (``Fault.opt_in``) this workflow runs too (manifest production_faults).
    production_faults: tuple[str, ...] = ()
    # Globs over scenario ids: the matrix keeps only these (manifest scenarios); () = all.
    scenarios: tuple[str, ...] = ()
    directory: Path | None = None
    headers_template: dict[str, str] = field(default_factory=dict, hash=False)
    query_template: dict[str, Any] = field(default_factory=dict, hash=False)
    # Why its cases may judge nothing it does (one line each); loading still succeeded.
    warnings: tuple[str, ...] = ()
    # The workflow file's sha256 (of its bytes): evidence of which export was judged.
    file_sha256: str = ""
    # The deployment's environment ($env.NAME) and n8n Variables ($vars.NAME), secrets
    # generated: every n8n process of the stack gets the env (harness.front.plugin).
    env: dict[str, str] = field(default_factory=dict, hash=False, repr=False)
    variables: dict[str, str] = field(default_factory=dict, hash=False, repr=False)
    # Where its manifest is (a folder's manifest.json or a project's entry), for messages.
    manifest_label: str = ""
    # The workflows it calls (Execute Workflow nodes, settings.errorWorkflow), recursively,
    # leaves first: deployed beside it with the ids it names (harness.workflow.subworkflows).
    called: tuple[subworkflows.CalledWorkflow, ...] = field(default=(), hash=False, repr=False)
    # The manifest's upstreams (host -> fake); ``upstream_configs()`` gives the fakes' config.
    upstreams: dict[str, UpstreamSpec] = field(default_factory=dict, hash=False)
    # State each case needs before its event, written into the fakes (manifest seed).
    seeds: tuple[mm.Seed, ...] = field(default=(), hash=False)
    # The manifest's credential data (type or name -> data) for types the harness cannot fill.
    credentials: dict[str, dict[str, Any]] = field(default_factory=dict, hash=False, repr=False)
    form_fields: dict[str, str] | None = field(default=None, hash=False)
    trigger_auth: TriggerAuth | None = field(default=None, hash=False, compare=False, repr=False)

    @property
    def waits_s(self) -> float:
        """How long its Wait nodes hold an execution (its deadlines grow by that)."""
        return wj.wait_seconds(self.workflow)

    @property
    def service_trigger(self) -> ServiceTrigger | None:
        """The personality of its service trigger node (Stripe Trigger, ...): then the
        service's fake sends its deliveries; None for a Webhook or Form Trigger."""
        types = (str(node.get("type")) for node in self.workflow.get("nodes", []))
        return next(filter(None, map(trigger_of, types)), None)

    @property
    def execution_timeout_s(self) -> float | None:
        """Its own execution timeout (settings.executionTimeout), else n8n's instance default
        from its manifest's ``env`` (``EXECUTIONS_TIMEOUT``, seconds: n8n applies it to a
        workflow that sets none, and the stack's every process gets that env), or None."""
        own = wj.execution_timeout_s(self.workflow)
        return own if own is not None else wj.timeout_s(self.env.get("EXECUTIONS_TIMEOUT"))

    @property
    def call_timeout_s(self) -> float | None:
        """How long its calls to services wait for an answer at most (None: no limit)."""
        return answer_timing.call_timeout_s(self.workflow)

    @property
    def parks_for_resume(self) -> bool:
        """A Wait node holds every execution until its resume URL is called: only delivery
        plans that call it (``wait_resume``) can see the workflow's effect."""
        return bool(wj.resume_wait_nodes(self.workflow))

    @property
    def sends_idempotency_key(self) -> bool:
        """Its effect requests carry an idempotency key (an ``Idempotency-Key`` header, or a
        record upstream's ``idempotency_header``): the service answers a request that meets
        the first with that key still in progress "in flight". The workflows it calls count:
        a project's charge is often made in its sub-workflow."""
        headers = [s.idempotency_header for s in self.upstreams.values() if s.idempotency_header]
        flows = [self.workflow, *(called.workflow for called in self.called)]
        return any(wj.sends_idempotency_key(flow, headers) for flow in flows)

    def upstream_configs(self) -> list[Upstream]:
        """The manifest's upstreams as ``fake_providers.upstreams.Upstream`` objects, plus
        the token fake of each OAuth2 credential the workflow references (unless mapped)."""
        return [
            *upstream_config.configs_of(self.upstreams, self.business_key),
            *upstream_config.token_upstreams(self.workflow, self.upstreams),
        ]

    @property
    def effect_kind(self) -> str:
        """The commit kind that is this workflow's effect at the provider, or "" for every
        kind: a workflow judged through its upstreams' fakes commits only on their effect
        routes (a Stripe customer and its payment intent are both effects of the order)."""
        return "" if self.upstreams else str(self.effect.provider_effect)

    @property
    def business_key_path(self) -> tuple[str, ...]:
        """Where the trigger body carries the key: ``order.id`` -> ("order", "id")."""
        return mm.key_path(self.business_key)

    def render_body(self, key: str, event_id: str) -> dict[str, Any]:
        """The trigger body with ``{key}`` and ``{event_id}`` replaced in every string value."""
        return self._trigger().render_body(key, event_id)

    def render_request(self, key: str, event_id: str) -> TriggerRequest:
        """Body, headers and query string of the trigger, rendered like the body."""
        return self._trigger().render_request(key, event_id)

    def render_seeds(self, key: str, event_id: str) -> list[mm.Seed]:
        """The seeds, each body rendered like the trigger's."""
        return [
            seed.model_copy(update={"body": _render(seed.body, key, event_id)})
            for seed in self.seeds
        ]

    def _trigger(self) -> _Triggered:
        return _Triggered(
            self.workflow,
            self.method,
            self.path,
            self.body_template,
            headers_template=self.headers_template,
            query_template=self.query_template,
            form_fields=self.form_fields,
            trigger_auth=self.trigger_auth,
        )

    def with_path(self, path: str) -> WorkflowUnderTest:
        """A copy whose Webhook node (and trigger) use another path, e.g. a unique one per
        deployment: n8n refuses to publish two workflows on the same method and path."""
        return dataclasses.replace(self, workflow=_moved(self.workflow, path), path=path)

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
        value = mm.value_at(answer, tuple(self.effect_id_field.split(".")))
        if value is None or value is mm.ABSENT or isinstance(value, dict | list):
            return None
        return str(value)


DEFAULT_WORKFLOW_FILE = "workflow.json"
LONG_WAIT_S = 120.0  # Wait nodes longer than this in all are worth a warning

# -- loading -------------------------------------------------------------------------------


def _defaults(directory: Path, manifest_path: Path) -> dict[str, str]:
    """``name`` is the folder's; ``workflow`` is ``workflow.json`` or the folder's only other
    JSON file (an export saved under the workflow's own title)."""
    found: dict[str, str] = {"name": directory.name}
    exports = sorted(p.name for p in directory.glob("*.json") if p != manifest_path)
    if DEFAULT_WORKFLOW_FILE in exports or len(exports) != 1:
        found["workflow"] = DEFAULT_WORKFLOW_FILE
    else:
        found["workflow"] = exports[0]
    return found


def load_manifest(directory: Path) -> WorkflowUnderTest:
    """Read and validate ``<directory>/manifest.json`` and the files it names."""
    manifest_path = directory / MANIFEST_FILE
    if not manifest_path.is_file():
        _missing_manifest(directory)
    doc = _object(manifest_path, "the manifest")
    m = mm.parse({**_defaults(directory, manifest_path), **doc}, manifest_path)
    files = _Files(directory, manifest_path)
    if m.name != directory.name:
        files.fail(
            "name",
            f"{m.name!r} differs from its folder {directory.name!r}; rename one so they match",
        )
    return _load(m, files)


def _missing_manifest(directory: Path) -> NoReturn:
    # YAML is not read (PyYAML is no dependency of the package): say so, not "not found".
    for name in YAML_MANIFEST_FILES:
        if (directory / name).is_file():
            raise ConfigError(
                f"{directory / name}: found {name}; the harness reads {MANIFEST_FILE} only: "
                f"convert it to {directory / MANIFEST_FILE} (the same fields, in JSON)"
            )
    raise ConfigError(
        f"{directory / MANIFEST_FILE}: file not found; each workflow folder needs a "
        f"{MANIFEST_FILE} beside its workflow ({mm.SEE_FORMAT}); for a folder of several n8n "
        f"exports judged together, write {PROJECT_FILE} there instead"
    )


def load_project(directory: Path) -> list[WorkflowUnderTest]:
    """Read ``<directory>/n8n-chaos-project.json``: each workflow it names to judge, with
    the folder's other exports as the companions they are."""
    project_path = directory / PROJECT_FILE
    p = mm.parse_project(_object(project_path, "the project manifest"), project_path)
    exports = list(subworkflows.exports_by_id(directory).values())
    found = []
    for name, entry in p.workflows.items():
        where = Path(f"{project_path}: workflows.{name}")
        doc = {**p.defaults, **entry, "name": name}
        doc["env"] = {**p.env, **doc.get("env", {})}
        doc["variables"] = {**p.variables, **doc.get("variables", {})}
        doc["workflow"] = _export_file(directory, exports, entry.get("workflow"), where)
        found.append(_load(mm.parse(doc, where), _Files(directory, where)))
    return found


def _export_file(
    directory: Path, exports: list[subworkflows.Export], named: Any, where: Path
) -> str:
    """The file name of the export a project entry's ``workflow`` names (file, id or name)."""
    if not isinstance(named, str) or not named.strip():
        raise ConfigError(
            f"{where}: field 'workflow': missing; name the export to judge: its file name, "
            "its id or its name"
        )
    if (directory / named).is_file():
        return named
    matches = [e for e in exports if named in (e.id, e.name)]
    if len(matches) != 1:
        known = ", ".join(f"{e.path.name} ({e.name!r})" for e in exports) or "none"
        problem = "names several" if matches else "is no file, id or name of an export"
        raise ConfigError(
            f"{where}: field 'workflow': {named!r} {problem} in {directory}; the exports "
            f"there: {known}"
        )
    return matches[0].path.name


def _load(m: mm.Manifest, files: _Files) -> WorkflowUnderTest:
    """A workflow under test from its validated manifest (one folder's or a project
    entry's); ``files`` is where the files it names are."""
    directory, manifest_path = files.directory, files.path
    workflow_path = files.sibling(m.workflow, "workflow")
    workflow = wj.load_workflow(workflow_path, _read_json, default_name=directory.name)
    mode = wj.check_webhook(workflow, workflow_path, m.trigger.method, m.trigger.path, files.path)
    creds.check(workflow, workflow_path, manifest_path, dict(m.credentials))
    trigger = _trigger_shape(workflow, workflow_path, m.trigger.body, m, files, "trigger")
    reconciler = _reconciler(m, files)
    error_workflow = _error_workflow(m, files)
    exports = subworkflows.exports_by_id(directory)
    callers = [(workflow, workflow_path, m.error_workflow is None)]
    if reconciler is not None and m.reconciler is not None:
        callers.append((reconciler.workflow, directory / m.reconciler.workflow, True))
    if error_workflow is not None and m.error_workflow is not None:
        callers.append((error_workflow.workflow, directory / m.error_workflow.workflow, True))
    found_called: dict[str, subworkflows.CalledWorkflow] = {}
    for caller, caller_path, with_error in callers:  # each list leaves first: so is the union
        for sub in subworkflows.companions(
            caller, caller_path, exports, directory, with_error_workflow=with_error
        ):
            found_called.setdefault(sub.id, sub)
    called = list(found_called.values())
    for sub in called:
        creds.check(sub.workflow, sub.export.path, manifest_path, dict(m.credentials))
    negative_control = (
        None
        if m.negative_control is None
        else NegativeControl(
            m.negative_control.bug,
            dict(m.negative_control.caught_by),
            tuple(m.negative_control.passes),
        )
    )
    companions = [(workflow_path, workflow), *((c.export.path, c.workflow) for c in called)]
    if reconciler is not None and m.reconciler is not None:
        companions.append((directory / m.reconciler.workflow, reconciler.workflow))
    if error_workflow is not None and m.error_workflow is not None:
        companions.append((directory / m.error_workflow.workflow, error_workflow.workflow))
    # A negative control's manifest declares its bug: its warnings would only repeat it.
    found: list[str] = []
    if negative_control is not None:
        pass
    elif m.upstreams:
        deployment = wh.Deployment(dict(m.env), dict(m.variables))
        found = upstream_config.upstream_warnings(
            manifest_path, dict(m.upstreams), companions, deployment
        )
    else:
        found = _old_path_warnings(manifest_path, m, companions)
    if (waits := wj.wait_seconds(workflow)) > LONG_WAIT_S:
        found.append(
            f"{workflow_path}: its Wait nodes hold every execution {waits:.0f} s; each case "
            "waits that long (its deadlines grow by it), so the matrix takes far longer"
        )
    if negative_control is None:
        found += _resume_warnings(workflow_path, workflow)
    detached = subworkflows.detached_calls(workflow)
    if detached and m.acknowledge is None and negative_control is None:
        found.append(
            f"{workflow_path}: node(s) {', '.join(map(repr, detached))} run their sub-workflow "
            "without waiting for it (waitForSubWorkflow off): the webhook answers before the "
            'sub-workflow\'s work; say so in the manifest with "acknowledge": "early" (the '
            'harness then judges after the work), or "after_effect" if the effect is not there'
        )
    early = _acknowledges_early(m, files, mode, workflow_path, workflow)
    return WorkflowUnderTest(
        name=m.name,
        description=m.description,
        promise=m.promise,
        workflow=workflow,
        method=m.trigger.method,
        path=m.trigger.path,
        body_template=m.trigger.body,
        business_key=m.business_key,
        effect=m.effect,
        ledger_schema_sql=_ledger_schema(m, files),
        ledger_state_query=m.ledger.state_query,
        ledger_done_state=m.ledger.done_state,
        ledger_unknown_states=tuple(m.ledger.unknown_states),
        ledger_failed_states=tuple(m.ledger.failed_states),
        acknowledges_early=early,
        effects_per_event=m.effects_per_event,
        answers_after_writes=not early and answer_timing.answers_after_writes(workflow, mode),
        effect_id_field=m.response.effect_id_field,
        reconciler=reconciler,
        error_workflow=error_workflow,
        negative_control=negative_control,
        production_faults=tuple(m.production_faults),
        scenarios=tuple(m.scenarios),
        directory=directory,
        headers_template=dict(m.trigger.headers),
        query_template=dict(m.trigger.query),
        warnings=tuple(found),
        file_sha256=hashlib.sha256(workflow_path.read_bytes()).hexdigest(),
        called=tuple(called),
        env={name: _value(name, value) for name, value in m.env.items()},
        variables={name: _value(name, value) for name, value in m.variables.items()},
        manifest_label=str(manifest_path),
        upstreams=dict(m.upstreams),
        seeds=tuple(m.seed),
        credentials={k: dict(v) for k, v in m.credentials.items()},
        form_fields=trigger[0],
        trigger_auth=trigger[1],
    )


def _trigger_shape(
    workflow: dict[str, Any],
    workflow_path: Path,
    body: dict[str, Any],
    m: mm.Manifest,
    files: _Files,
    field_prefix: str,
) -> tuple[dict[str, str] | None, TriggerAuth | None]:
    """A Form Trigger's fields (the manifest's body maps onto them), and the trigger's auth
    credential with a fresh secret (the manifest's ``credentials`` data overrides it)."""
    node = wj.webhook_node(workflow, str(workflow_path))
    form = None
    if node.get("type") == FORM_TRIGGER_NODE_TYPE:
        form = wj.form_field_names(node)
        names = set(form) | set(form.values())
        unknown = sorted(k for k in body if k not in names)
        if unknown:
            files.fail(
                f"{field_prefix}.body",
                f"{', '.join(map(repr, unknown))} is no field of the Form Trigger "
                f"{node.get('name')!r} of {workflow_path}; use the fields' labels "
                f"({', '.join(map(repr, form)) or 'none'}) or their names field-0, field-1, ...",
            )
    auth_type = wj.trigger_auth_type(node, str(workflow_path))
    if auth_type is None:
        return form, None
    ref = node.get("credentials", {}).get(auth_type, {})
    name = ref.get("name") if isinstance(ref, dict) else None
    data = credential_data(auth_type, name, FillContext(), dict(m.credentials))
    assert data is not None  # both trigger auth types are fillable
    return form, TriggerAuth(auth_type, data)


def _resume_warnings(workflow_path: Path, workflow: dict[str, Any]) -> list[str]:
    parking = wj.resume_wait_nodes(workflow)
    if not parking or wj.hands_out_resume_url(workflow):
        return []
    return [
        f"{workflow_path}: its Wait node(s) {', '.join(map(repr, parking))} resume On Webhook "
        "Call, but no node hands out $execution.resumeUrl; the harness resumes a parked "
        "execution only through the URL the workflow answers with, so its cases see no "
        "effect. Answer it before the Wait (a Respond to Webhook node with "
        "'={{ { approval_url: $execution.resumeUrl } }}')"
    ]


def _old_path_warnings(
    manifest_path: Path, m: mm.Manifest, companions: list[tuple[Path, dict[str, Any]]]
) -> list[str]:
    """No ``upstreams``: a workflow calling real hosts hears which to map; one written for
    the bundled provider hears whether it reaches it and sends the key."""
    if not wj.calls_provider(companions):
        unmapped = upstream_config.upstream_warnings(manifest_path, {}, companions)
        if unmapped:
            return unmapped
    return wj.reach_warnings(companions, m.business_key_path, m.effect.value)


def discover(
    root: Path, on_warning: Callable[[str], None] | None = None
) -> list[WorkflowUnderTest]:
    """Every workflow under ``root`` (one folder each), sorted by name.

    Folders whose name starts with ``.`` or ``_`` are skipped; any other folder must hold a
    manifest, and there must be one. ``root`` itself holding a manifest is refused: it is one
    workflow's folder, not the folder of them. Two webhooks (main triggers and reconcilers)
    may not share a method and path: n8n would refuse to publish the second. Each workflow's
    warnings go to ``on_warning`` (the CLI prints a ``warning:`` line), else they are emitted
    as ``ManifestWarning``s (pytest lists them in its warnings summary).
    """
    if not root.is_dir():
        raise ConfigError(
            f"{root}: not a folder; point the harness at the folder that holds one folder per "
            "workflow under test"
        )
    found = load_project(root) if (root / PROJECT_FILE).is_file() else _load_folders(root)
    _check_names(found)
    deployment_env(found)  # two workflows that want one variable set differently
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
    for wut in found:
        for line in wut.warnings:
            if on_warning is not None:
                on_warning(line)
            else:
                warnings.warn(ManifestWarning(line), stacklevel=2)
    return sorted(found, key=lambda wut: wut.name)


# What `n8n-chaos run` writes where it is started (``--alluredir``, the default
# ``allure-results``) and an Allure report generated from it: run in the folder of the
# workflows, they land beside them and are not workflows.
_REPORT_FOLDERS = ("allure-results", "allure-report")
_REPORT_FILES = ("*-result.json", "*-container.json", "executor.json")


def _is_report_output(folder: Path) -> bool:
    if any((folder / name).is_file() for name in (MANIFEST_FILE, PROJECT_FILE)):
        return False
    return folder.name in _REPORT_FOLDERS or any(
        next(folder.glob(pattern), None) for pattern in _REPORT_FILES
    )


def _load_folders(root: Path) -> list[WorkflowUnderTest]:
    """The workflows of ``root``'s folders (a project folder gives each workflow it names)."""
    manifest = next((n for n in (MANIFEST_FILE, *YAML_MANIFEST_FILES) if (root / n).is_file()), "")
    if manifest:  # listing its sub-folders would find nothing: "0 cases", and no reason why
        raise ConfigError(
            f"{root}: this folder is itself a workflow folder (it holds {manifest}); point "
            f"--workflows at its parent, {root.resolve().parent}, the folder of workflow folders"
        )
    folders = [
        f
        for f in sorted(root.iterdir())
        if f.is_dir() and not f.name.startswith((".", "_")) and not _is_report_output(f)
    ]
    if not folders:
        raise ConfigError(
            f"{root}: no workflow folder (a folder with {MANIFEST_FILE}) found under it; put "
            f"one folder per workflow under test there, each with its workflow's JSON and a "
            f"{MANIFEST_FILE} ({mm.SEE_FORMAT})"
        )
    found: list[WorkflowUnderTest] = []
    refused: list[ConfigError] = []  # every broken folder at once, not one per attempt
    for folder in folders:
        is_project = (folder / PROJECT_FILE).is_file()
        try:
            found += load_project(folder) if is_project else [load_manifest(folder)]
        except ConfigError as exc:
            refused.append(exc)
    if len(refused) == 1:
        raise refused[0]
    if refused:
        lines = "\n".join(f"  {line}" for line in refused)
        raise ConfigError(f"{len(refused)} workflow folders under {root} are refused:\n{lines}")
    return found


# -- the files a manifest names ------------------------------------------------------------


@dataclass(frozen=True)
class _Files:
    directory: Path
    path: Path  # the manifest

    def fail(self, name: str, problem: str) -> NoReturn:
        raise ConfigError(f"{self.path}: field {name!r}: {problem}")

    def sibling(self, name: str, field_name: str, shared: bool = False) -> Path:
        candidate = self.directory / name  # shared: or ../<folder>/<file>, beside the folder
        if Path(name).is_absolute() or ".." in Path(name).parts[1 if shared else 0 :]:
            beside = ", or ../<folder>/<file> beside it" if shared else ""
            self.fail(field_name, f"{name!r} must be a file name inside {self.directory}{beside}")
        if not candidate.is_file():
            self.fail(
                field_name, f"file {candidate} not found; put it beside the manifest or fix it"
            )
        return candidate


def _ledger_schema(m: mm.Manifest, files: _Files) -> str | None:
    """The schema's SQL, ``{prefix}`` replaced by the manifest's ``ledger.prefix``."""
    schema, prefix = m.ledger.schema_, m.ledger.prefix
    if schema is None:
        return None
    schema_path = files.sibling(schema, "ledger.schema", shared=True)
    schema_sql = _read_text(schema_path, "the ledger schema")
    if not schema_sql.strip():
        files.fail(
            "ledger.schema", f"{schema_path} is empty; put the CREATE TABLE statements in it"
        )
    placeholder = mm.TABLE_PREFIX_PLACEHOLDER
    if (placeholder in schema_sql) == (prefix is None):
        files.fail(
            "ledger.prefix",
            f"{schema_path} has no {placeholder} to replace; drop the prefix"
            if prefix
            else f"missing: {schema_path} names its tables with {placeholder}; add the prefix "
            "that starts this workflow's own table names",
        )
    return schema_sql if prefix is None else schema_sql.replace(placeholder, prefix)


def _acknowledges_early(
    m: mm.Manifest, files: _Files, mode: str, workflow_path: Path, workflow: dict[str, Any]
) -> bool:
    acknowledge = m.acknowledge
    if mode != "responseNode" and subworkflows.detached_calls(workflow):
        # Its last node comes before the work of a sub-workflow it does not wait for.
        mode = "responseNode"
    if mode == wj.EARLY_RESPONSE_MODE:
        if acknowledge is mm.Acknowledge.AFTER_EFFECT:
            files.fail(
                "acknowledge",
                f"'after_effect' but the Webhook node of {workflow_path} has responseMode "
                f"'{wj.EARLY_RESPONSE_MODE}', which answers before any work; drop the field or "
                "set it to 'early'",
            )
        return True
    if acknowledge is None and mode == "responseNode":
        # A Respond to Webhook node before every service call: the 2xx says "accepted".
        trigger = str(wj.webhook_node(workflow, str(workflow_path)).get("name"))
        return answer_timing.answers_before_calls(workflow, trigger)
    if acknowledge is mm.Acknowledge.EARLY and mode != "responseNode":
        files.fail(
            "acknowledge",
            f"'early' but the Webhook node of {workflow_path} has responseMode {mode!r}, which "
            "answers after the last node; use 'responseNode' with a Respond to Webhook node "
            f"placed before the effect, or '{wj.EARLY_RESPONSE_MODE}'",
        )
    return acknowledge is mm.Acknowledge.EARLY


def _reconciler(m: mm.Manifest, files: _Files) -> Companion | None:
    if m.reconciler is None:
        return None
    spec = m.reconciler
    workflow_path = files.sibling(spec.workflow, "reconciler.workflow")
    workflow = wj.load_workflow(workflow_path, _read_json)
    wj.check_webhook(
        workflow,
        workflow_path,
        spec.trigger.method,
        spec.trigger.path,
        files.path,
        wj.SYNCHRONOUS_RESPONSE_MODES,
        "reconciler.trigger.",
    )
    form, auth = _trigger_shape(
        workflow, workflow_path, spec.trigger.body, m, files, "reconciler.trigger"
    )
    creds.check(workflow, workflow_path, files.path, dict(m.credentials))
    return Companion(
        workflow,
        spec.trigger.method,
        spec.trigger.path,
        spec.trigger.body,
        headers_template=dict(spec.trigger.headers),
        query_template=dict(spec.trigger.query),
        form_fields=form,
        trigger_auth=auth,
    )


def _error_workflow(m: mm.Manifest, files: _Files) -> ErrorWorkflowSpec | None:
    if m.error_workflow is None:
        return None
    workflow_path = files.sibling(m.error_workflow.workflow, "error_workflow.workflow")
    workflow = wj.load_workflow(workflow_path, _read_json)
    wj.check_error_workflow(workflow, workflow_path)
    creds.check(workflow, workflow_path, files.path, dict(m.credentials))
    return ErrorWorkflowSpec(workflow=workflow, runs_query=m.error_workflow.runs_query)


# -- helpers -------------------------------------------------------------------------------

# One secret per name and process: every load of a manifest (discovery, then the stack's
# configuration) sees the same value.
_SECRETS: dict[str, str] = {}


def _value(name: str, value: str) -> str:
    if value != mm.SECRET_VALUE:
        return value
    return _SECRETS.setdefault(name, "chaos-" + secrets.token_urlsafe(24))


def _object(path: Path, what: str) -> dict[str, Any]:
    doc = _read_json(path, what)
    if not isinstance(doc, dict):
        raise ConfigError(
            f"{path}: (top level): expected a JSON object, got {mm.json_type(doc)}; "
            "the file must hold one {...} object"
        )
    return doc


def _render(value: Any, key: str, event_id: str) -> Any:
    if value == mm.KEY_NUMBER_PLACEHOLDER:
        return key_number(key)
    if isinstance(value, str):
        rendered = value.replace(KEY_PLACEHOLDER, key).replace(EVENT_ID_PLACEHOLDER, event_id)
        return rendered.replace(mm.KEY_NUMBER_PLACEHOLDER, str(key_number(key)))
    if isinstance(value, dict):
        return {k: _render(v, key, event_id) for k, v in value.items()}
    if isinstance(value, list):
        return [_render(v, key, event_id) for v in value]
    return value


def key_number(key: str) -> int:
    """A nine-digit number made from the business key: the same for the same key."""
    return int(hashlib.sha256(key.encode()).hexdigest()[:12], 16) % 900_000_000 + 100_000_000


def _query_value(value: Any) -> str:
    # JSON true/false read as the query strings people write, not Python's True/False.
    return json.dumps(value) if isinstance(value, bool) else str(value)


def _moved(workflow: dict[str, Any], path: str) -> dict[str, Any]:
    """A copy of the workflow whose Webhook node listens on ``path``."""
    where = f"{workflow.get('name')}: with_path({path!r})"
    try:
        mm.check_path(path)
    except mm.Problem as exc:
        raise ConfigError(f"{where}: {exc.problem}") from None
    moved = copy.deepcopy(workflow)
    wj.webhook_node(moved, where)["parameters"]["path"] = path
    return moved


def _manifest_of(wut: WorkflowUnderTest) -> Path | str:
    return wut.manifest_label or wut.name


def _check_names(found: list[WorkflowUnderTest]) -> None:
    seen: dict[str, WorkflowUnderTest] = {}
    for wut in found:
        other = seen.setdefault(wut.name, wut)
        if other is not wut:
            raise ConfigError(
                f"{_manifest_of(wut)}: name {wut.name!r} is also the name of "
                f"{_manifest_of(other)}; give each workflow under test its own name"
            )


# The workflows shipped in the wheel as package data (a checkout and an installed wheel alike).
BUNDLED_WORKFLOWS = Path(str(importlib.resources.files("workflows_under_test")))


def workflows_env(root: Path) -> tuple[dict[str, str], dict[str, str]]:
    """``deployment_env`` of every workflow under ``root``: what a stack that runs them is
    started with (the run's, and an ``up`` stack's, so that a run can attach to it). Their
    warnings are left to the run that loads them."""
    return deployment_env(discover(root, lambda _: None))


def deployment_env(found: list[WorkflowUnderTest]) -> tuple[dict[str, str], dict[str, str]]:
    """The environment and the n8n Variables of one stack that runs all of ``found``; a
    ``ConfigError`` when two of them want one name to hold different values."""
    merged: tuple[dict[str, str], dict[str, str]] = ({}, {})
    owner: dict[tuple[int, str], WorkflowUnderTest] = {}
    for wut in found:
        for kind, values in enumerate((wut.env, wut.variables)):
            for name, value in values.items():
                first = owner.setdefault((kind, name), wut)
                if merged[kind].setdefault(name, value) != value:
                    field_name = ("env", "variables")[kind]
                    raise ConfigError(
                        f"{_manifest_of(wut)}: field '{field_name}.{name}': {value!r}, but "
                        f"{_manifest_of(first)} sets it to {merged[kind][name]!r}; one stack "
                        "runs both: give them one value (or each its own name)"
                    )
    return merged


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
