"""Internal: The shape of ``manifest.json`` as pydantic models: types, required fields, unknown
fields and the checks that need only the manifest itself. ``harness.workflow.manifest`` reads the
files the manifest names (the workflow JSON, the ledger schema) and checks the manifest against
them.

``parse(doc, path)`` turns the first validation error into one ``ConfigError`` line naming the
file, the field and the fix; ``json_schema()`` is what ``n8n-chaos schema`` prints for editors.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails

from fake_providers.payment.kinds import Effect as ProviderEffect
from harness.errors import ConfigError
from harness.judge.verdicts import VIOLATIONS
from harness.workflow.manifest_base import HTTP_METHODS as HTTP_METHODS
from harness.workflow.manifest_base import Problem as Problem
from harness.workflow.manifest_base import StrictModel
from harness.workflow.manifest_upstreams import Credentials, Upstreams, check_upstreams

KEY_PLACEHOLDER = "{key}"
EVENT_ID_PLACEHOLDER = "{event_id}"
# A number made from the key: a numeric id (Pipedrive's, HubSpot's) the trigger and the seeds
# share; a value that is only this placeholder becomes a JSON number.
KEY_NUMBER_PLACEHOLDER = "{key_number}"
STATE_QUERY_PARAMETER = "%(key)s"
# Where the table names of a ledger schema shared by several workflows start (ledger.prefix).
TABLE_PREFIX_PLACEHOLDER = "{prefix}"
# The verdicts a negative control may name: the violations (harness/judge/verdicts.py).
NEGATIVE_CONTROL_VERDICTS = tuple(v.value for v in VIOLATIONS)
SEE_FORMAT = "see README's manifest section, or `n8n-chaos schema`"

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
# A static production path: no leading/trailing slash, no ":param" segments, no whitespace.
_PATH = re.compile(r"^[A-Za-z0-9_.~-]+(/[A-Za-z0-9_.~-]+)*$")
# <delivery>-<fault>-<crash point>, e.g. retry-worker_kill-after_commit.
_SCENARIO_ID = re.compile(r"^[a-z0-9_]+-[a-z0-9_]+-[a-z0-9_]+$")
# A dotted path into a JSON answer: charge_id, data.charge.id, items.0.id
_DOTTED = re.compile(r"^[A-Za-z0-9_$]+(\.[A-Za-z0-9_$]+)*$")
# A business key: a dotted path (order.id) or a JSON pointer (/order/id) into the body.
_KEY_SEGMENT = re.compile(r"^[A-Za-z0-9_$-]+$")


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


class Acknowledge(StrEnum):
    AFTER_EFFECT = "after_effect"  # the 2xx means the effect is done
    EARLY = "early"  # the 2xx only means the event was accepted


def _non_empty(value: str) -> str:
    if not value.strip():
        raise Problem("must not be empty")
    return value


def _method(value: str) -> str:
    method = value.upper()
    if method not in HTTP_METHODS:
        raise Problem(f"{method!r} is not one of {', '.join(HTTP_METHODS)}")
    return method


def check_path(path: str) -> str:
    if not _PATH.match(path):
        raise Problem(
            f"{path!r} is not a static webhook path; use segments of letters, digits and "
            "'_.~-' separated by '/', without a leading '/' or ':param' parts"
        )
    return path


def _state_query(query: str) -> str:
    if STATE_QUERY_PARAMETER not in query:
        raise Problem(
            f"the query must select by the business key with the placeholder "
            f"{STATE_QUERY_PARAMETER} (psycopg named parameter)"
        )
    return query


def key_path(business_key: str) -> tuple[str, ...]:
    """``order_id`` -> (order_id,); ``order.id`` and ``/order/id`` -> (order, id)."""
    if business_key.startswith("/"):
        # RFC 6901: ~1 is '/', ~0 is '~'.
        parts = [p.replace("~1", "/").replace("~0", "~") for p in business_key[1:].split("/")]
        usable = all(parts)
    else:
        parts = business_key.split(".")
        usable = all(_KEY_SEGMENT.match(p) for p in parts)
    if not usable:
        raise Problem(
            f"{business_key!r} is not a path into the trigger body; write a field name "
            "('order_id'), a dotted path ('order.id') or a JSON pointer ('/order/id')"
        )
    return tuple(parts)


def value_at(body: Any, path: tuple[str, ...]) -> Any:
    """The value at ``path`` in a JSON document (list items by index), or ``ABSENT``."""
    for part in path:
        if isinstance(body, dict) and part in body:
            body = body[part]
        elif isinstance(body, list) and part.isdigit() and int(part) < len(body):
            body = body[int(part)]
        else:
            return ABSENT
    return body


def _paths(doc: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """The path of every leaf of a JSON document (list items by index), in document order."""
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from _paths(value, (*prefix, str(key)))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            yield from _paths(value, (*prefix, str(index)))
    elif prefix:
        yield prefix


def _path_text(path: tuple[str, ...], pointer: bool) -> str:
    """A path as the manifest writes it: dotted, or a JSON pointer when the key is one or a
    segment holds a dot."""
    if pointer or any("." in part for part in path):
        return "/" + "/".join(p.replace("~", "~0").replace("/", "~1") for p in path)
    return ".".join(path)


class _Absent:
    def __repr__(self) -> str:
        return "'(missing)'"


ABSENT: Any = _Absent()

NonEmpty = Annotated[str, AfterValidator(_non_empty)]
Method = Annotated[
    str,
    AfterValidator(_method),
    Field(description=f"HTTP method of the Webhook node: {', '.join(HTTP_METHODS)}"),
]
WebhookPath = Annotated[
    str,
    AfterValidator(check_path),
    Field(description="the Webhook node's production path, e.g. 'pay-idempotent'"),
]


def _scalar(value: Any) -> Any:
    if not isinstance(value, str | int | float | bool):
        raise Problem(f"expected a string, number or boolean, got {json_type(value)} {value!r}")
    return value


# A query string value: JSON scalars only (a union type would name its member in errors).
Scalar = Annotated[Any, AfterValidator(_scalar)]
_RENDERED = (
    "; '{key}', '{event_id}' and '{key_number}' (a number made from the key) in a string are "
    "replaced per case"
)


_Model = StrictModel

# The value of an env entry or a variable that the harness replaces by a secret per run.
SECRET_VALUE = "secret"
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _environment(values: dict[str, str]) -> dict[str, str]:
    for name in values:
        if not _ENV_NAME.match(name):
            raise Problem(
                f"{name!r} is no variable name; use letters, digits and '_' (not first a digit)"
            )
    return values


Environment = Annotated[dict[str, str], AfterValidator(_environment)]


class Trigger(_Model):
    """How the harness calls the workflow's production webhook."""

    method: Method
    path: WebhookPath
    body: dict[str, Any] = Field(description="the JSON body sent" + _RENDERED)
    headers: dict[str, str] = Field(
        default_factory=dict, description="extra request headers" + _RENDERED
    )
    query: dict[str, Scalar] = Field(
        default_factory=dict, description="query string parameters" + _RENDERED
    )


