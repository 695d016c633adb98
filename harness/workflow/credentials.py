"""Internal: Credentials the workflow names, provided: for each credential a node references
(``node.credentials: {type: {id, name}}``) the harness creates one in the test n8n with that
name and type, its data pointing at the fakes (``harness.workflow.credential_fill``), and the
deployed copy of the workflow carries the new id. Nothing of it is written back to the file.

``check`` runs when the manifest loads: a node that needs a credential the file does not
reference, or one of a type the harness cannot fill, is one ``ConfigError`` line naming the
node, the type and the manifest field that fills it. A type the installed n8n does not have
(a typo, a community node's) is refused then too: n8n would refuse to create it only once the
stack is up. Without the installed catalogue that check is skipped.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import ConfigError, SetupError
from harness.stack.install import DEFAULT_N8N_VERSION
from harness.stack.triggers import TRIGGER_NODE_TYPES
from harness.workflow import workflow_json as wj
from harness.workflow.credential_catalogue import Catalogue, known_types, user_fields
from harness.workflow.credential_fill import FillContext, credential_data
from harness.workflow.credential_hosts import host_field

# The stack's own credential (the ledger database): every postgres reference is bound to it.
STACK_PROVIDED = ("postgres",)
# Built-in nodes -> (the parameter choosing the auth method, its default, method -> type).
_NODE_AUTH: dict[str, tuple[str, str, dict[str, str]]] = {
    "n8n-nodes-base.stripe": ("", "", {"": "stripeApi"}),
    "n8n-nodes-base.emailSend": ("", "", {"": "smtp"}),
    "n8n-nodes-base.gmail": (
        "authentication",
        "oAuth2",
        {"oAuth2": "gmailOAuth2", "serviceAccount": "googleApi"},
    ),
    "n8n-nodes-base.googleSheets": (
        "authentication",
        "oAuth2",
        {"oAuth2": "googleSheetsOAuth2Api", "serviceAccount": "googleApi"},
    ),
    "n8n-nodes-base.notion": ("authentication", "apiKey", {"apiKey": "notionApi"}),
    "n8n-nodes-base.airtable": (
        "authentication",
        "airtableTokenApi",
        {"airtableTokenApi": "airtableTokenApi", "airtableOAuth2Api": "airtableOAuth2Api"},
    ),
    "n8n-nodes-base.sendGrid": ("", "", {"": "sendGridApi"}),
    "n8n-nodes-base.pipedrive": (
        "authentication",
        "apiToken",
        {"apiToken": "pipedriveApi", "oAuth2": "pipedriveOAuth2Api"},
    ),
    "n8n-nodes-base.postgres": ("", "", {"": "postgres"}),
}
HTTP_REQUEST_NODE_TYPE = "n8n-nodes-base.httpRequest"


@dataclass(frozen=True)
class Reference:
    """One credential one node references (the file's id and name, as exported)."""

    node: str
    type: str
    name: str | None
    id: str | None

    @property
    def key(self) -> tuple[str, str | None, str | None]:
        """References with one key share one created credential (as they shared one in n8n)."""
        return (self.type, self.id, self.name)


def references(workflow: dict[str, Any]) -> Iterator[Reference]:
    for node in workflow.get("nodes", []):
        creds = node.get("credentials")
        if node.get("disabled", False) or not isinstance(creds, dict):
            continue
        for type_, ref in creds.items():
            ref = ref if isinstance(ref, dict) else {"name": ref}  # old exports: the name only
            name, id_ = ref.get("name"), ref.get("id")
            yield Reference(
                str(node.get("name")),
                str(type_),
                None if name is None else str(name),
                None if id_ is None else str(id_),
            )


def needed_types(node: dict[str, Any]) -> list[str]:
    """The credential types a node cannot run without (as far as the harness knows nodes)."""
    params = node.get("parameters") if isinstance(node.get("parameters"), dict) else {}
    assert isinstance(params, dict)
    kind = str(node.get("type"))
    if kind in TRIGGER_NODE_TYPES:
        auth = wj.trigger_auth_type(node, "workflow")
        return [] if auth is None else [auth]
    if kind == HTTP_REQUEST_NODE_TYPE:
        method = params.get("authentication", "none")
        chosen = {
            "predefinedCredentialType": params.get("nodeCredentialType"),
            "genericCredentialType": params.get("genericAuthType"),
        }.get(str(method))
        return [chosen] if isinstance(chosen, str) and chosen else []
    if kind in _NODE_AUTH:
        parameter, default, types = _NODE_AUTH[kind]
        method = str(params.get(parameter, default)) if parameter else ""
        return [types[method]] if method in types else []
    return []


def check(
    workflow: dict[str, Any],
    workflow_path: Path,
    manifest_path: Path,
    given: dict[str, dict[str, Any]],
    types: Catalogue | None = None,
) -> None:
    """Every credential the workflow needs is of a type n8n has (``types``: default, the
    installed n8n's catalogue), referenced and fillable, else one error line."""
    types = known_types() if types is None else types
    for ref in references(workflow):
        _check_known(ref.type, ref.node, f"credentials.{ref.type}", workflow_path, types, given)
    ctx = FillContext(smtp_port=0, redis_port=0)  # the shapes only; no data leaves this check
    for node in workflow.get("nodes", []):
        if node.get("disabled", False):
            continue
        referenced = node.get("credentials") if isinstance(node.get("credentials"), dict) else {}
        assert isinstance(referenced, dict)
        for type_ in needed_types(node):
            _check_known(type_, str(node.get("name")), "parameters", workflow_path, types, given)
            if type_ not in referenced and type_ not in given and type_ not in STACK_PROVIDED:
                raise ConfigError(
                    f"{workflow_path}: node {node.get('name')!r} needs a credential of type "
                    f'{type_} that the file does not reference; add {{"{type_}": {{}}}} to '
                    f"{manifest_path} field 'credentials' (the harness creates it and binds it "
                    "to the node), or select a credential on the node and export again"
                )
    for ref in references(workflow):
        if ref.type in STACK_PROVIDED:
            continue
        data, site = credential_data(ref.type, ref.name, ctx, given), host_field(ref.type, types)
        if data is not None and site is not None and site.site and not data.get(site.name):
            raise ConfigError(
                f"{workflow_path}: node {ref.node!r} uses a credential of type {ref.type} "
                f"({ref.name or 'unnamed'}), whose requests go to the site its field "
                f"{site.name!r} names; give it in {manifest_path} field 'credentials', e.g. "
                f'{{"{ref.type}": {{"{site.name}": "https://<your site>"}}}}, and map that '
                "host in 'upstreams'"
            )
        if data:
            continue
        raise ConfigError(
            f"{workflow_path}: node {ref.node!r} uses a credential of type {ref.type} "
            f"({ref.name or 'unnamed'}) that the harness cannot fill; give its data in "
            f"{manifest_path} field 'credentials.{ref.type}', e.g. {_example(ref.type, types)}"
        )


def _check_known(
    type_: str,
    node: str,
    field: str,
    workflow_path: Path,
    types: Catalogue,
    given: dict[str, dict[str, Any]],
) -> None:
    """n8n refuses to create a credential of a type it does not have (HTTP 400 "not a known
    type"), once the stack is up: refused here, at load, instead. A type whose data the
    manifest gives is left to n8n: an image of the user's own (``--n8n-image``) may have the
    community node that defines it."""
    if not types or type_ in types or type_ in STACK_PROVIDED or type_ in given:
        return  # an empty catalogue: n8n is not installed here, nothing to check against
    raise ConfigError(
        f"{workflow_path}: node {node!r} field {field!r}: n8n {DEFAULT_N8N_VERSION} has no "
        f"credential type {type_!r} (a typo, or a community node's type that this n8n does "
        "not have installed); correct the type there (or select the credential on the node "
        "in n8n and export the workflow again), or use one of n8n's own nodes instead; a "
        "community node in your own image (--backend compose --n8n-image): give the "
        f"credential's data in the manifest field 'credentials.{type_}'"
    )


def _example(type_: str, types: Catalogue) -> str:
    """Manifest data for ``type_`` with its real fields (the catalogue's), for a message."""
    required, others = user_fields(type_, types)
    if not required and not others:  # no catalogue here: a shape, not the type's fields
        return f'{{"{type_}": {{"apiKey": "test"}}}} (the fields of n8n\'s {type_} type)'
    shown = required or others[:2]
    data = ", ".join(f'"{name}": "..."' for name in shown)
    rest = [name for name in (*required, *others) if name not in shown]
    more = f" (its other fields: {', '.join(rest)})" if rest else ""
    return f'{{"{type_}": {{{data}}}}}{more}'


CreateCredential = Callable[[str, str, dict[str, Any]], str]


def provision(
    workflow: dict[str, Any],
    create: CreateCredential,
    ctx: FillContext,
    given: dict[str, dict[str, Any]],
    provided: dict[str, str] | None = None,
    fixed: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A copy of the workflow whose credential references carry ids of credentials created
    now (``create(name, type, data)`` returns the id). ``provided``: type -> an id the stack
    already has (the ledger's postgres); ``fixed``: node name -> the data of its credential
    (the trigger's auth, whose secret the sender sends). A node that needs a type the file does
    not reference, but the manifest gives, gets the reference added."""
    provided = provided or {}
    fixed = fixed or {}
    bound = copy.deepcopy(workflow)
    created: dict[tuple[str, str | None, str | None], str] = {}
    for node in bound.get("nodes", []):
        if node.get("disabled", False):
            continue
        creds = node.setdefault("credentials", {})
        for type_ in needed_types(node):
            creds.setdefault(type_, {"name": f"n8n-chaos {type_}"})
        if not creds:
            del node["credentials"]
        for type_, ref in list(creds.items()):
            ref = ref if isinstance(ref, dict) else {"name": ref}
            creds[type_] = ref
            if type_ in provided:
                ref["id"] = provided[type_]
                continue
            node_name = str(node.get("name"))
            own = fixed.get(node_name)
            key = (type_, ref.get("id"), ref.get("name") if own is None else f"node:{node_name}")
            if key not in created:
                name = str(ref.get("name") or f"n8n-chaos {type_}")
                try:
                    data = own if own is not None else credential_data(type_, name, ctx, given)
                except LookupError as exc:
                    raise SetupError(f"credential {name!r} ({type_}): {exc}") from exc
                if data is None:  # check() refused it at load; a defensive message
                    raise SetupError(f"no data for credential {name!r} of type {type_}")
                created[key] = create(name, type_, data)
            ref["id"] = created[key]
            ref.setdefault("name", f"n8n-chaos {type_}")
    return bound
