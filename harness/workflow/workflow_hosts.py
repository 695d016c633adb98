"""Internal: Which hosts a workflow's nodes call, read from the JSON (no n8n needed).

A node with a ``url`` parameter (HTTP Request, and any other) calls the literal host of that
URL; built-in service nodes call their service's fixed host; Send Email speaks SMTP ("smtp");
another node with a credential calls the host of its credential type's URL defaults (from n8n's
catalogue, ``harness.workflow.credential_catalogue``).
A URL that starts with the deployment's environment (``{{ $env.SUPABASE_URL }}/rest/v1``) or
an n8n Variable (``{{ $vars.API_BASE }}``) calls the host of the value the manifest gives it;
any other expression host (``{{ $env.N8N_CHAOS_UPSTREAM_PROVIDER }}``) or a loopback address is
not an intercepted host: it is skipped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.stack.intercept.config import LOOPBACK_HOSTS
from harness.workflow.credential_catalogue import installed_catalogue
from harness.workflow.manifest_upstreams import SMTP_HOST

# Built-in nodes whose requests go to one fixed host (n8n's node source: their base URLs).
BUILT_IN_HOSTS = {
    "n8n-nodes-base.stripe": "api.stripe.com",
    "n8n-nodes-base.gmail": "www.googleapis.com",
    "n8n-nodes-base.googleSheets": "sheets.googleapis.com",
    "n8n-nodes-base.notion": "api.notion.com",
    "n8n-nodes-base.airtable": "api.airtable.com",
    "n8n-nodes-base.sendGrid": "api.sendgrid.com",
    "n8n-nodes-base.pipedrive": "api.pipedrive.com",
    "n8n-nodes-base.emailSend": SMTP_HOST,
}
_URL = re.compile(r"^\s*=?\s*https?://([^/:?#\s{}]+)(:\d+)?([^?#\s]*)", re.IGNORECASE)
# {{ $env.NAME }}, {{ $env["NAME"] }}, {{ $vars.NAME }} (the whole expression, nothing more).
_DEPLOYMENT_VALUE = re.compile(r"""\{\{\s*\$(env|vars)(?:\.(\w+)|\[\s*['"](\w+)['"]\s*\])\s*\}\}""")


@dataclass(frozen=True)
class Call:
    """One node's calls to one host; method and path are None when not literal in the JSON."""

    node: str
    host: str
    method: str | None = None
    path: str | None = None


@dataclass(frozen=True)
class Deployment:
    """What the deployment holds for expressions: ``$env`` and ``$vars`` values by name."""

    env: Mapping[str, str] = field(default_factory=dict)
    variables: Mapping[str, str] = field(default_factory=dict)

    def resolve(self, url: str) -> str:
        """The URL with each ``{{ $env.X }}`` / ``{{ $vars.X }}`` the deployment sets
        replaced by its value (the leading ``=`` of an expression dropped then)."""

        def value(found: re.Match[str]) -> str:
            values = self.env if found.group(1) == "env" else self.variables
            return values.get(found.group(2) or found.group(3), found.group(0))

        resolved = _DEPLOYMENT_VALUE.sub(value, url)
        return resolved.lstrip().removeprefix("=") if resolved != url else url


def unset_references(
    workflow: dict[str, Any], deployment: Deployment
) -> Iterator[tuple[str, str, str]]:
    """(node, "env" | "vars", name) of each URL that starts from a value the deployment
    does not set (the harness's own ``N8N_CHAOS_*`` variables aside)."""
    for node in workflow.get("nodes", []):
        params = node.get("parameters") if isinstance(node, dict) else None
        url = params.get("url") if isinstance(params, dict) else None
        if not isinstance(url, str) or node.get("disabled", False):
            continue
        for found in _DEPLOYMENT_VALUE.finditer(url):
            kind, name = found.group(1), found.group(2) or found.group(3)
            values = deployment.env if kind == "env" else deployment.variables
            if name not in values and not name.startswith("N8N_CHAOS_"):
                yield str(node.get("name")), kind, name


def calls(workflow: dict[str, Any], deployment: Deployment | None = None) -> Iterator[Call]:
    deployment = deployment or Deployment()
    for node in workflow.get("nodes", []):
        if not isinstance(node, dict) or node.get("disabled", False):
            continue
        name = str(node.get("name"))
        fixed = BUILT_IN_HOSTS.get(str(node.get("type")))
        if fixed is not None:
            yield Call(name, fixed)
            continue
        params = node.get("parameters")
        url = params.get("url") if isinstance(params, dict) else None
        url = deployment.resolve(url) if isinstance(url, str) else url
        if not isinstance(url, str) or (found := _URL.match(url)) is None:
            yield from (Call(name, host) for host in _credential_hosts(node))
            continue
        host = found.group(1).lower()
        if host in LOOPBACK_HOSTS:
            continue
        path = found.group(3) or "/"
        assert isinstance(params, dict)
        method = params.get("method", params.get("requestMethod", "GET"))
        yield Call(
            name,
            host,
            method.upper() if isinstance(method, str) and "{{" not in method else None,
            None if "{{" in path else path,
        )


def _credential_hosts(node: dict[str, Any]) -> list[str]:
    """The hosts of the URL defaults of the node's credential types (Telegram's
    ``baseUrl: https://api.telegram.org``): where a service node without a ``url`` calls."""
    creds = node.get("credentials")
    hosts = []
    for type_ in creds if isinstance(creds, dict) else {}:
        entry = installed_catalogue().get(str(type_)) or {}
        for prop in entry.get("properties") or []:
            default = prop.get("default") if isinstance(prop, dict) else None
            found = _URL.match(default) if isinstance(default, str) else None
            if found is not None and found.group(1).lower() not in LOOPBACK_HOSTS:
                hosts.append(found.group(1).lower())
    return list(dict.fromkeys(hosts))


def unread_nodes(workflow: dict[str, Any]) -> list[str]:
    """Nodes with a credential (a service they call) whose hosts the JSON does not tell."""
    reading = {call.node for call in calls(workflow)}
    return [
        str(node.get("name"))
        for node in workflow.get("nodes", [])
        if isinstance(node, dict)
        and not node.get("disabled", False)
        and isinstance(node.get("credentials"), dict)
        and set(node["credentials"]) - {"postgres"}
        and str(node.get("name")) not in reading
    ]