class Seed(_Model):
    """State one case needs before its event, written into an upstream's fake: the charge a
    refund workflow refunds, the row a status gate reads. Served as the service serves a
    write, but set-up: never a commit, never faulted."""

    upstream: NonEmpty = Field(
        description="the host (one of 'upstreams') whose fake holds it, e.g. 'api.stripe.com'"
    )
    method: Literal["POST", "PUT", "PATCH"] = Field(default="POST", description="the write")
    path: str = Field(
        pattern="^/", description="the service's path, e.g. '/v1/charges' or '/rest/v1/orders'"
    )
    body: dict[str, Any] = Field(
        default_factory=dict,
        description="the JSON body; the object keeps an 'id' given here (e.g. 'ch_{key}'), so "
        "the trigger's body can name it" + _RENDERED,
    )


class CompanionTrigger(Trigger):
    body: dict[str, Any] = Field(default_factory=dict, description="the JSON body sent" + _RENDERED)


def _table_prefix(value: str) -> str:
    if re.fullmatch(r"[a-z_][a-z0-9_]{0,31}", value):  # how unquoted table names start
        return value
    raise Problem(f"{value!r} is not a table name's start: a-z, 0-9, _, no digit first, <= 32")


def _states(states: list[Any]) -> list[str]:
    if not all(isinstance(s, str) and s for s in states):
        raise Problem(f"expected a list of state names, got {states!r}")
    return states


