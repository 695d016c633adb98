"""Internal: credential fields that decide the host a service node calls.

Many of n8n's credential types take their host from a field, as their test request's base
URL in n8n's catalogue says: a label of the host (Zendesk's
``https://{{$credentials.subdomain}}.zendesk.com/api/v2``, Freshdesk's, Shopify's; Mailchimp's
data centre, the API key's part after its last "-") or the whole site URL (Jira's
``{{$credentials.domain}}``, Mautic's, GitLab's). Filled with a secret or left empty, as
other fields are, such a field makes a host that changes every run (no manifest can map it)
or a URL n8n refuses ("Invalid URL"). ``host_fields`` sets them to a host the manifest maps
(``acme.zendesk.com`` gives the subdomain ``acme``) or else to a fixed one
(``n8n-chaos.zendesk.com``, a site's placeholder ``https://example.atlassian.net``): the
node then calls the same host every run, and the proxy's refusal names one the user can map.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from harness.workflow.credential_catalogue import Catalogue, installed_catalogue

# {{$credentials.subdomain}}, {{ $credentials?.shopSubdomain }},
# {{$credentials.apiKey.split("-").pop()}}
_FIELD_IN_URL = re.compile(r"\{\{\s*\$credentials\??\.(\w+)\s*(.*?)\s*\}\}")
_KEY_SUFFIX = '.split("-").pop()'  # Mailchimp: the data centre is the key's suffix
# A site URL with its trailing slash dropped: ?.replace(/\/+$/, ""), .replace(new RegExp("/$"), "")
_TRAILING_SLASH = re.compile(r"^\??\.(trim\(\)\.)?replace\([^()]*(\([^()]*\))?[^()]*\)$")
_LABEL_BEFORE = re.compile(r"^https?://([\w.-]*)$")
_LABEL_AFTER = re.compile(r"^[\w.-]*")
HOST_LABEL = "n8n-chaos"  # the label when the manifest maps no host of the type


@dataclass(frozen=True)
class HostField:
    """A field of a credential type that makes its host: ``before`` + value + ``after`` (a
    label), or the whole site URL (``site``, with the type's placeholder for it)."""

    name: str
    site: bool
    before: str = ""
    after: str = ""
    key_suffix: bool = False
    placeholder: str = ""


def host_field(type_: str, types: Catalogue | None = None) -> HostField | None:
    """The field of ``type_`` that makes the host its requests go to, or None."""
    types = installed_catalogue() if types is None else types
    entry = types.get(type_) or {}
    request = (entry.get("test") or {}).get("request") or {}
    base = request.get("baseURL") or request.get("url")
    found = _FIELD_IN_URL.search(base.lstrip("= ")) if isinstance(base, str) else None
    if found is None:
        return None
    assert isinstance(base, str)
    base = base.lstrip("= ")
    name, transform = found.group(1), found.group(2)
    if found.start() == 0 and (not transform or _TRAILING_SLASH.match(transform)):
        return HostField(name, site=True, placeholder=_placeholder(entry, name))
    before = _LABEL_BEFORE.match(base[: found.start()])
    if before is None or transform not in ("", _KEY_SUFFIX):
        return None  # a field in the path (Twilio's account), or an expression of several
    after = _LABEL_AFTER.match(base[found.end() :])
    assert after is not None
    return HostField(name, False, before.group(1), after.group(0), transform == _KEY_SUFFIX)


def host_fields(
    type_: str, hosts: Iterable[str], secret: str, types: Catalogue | None = None
) -> dict[str, str]:
    """``type_``'s host field set to a host of ``hosts`` (the manifest's) that fits it, else
    to a fixed host; {} for a type whose host no field makes, or a site without placeholder."""
    field = host_field(type_, types)
    if field is None:
        return {}
    if field.site:
        site = urlsplit(field.placeholder).hostname if "://" in field.placeholder else None
        domain = site.partition(".")[2] if site else ""  # "atlassian.net"; "com" fits any
        domain = domain if "." in domain else ""
        mapped = next((h for h in hosts if domain and h.endswith(f".{domain}")), None)
        host = mapped or site
        return {field.name: f"https://{host}"} if host else {}
    label = re.compile(f"^{re.escape(field.before)}([a-z0-9-]+){re.escape(field.after)}$")
    fits = (found.group(1) for h in hosts if (found := label.match(h)))
    value = next(fits, HOST_LABEL)
    if field.key_suffix:  # the key's own part must hold no "-"
        value = f"n8nchaos{secret.replace('-', '')}-{value}"
    return {field.name: value}


def _placeholder(entry: Mapping[str, Any], name: str) -> str:
    for prop in entry.get("properties") or []:
        if isinstance(prop, dict) and prop.get("name") == name:
            return str(prop.get("placeholder") or "")
    return ""
