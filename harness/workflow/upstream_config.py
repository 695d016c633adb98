"""Internal: the manifest's ``upstreams`` as the fakes' config
(``fake_providers.upstreams.Upstream``), and what the workflow's nodes say about it
(warnings, one line each).

The provider receives the list over ``PUT /control/upstreams``; the warnings name what makes a
case judge less than the user thinks: a host the manifest maps but no node calls, an effect
route no node reaches, a host a node calls that no fake answers (the proxy answers it 502).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.workflow import credentials as creds
from harness.workflow import workflow_hosts as wh
from harness.workflow.credential_fill import GOOGLE_TOKEN_PATH, token_endpoint
from harness.workflow.manifest_upstreams import UpstreamSpec, parse_route

if TYPE_CHECKING:
    from fake_providers.upstreams import Upstream
    from harness.workflow.manifest_model import Manifest


def upstream_configs(manifest: Manifest) -> list[Upstream]:
    """One ``Upstream`` per host of the manifest's ``upstreams`` (empty: the bundled path)."""
    return configs_of(manifest.upstreams, manifest.business_key)


# Where a request carries the business key when the manifest does not say: named like the
# trigger's key (``order_id``), as Stripe metadata or a JSON field at the same path.
def _stripe_metadata(path: tuple[str, ...]) -> tuple[str, str]:
    return "form", f"metadata[{path[-1]}]"


def _json_field(path: tuple[str, ...]) -> tuple[str, str]:
    return "json", "/" + "/".join(path)


def _key_in_message(path: tuple[str, ...]) -> tuple[str, str]:
    """A mail: the case's key wherever the message has it (subject, headers, body)."""
    from fake_providers.upstreams import KEY_IN_TEXT

    del path
    return "body_regex", KEY_IN_TEXT


DEFAULT_REFERENCE: dict[str, Callable[[tuple[str, ...]], tuple[str, str]]] = {
    "stripe": _stripe_metadata,
    "record": _json_field,
    "mail": _key_in_message,
}


def configs_of(upstreams: dict[str, UpstreamSpec], business_key: str = "") -> list[Upstream]:
    """The fakes' config; a fake without a ``reference`` looks for the business key where
    ``DEFAULT_REFERENCE`` says."""
    # Imported here: the fakes' module is the provider's; the manifest loads without it.
    from fake_providers.personalities import personality
    from fake_providers.upstreams import (
        Collection,
        ReferenceSource,
        Route,
        RouteTemplate,
        Upstream,
    )

    key_path = tuple(p for p in business_key.replace("/", ".").split(".") if p)

    def route(text: str) -> Route:
        method, path = parse_route(text)
        return Route(method, path)

    found = []
    for host, spec in upstreams.items():
        reference = None
        if spec.reference is not None:
            regex = spec.reference.get("regex", "")
            ((kind, where),) = [(k, v) for k, v in spec.reference.items() if k != "regex"]
            reference = ReferenceSource(kind, where, regex)
        elif key_path and spec.personality:
            reference = personality(spec.personality).reference(key_path[-1])
        elif key_path and spec.fake in DEFAULT_REFERENCE:
            reference = ReferenceSource(*DEFAULT_REFERENCE[spec.fake](key_path))
        found.append(
            Upstream(
                host=host,
                fake=spec.fake,
                reference=reference,
                effects=tuple(route(r) for r in spec.effects),
                reads=tuple(route(r) for r in spec.reads),
                templates=tuple(
                    RouteTemplate(route(r), t.status, str(t.body))
                    for r, t in spec.templates.items()
                ),
                idempotency_header=spec.idempotency_header,
                effect=spec.effect,
                personality=spec.personality or "",
                collections=tuple(
                    Collection(
                        name,
                        tuple(route(r) for r in c.writes),
                        tuple(route(r) for r in c.reads),
                        c.identity,
                        c.per_path,
                    )
                    for name, c in spec.collections.items()
                ),
            )
        )
    return found