States = Annotated[list[Any], AfterValidator(_states)]


class Ledger(_Model):
    """The workflow's own ledger: how the harness reads its state for one business key."""

    schema_: str | None = Field(
        default=None,
        alias="schema",
        description="file beside the manifest with CREATE TABLE IF NOT EXISTS statements",
    )
    prefix: Annotated[str, AfterValidator(_table_prefix)] | None = Field(
        default=None, description="what {prefix} becomes in a schema shared by workflows"
    )
    state_query: Annotated[str, AfterValidator(_state_query)] | None = Field(
        default=None,
        description="SQL selecting the state for one business key, written with %(key)s",
    )
    done_state: NonEmpty | None = Field(
        default=None, description="the state once the effect is known done"
    )
    unknown_states: States = Field(
        default_factory=list, description="states that mean 'nobody knows yet'"
    )
    failed_states: States = Field(
        default_factory=list, description="states that mean 'definitely not done'"
    )

    @field_validator("schema_")
    @classmethod
    def _schema_name(cls, value: str | None) -> str | None:
        return None if value is None else _non_empty(value)

    @model_validator(mode="after")
    def _consistent(self) -> Ledger:
        if self.prefix is not None and self.schema_ is None:
            raise Problem("missing: the prefix is for a schema's table names; add it", "schema")
        if (self.done_state is not None or self.unknown_states or self.failed_states) and (
            self.state_query is None
        ):
            raise Problem(
                "missing: done_state/unknown_states/failed_states name states of a query; "
                "add the state_query",
                "state_query",
            )
        done = [self.done_state] if self.done_state else []
        overlap = sorted(set(self.failed_states) & {*self.unknown_states, *done})
        if overlap:
            raise Problem(
                f"{', '.join(map(repr, overlap))} is also the done state or an unknown state; "
                "a failed state means 'definitely not done', so list each state once",
                "failed_states",
            )
        return self


class Response(_Model):
    effect_id_field: str | None = Field(
        default=None,
        description="dotted path in the 2xx JSON answer holding the provider's id, e.g. "
        "'charge_id' or 'data.0.id'",
    )

    @field_validator("effect_id_field")
    @classmethod
    def _dotted(cls, value: str | None) -> str | None:
        if value is not None and not _DOTTED.match(value):
            raise Problem(
                f"{value!r} is not a dotted path; name the field of the 2xx JSON answer that "
                "holds the provider's id, e.g. 'charge_id' or 'charge.id'"
            )
        return value


class Reconciler(_Model):
    """A second, webhook-triggered workflow that resolves unknown operations; the harness
    calls it once the faults healed and waits for its answer."""

    workflow: NonEmpty = Field(description="its n8n workflow JSON, beside the manifest")
    trigger: CompanionTrigger


class ErrorWorkflow(_Model):
    """An n8n Error Workflow (it starts with an Error Trigger), deployed first and named in
    the main workflow's settings.errorWorkflow."""

    workflow: NonEmpty = Field(description="its n8n workflow JSON, beside the manifest")
    runs_query: NonEmpty = Field(
        description="SQL counting its runs for one business key, written with %(key)s"
    )

    @field_validator("runs_query")
    @classmethod
    def _placeholder(cls, value: str) -> str:
        if STATE_QUERY_PARAMETER not in value:
            raise Problem(
                f"the query must count the Error Workflow's runs for one business key with the "
                f"placeholder {STATE_QUERY_PARAMETER} (psycopg named parameter)"
            )
        return value


class NegativeControl(_Model):
    """A deliberately broken workflow: the matrix runs it only in the scenarios of
    ``caught_by`` (scenario id -> the verdict the harness must give there)."""

    bug: NonEmpty = Field(description="the bug, in one line")
    caught_by: dict[str, str] = Field(
        description="scenario id (<delivery>-<fault>-<crash point>) -> the verdict the harness "
        "must give there, a violation. " + " ".join(f"{v}: {v.info.meaning}." for v in VIOLATIONS),
        json_schema_extra={"additionalProperties": {"enum": list(NEGATIVE_CONTROL_VERDICTS)}},
    )
    passes: list[str] = Field(
        default_factory=list,
        description="scenario ids where the guard the workflow has holds: the harness must "
        "say PASS there (a sequential redelivery a lookup catches), run with caught_by",
    )

    @field_validator("bug")
    @classmethod
    def _one_line(cls, value: str) -> str:
        if "\n" in value.strip():
            raise Problem("say the bug in one line")
        return value

    @field_validator("caught_by")
    @classmethod
    def _scenarios(cls, value: dict[str, str]) -> dict[str, str]:
        if not value:
            raise Problem(
                "empty; name at least one scenario id and the verdict expected there, e.g. "
                '{"retry-worker_kill-after_commit": "DUPLICATE"}'
            )
        for scenario, verdict in value.items():
            if not _SCENARIO_ID.match(scenario):
                raise Problem(
                    f"{scenario!r} is not a scenario id; write <delivery>-<fault>-<crash "
                    "point> in lower case, e.g. 'retry-worker_kill-after_commit' "
                    "(n8n-chaos list)",
                    scenario,
                )
            if verdict not in NEGATIVE_CONTROL_VERDICTS:
                raise Problem(
                    f"unknown verdict {verdict!r}; use one of "
                    f"{', '.join(NEGATIVE_CONTROL_VERDICTS)}",
                    scenario,
                )
        return value

    @field_validator("passes")
    @classmethod
    def _passing(cls, value: list[str]) -> list[str]:
        for scenario in value:
            if not _SCENARIO_ID.match(scenario):
                raise Problem(
                    f"{scenario!r} is not a scenario id; write <delivery>-<fault>-<crash "
                    "point> in lower case, e.g. 'late-no_fault-none' (n8n-chaos list)"
                )
        return value