def upstream_warnings(
    manifest_path: Path,
    upstreams: dict[str, UpstreamSpec],
    workflows: list[tuple[Path, dict[str, Any]]],
    deployment: wh.Deployment | None = None,
) -> list[str]:
    """Mapped hosts no node calls, effect routes no node reaches, called hosts no fake answers
    (hosts reached through ``$env`` / ``$vars`` included), URLs from values nobody sets."""
    deployment = deployment or wh.Deployment()
    calls = [call for _, workflow in workflows for call in wh.calls(workflow, deployment)]
    # A token host is called by n8n itself when it refreshes a credential's token.
    called = {call.host for call in calls}.union(*(token_hosts(w) for _, w in workflows))
    unread = [name for _, workflow in workflows for name in wh.unread_nodes(workflow)]
    found = []
    for host, spec in upstreams.items():
        if host not in called and not unread:
            found.append(
                f"{manifest_path}: field 'upstreams.{host}': no node of the workflow calls "
                f"{host}; fix the host (the nodes call {_names(called)}) or drop it"
            )
            continue
        if unread:  # a service node whose host the JSON does not tell may send any route
            continue
        for text in spec.effects:
            method, path = parse_route(text)
            if not any(c.host == host and _reaches(c, method, path) for c in calls):
                found.append(
                    f"{manifest_path}: field 'upstreams.{host}.effects': no node sends "
                    f"{text!r}; the cases would count no commit there, so fix the route to "
                    "the method and path the node calls"
                )
    for file, workflow in workflows:
        for node, kind, name in wh.unset_references(workflow, deployment):
            field_name = "env" if kind == "env" else "variables"
            found.append(
                f"{file}: node {node!r} calls a URL from ${kind}.{name}, which the manifest's "
                f"field {field_name!r} does not set: n8n has no value for it; add "
                f'"{name}": "https://<the host>" there and map that host in \'upstreams\''
            )
    for call in calls:
        if call.host not in upstreams:
            found.append(
                f"{manifest_path}: node {call.node!r} calls {call.host} but field 'upstreams' "
                f'does not map it: the proxy answers it 502; add "{call.host}": "record" '
                "(or the fake that fits)"
            )
    return list(dict.fromkeys(found))


# What the token fake answers a refresh with (Google's token response; no refresh_token: n8n
# keeps the one it has).
REFRESHED_TOKEN = {
    "access_token": "ya29.n8n-chaos-refreshed",
    "token_type": "Bearer",
    "expires_in": 3599,
    "scope": "",
}
TOKEN_PATH = GOOGLE_TOKEN_PATH  # Google's (tests name it)


def token_upstreams(workflow: dict[str, Any], mapped: Collection[str]) -> list[Upstream]:
    """A token fake for each host where a credential the workflow references refreshes its
    OAuth2 token (``credential_fill.token_endpoint``), unless the manifest maps that host
    itself: a ``record`` upstream whose token route (``POST /token`` for Google) is a read
    (never a commit) answering a fresh token, so a refresh (n8n's answer to a 401) stays in
    the stack instead of meeting the proxy's 502."""
    from fake_providers.upstreams import Route, RouteTemplate, Upstream

    endpoints = token_endpoints(workflow)
    found = []
    for host in sorted(set(endpoints) - set(mapped)):
        routes = tuple(Route("POST", path) for path in sorted(endpoints[host]))
        answer = json.dumps(REFRESHED_TOKEN)
        found.append(
            Upstream(
                host=host,
                fake="record",
                reads=routes,
                templates=tuple(RouteTemplate(r, 200, answer) for r in routes),
            )
        )
    return found


def token_endpoints(workflow: dict[str, Any]) -> dict[str, set[str]]:
    """Where n8n would refresh the tokens of the credentials the workflow's nodes reference
    or need (a need the manifest's ``credentials`` fills gets its reference at deploy):
    host -> token paths."""
    types = {r.type for r in creds.references(workflow)}
    for node in workflow.get("nodes", []):
        if isinstance(node, dict) and not node.get("disabled", False):
            types.update(creds.needed_types(node))
    found: dict[str, set[str]] = {}
    for type_ in types:
        endpoint = token_endpoint(type_)
        if endpoint is not None:
            found.setdefault(endpoint[0], set()).add(endpoint[1])
    return found


def token_hosts(workflow: dict[str, Any]) -> set[str]:
    return set(token_endpoints(workflow))


def _reaches(call: wh.Call, method: str, path: str) -> bool:
    """Could this call be the route? Unknown method or path (a built-in node, an expression)
    counts as reaching it: the warning is for routes that certainly are never sent."""
    if method != "*" and call.method is not None and call.method != method:
        return False
    return call.path is None or fnmatchcase(call.path, path)


def _names(hosts: set[str]) -> str:
    return ", ".join(sorted(hosts)) or "no host"