class Manifest(_Model):
    """manifest.json: how to trigger one n8n workflow under test and what it promises."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        title="n8n-chaos workflow manifest",
        populate_by_name=True,
    )

    # Both default when the manifest loads (harness.workflow.manifest.load_manifest): a folder with
    # an editor export and a manifest of only what the harness cannot guess is enough.
    name: NonEmpty = Field(
        default="",
        description="the folder's name: letters, digits, '_', '-', '.' (default: the folder's "
        "name)",
    )
    description: str = Field(default="", description="one line")
    workflow: NonEmpty = Field(
        default="",
        description="the n8n workflow JSON, beside the manifest (default: workflow.json, or "
        "the folder's only other .json file)",
    )
    promise: Promise = Field(description="what the workflow claims about its side effect")
    trigger: Trigger
    business_key: NonEmpty = Field(
        description="where the trigger body carries '{key}', the reference the workflow must "
        "send to the provider: a field ('order_id'), a dotted path ('order.id') or a JSON "
        "pointer ('/order/id')"
    )
    effect: EffectEndpoint = Field(
        default=EffectEndpoint.CHARGES,
        description="the bundled provider's endpoint that is the side effect (required without "
        "'upstreams'; a workflow calling its real hosts names its effects there)",
    )
    effects_per_event: int = Field(
        default=1,
        ge=1,
        description="how many effects of each kind one event makes: more than 1 when the "
        "workflow splits the event into items (a charge per line item, each with its own "
        "key); exactly this many is once, more is DUPLICATE, fewer once the work is over is "
        "an effect lost",
    )
    ledger: Ledger = Field(default_factory=Ledger)
    acknowledge: Acknowledge | None = Field(
        default=None,
        description="'after_effect': the 2xx means the effect is done; 'early': it only "
        "means the event was accepted (default: from the Webhook node's responseMode, and early "
        "when a Respond to Webhook node answers before any service call)",
    )
    response: Response = Field(default_factory=Response)
    reconciler: Reconciler | None = None
    error_workflow: ErrorWorkflow | None = None
    negative_control: NegativeControl | None = None
    production_faults: list[NonEmpty] = Field(
        default_factory=list,
        description="opt-in faults (silent, slow or one-way links: `n8n-chaos list --faults`) "
        "this workflow also runs; each costs its hold time, so name them where they decide "
        "something",
    )
    scenarios: list[NonEmpty] = Field(
        default_factory=list,
        description="only these scenarios of the matrix (ids or globs, e.g. "
        "'retry-worker_kill-*'; `n8n-chaos list`); empty: every scenario the workflow can run. "
        "For a CI gate's budget: a workflow whose guard is narrow needs the scenarios that "
        "test that guard",
    )
    upstreams: Upstreams = Field(
        default_factory=dict,
        description="host the workflow calls -> the fake that answers it: 'stripe', 'record', "
        "'mail' (host 'smtp'), or an object with fake, reference, effects, reads, templates, "
        "idempotency_header, effect",
    )
    seed: list[Seed] = Field(
        default_factory=list,
        description="state each case needs before its event, written into the fakes in this "
        "order (a charge its refund refunds); never a commit of the case",
    )
    credentials: Credentials = Field(
        default_factory=dict,
        description="credential type or name -> its data, for credentials the harness cannot "
        "fill itself (they point at the fakes otherwise)",
    )
    env: Environment = Field(
        default_factory=dict,
        description="environment variables the workflows read ($env.NAME) -> their value, or "
        f"{SECRET_VALUE!r} for a secret generated per run; every n8n process gets them, and a "
        "URL's host among them is mapped to its fake like a literal host",
    )
    variables: Environment = Field(
        default_factory=dict,
        description="n8n Variables the workflows read ($vars.NAME) -> their value, or "
        f"{SECRET_VALUE!r}; created in the test n8n before the workflows",
    )
    schema_url: str | None = Field(
        default=None, alias="$schema", description="the JSON Schema (for editors; ignored)"
    )

    @field_validator("name")
    @classmethod
    def _usable_name(cls, value: str) -> str:
        if not _NAME.match(value):
            raise Problem(f"{value!r} is not a usable name; use letters, digits, '_', '-', '.'")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Manifest:
        self._check_business_key()
        if "effect" not in self.model_fields_set and not self.upstreams:
            raise Problem(f"missing; add it ({SEE_FORMAT})", "effect")
        try:
            check_upstreams(self.upstreams)
        except Problem as exc:
            raise Problem(exc.problem, f"upstreams.{exc.sub}") from None
        for index, seed in enumerate(self.seed):
            spec = self.upstreams.get(seed.upstream)
            if spec is None or spec.fake == "mail":
                hosts = [h for h, s in self.upstreams.items() if s.fake != "mail"]
                named = ", ".join(map(repr, hosts)) or "none"
                raise Problem(
                    f"{seed.upstream!r} is not a host of upstreams with an HTTP fake ({named}); "
                    "a seed is written into the fake of one of them (a mail server keeps "
                    "nothing to seed)",
                    f"seed.{index}.upstream",
                )
        route = (self.trigger.method, self.trigger.path)
        if self.reconciler is not None and (
            (self.reconciler.trigger.method, self.reconciler.trigger.path) == route
        ):
            raise Problem(
                f"{route[0]} {route[1]!r} is also the main trigger; give the reconciler its "
                "own path",
                "reconciler.trigger.path",
            )
        if self.negative_control is not None and self.promise is Promise.NONE:
            raise Problem(
                "a negative control breaks its own promise; set promise to what the workflow "
                "claims (exactly_once or at_most_once)",
                "negative_control",
            )
        return self

    @property
    def business_key_path(self) -> tuple[str, ...]:
        return key_path(self.business_key)

    def _check_business_key(self) -> None:
        try:
            path = key_path(self.business_key)
        except Problem as exc:
            raise Problem(exc.problem, "business_key") from None
        found = value_at(self.trigger.body, path)
        where = "trigger.body"
        if found is ABSENT and len(path) == 1 and path[0] in self.trigger.query:
            # A GET webhook carries the event in its query string.
            found, where = self.trigger.query[path[0]], "trigger.query"
        if self._carries_key(found):
            return
        why = (
            "the provider counts commits per reference, and the workflow must send the "
            "business key as that reference"
        )
        if found is not ABSENT:
            problem = f"{where}.{'.'.join(path)} must be the string {KEY_PLACEHOLDER!r}, got "
            raise Problem(f"{problem}{found!r}: {why}", "business_key")
        raise Problem(self._no_such_field(path, why), "business_key")

    def _carries_key(self, value: Any) -> bool:
        # A real export's field may carry the key inside a text (a prompt, a subject); its
        # upstream's reference (a regex) then takes the key out of what the workflow sends.
        embedded = bool(self.upstreams) and isinstance(value, str) and KEY_PLACEHOLDER in value
        return value == KEY_PLACEHOLDER or embedded

    def _no_such_field(self, path: tuple[str, ...], why: str) -> str:
        """The body lacks the business key's field: name the fields that hold the key (a
        GET webhook's query fields too)."""
        pointer = self.business_key.startswith("/")
        body, query = self.trigger.body, self.trigger.query
        where = "trigger.body and trigger.query have" if query else "trigger.body has"
        named = f"{where} no field {_path_text(path, pointer)!r}"
        holders = [
            *(_path_text(p, pointer) for p in _paths(body) if self._carries_key(value_at(body, p))),
            *(name for name, value in query.items() if self._carries_key(value)),
        ]
        if not holders:
            return (
                f"{named}; add it to trigger.body with the value {KEY_PLACEHOLDER!r}, or set "
                f"business_key to the field that carries the key ({why})"
            )
        if len(holders) == 1:
            return (
                f"{named}; did you mean {holders[0]!r} (which holds {KEY_PLACEHOLDER!r})? "
                "set business_key to it"
            )
        guesses = " or ".join(map(repr, holders[:3]))
        return (
            f"{named}; did you mean {guesses} (each holds {KEY_PLACEHOLDER!r})? set "
            "business_key to the one that carries the business key"
        )


class ProjectManifest(_Model):
    """n8n-chaos-project.json: a folder of n8n exports (one JSON per workflow, as ``n8n
    export:workflow --all --separate`` writes them) and which of them to judge, and how."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, title="n8n-chaos project manifest", populate_by_name=True
    )

    defaults: dict[str, Any] = Field(
        default_factory=dict,
        description="manifest fields every judged workflow shares (promise, business_key, "
        "upstreams, credentials, ...); a workflow's own fields replace them",
    )
    env: Environment = Field(
        default_factory=dict,
        description="environment variables of the deployment ($env.NAME) -> value or "
        f"{SECRET_VALUE!r}",
    )
    variables: Environment = Field(
        default_factory=dict,
        description=f"n8n Variables of the deployment ($vars.NAME) -> value or {SECRET_VALUE!r}",
    )
    workflows: dict[str, dict[str, Any]] = Field(
        description="the name its cases carry -> the workflow manifest's fields; 'workflow' "
        "names the export: its file name, its id or its name (the other workflows of the "
        "folder are deployed as the companions they are: sub-workflows, Error Workflows)"
    )
    schema_url: str | None = Field(
        default=None, alias="$schema", description="the JSON Schema (for editors; ignored)"
    )

    @field_validator("workflows")
    @classmethod
    def _some(cls, value: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        if not value:
            raise Problem("names no workflow; add one entry per workflow to judge")
        for name in value:
            if not _NAME.match(name):
                raise Problem(f"{name!r} is not a usable name; use letters, digits, '_', '-', '.'")
        return value


def parse_project(doc: Any, path: Path) -> ProjectManifest:
    """The validated project manifest, or a ``ConfigError`` naming the file and the field."""
    try:
        return ProjectManifest.model_validate(doc)
    except ValidationError as exc:
        raise ConfigError(_one_line(exc.errors()[0], path)) from None


def parse(doc: dict[str, Any], path: Path) -> Manifest:
    """The validated manifest, or a ``ConfigError`` naming the file, the field and the fix."""
    try:
        return Manifest.model_validate(doc)
    except ValidationError as exc:
        raise ConfigError(_one_line(exc.errors()[0], path)) from None


def json_schema(project: bool = False) -> dict[str, Any]:
    """The JSON Schema of manifest.json, or (``project``) of n8n-chaos-project.json."""
    model: type[BaseModel] = ProjectManifest if project else Manifest
    schema = model.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema


def _one_line(error: ErrorDetails, path: Path) -> str:
    # "[key]" is pydantic's mark of a failed mapping key (a host of upstreams): the key is
    # already the last part.
    loc = [str(part) for part in error["loc"] if part != "[key]"]
    kind, value = error["type"], error.get("input")
    ctx = error.get("ctx") or {}
    problem: str
    if kind == "value_error" and isinstance(ctx.get("error"), Problem):
        found: Problem = ctx["error"]
        loc += [found.sub] if found.sub else []
        problem = found.problem
    elif kind == "missing":
        problem = f"missing; add it ({SEE_FORMAT})"
    elif kind == "extra_forbidden":
        prefix = "".join(p + "." for p in loc[:-1])
        known = ", ".join(prefix + k for k in _known_fields(loc[:-1]))
        problem = f"unknown field; the known ones are {known}"
    elif kind in ("enum", "literal_error"):
        choices = str(ctx.get("expected", "")).replace(" or ", ", ")
        problem = f"unknown {loc[-1]} {value!r}; use one of {choices}"
    else:
        problem = f"expected {_EXPECTED.get(kind, kind)}, got {json_type(value)} {value!r}"
    return f"{path}: field {'.'.join(loc)!r}: {problem}"


_EXPECTED = {
    "string_type": "a string",
    "dict_type": "an object",
    "model_type": "an object",
    "list_type": "a list",
    "int_type": "a number",
    "float_type": "a number",
    "bool_type": "a boolean",
}


def _known_fields(loc: list[str]) -> list[str]:
    """The field names (aliases) of the model at ``loc`` below the manifest (a part that is
    no field is a key of a mapping, e.g. a host of ``upstreams``)."""
    model: type[BaseModel] = Manifest
    for part in loc:
        fields = {f.alias or n: f for n, f in model.model_fields.items()}
        if part in fields:
            model = _model_in(fields[part].annotation) or model
    return [f.alias or n for n, f in model.model_fields.items()]


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The first model inside an annotation (``X | None``, ``dict[str, Annotated[X, ...]]``)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def json_type(value: Any) -> str:
    names = {
        dict: "an object",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        type(None): "null",
    }
    return names.get(type(value), type(value).__name__)
