"""Internal: n8n's own catalogue of credential types, for the types
``harness.workflow.credential_fill`` has no entry for.

A node of any service (Slack, Telegram, Trello, Twilio, Mailchimp, ...) names a credential of
an API-key type. n8n-nodes-base ships every type's fields with their defaults
(``dist/types/credentials.json``); the harness fills each field with its default, or with a
per-run secret where it has none, so the credential can be created and the node sends its
request: through the run's proxy, to the fake its host maps to (or to the proxy's refusal).
The defaults matter: they hold the service's base URL (Telegram's ``https://api.telegram.org``),
which is the host the manifest maps.

Types that need a token obtained beforehand (OAuth1/OAuth2 authorization codes) are not
filled here; ``oauth2_token_url`` tells ``harness.workflow.credential_fill`` where an OAuth2 type
refreshes its token, so it can be created already connected.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from harness.stack.install import DEFAULT_N8N_VERSION, default_cache_dir

CATALOGUE_FILE = "node_modules/n8n-nodes-base/dist/types/credentials.json"
# The AI nodes' own types (anthropicApi, pineconeApi, ...): n8n knows them too.
AI_CATALOGUE_FILE = "node_modules/@n8n/n8n-nodes-langchain/dist/types/credentials.json"
# A type extending one of these needs a token from an authorization flow.
_TOKEN_FLOWS = frozenset({"oAuth1Api", "oAuth2Api"})
_SKIPPED_KINDS = frozenset({"hidden", "notice"})
_HOST_FIELD = re.compile(r"host|hostname|server", re.IGNORECASE)
_NEEDS_REAL_KEY = re.compile(r"private_?key|certificate|passphrase", re.IGNORECASE)

Catalogue = Mapping[str, Mapping[str, Any]]


@functools.cache
def installed_catalogue(n8n_version: str = DEFAULT_N8N_VERSION) -> Catalogue:
    """The catalogue of the installed n8n (empty when that version is not installed)."""
    return _read_catalogue(default_cache_dir() / "n8n" / n8n_version / CATALOGUE_FILE)


@functools.cache
def known_types(n8n_version: str = DEFAULT_N8N_VERSION) -> Catalogue:
    """Every credential type the installed n8n has, its AI nodes' included (empty when that
    version is not installed): a type outside it is one n8n refuses to create."""
    base = installed_catalogue(n8n_version)
    if not base:
        return {}
    ai = _read_catalogue(default_cache_dir() / "n8n" / n8n_version / AI_CATALOGUE_FILE)
    return {**ai, **base}


def _read_catalogue(path: Path) -> Catalogue:
    try:
        entries = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(entries, list):
        return {}
    return {e["name"]: e for e in entries if isinstance(e, dict) and isinstance(e.get("name"), str)}


def _lineage(types: Catalogue, name: str, seen: frozenset[str] = frozenset()) -> Iterator[str]:
    """The type and every type it extends (parents after children)."""
    if name in seen or name not in types:
        return
    yield name
    for parent in types[name].get("extends") or []:
        yield from _lineage(types, str(parent), seen | {name})


def generic_fill(type_: str, secret: str, types: Catalogue | None = None) -> dict[str, Any] | None:
    """Data for a credential of ``type_`` from n8n's catalogue; None when the catalogue does
    not know the type or the type needs an authorization flow's token."""
    types = installed_catalogue() if types is None else types
    lineage = list(_lineage(types, type_))
    if not lineage or _TOKEN_FLOWS & set(lineage):
        return None
    data: dict[str, Any] = {}
    for name in reversed(lineage):  # a child's field overrides its parent's
        for prop in types[name].get("properties") or []:
            value = _value(prop, secret)
            if value is not None:
                data[str(prop["name"])] = value
    # A key that must parse (a service account's PEM) cannot be a random secret.
    if any(_NEEDS_REAL_KEY.search(field) and value for field, value in data.items()):
        return None
    return data


def _value(prop: Mapping[str, Any], secret: str) -> Any:
    kind, default = prop.get("type"), prop.get("default")
    if kind in _SKIPPED_KINDS or "name" not in prop:
        return None
    if isinstance(default, str) and default.startswith("="):  # an expression of other fields
        return None
    if kind == "options":
        options = prop.get("options") or []
        first = options[0].get("value") if options and isinstance(options[0], dict) else None
        return default if default not in (None, "") else first
    if kind == "boolean":
        return bool(default)
    if kind == "number":
        return default if isinstance(default, int | float) else 0
    if kind == "string":
        if isinstance(default, str) and default:
            return default
        # A raw TCP service (FTP, a database) connects to no name that DNS would look up.
        if _HOST_FIELD.fullmatch(str(prop["name"])):
            return "127.0.0.1"
        # A key or token the node sends gets the secret; an optional field stays empty, as
        # the editor leaves it (a filled organization id or domain would change requests).
        options = prop.get("typeOptions") or {}
        return f"n8n-chaos-{secret}" if prop.get("required") or options.get("password") else ""
    return None  # json, collections: n8n's own default applies


def oauth2_token_url(type_: str, types: Catalogue | None = None) -> str | None:
    """The token URL of an OAuth2 type that n8n connects through an authorization flow (its
    hidden ``accessTokenUrl`` default: Slack's, HubSpot's, Zoom's ...), where n8n refreshes
    the token; None for other types and for a URL that is an expression of other fields."""
    types = installed_catalogue() if types is None else types
    lineage = list(_lineage(types, type_))
    if "oAuth2Api" not in lineage or type_ == "oAuth2Api":
        return None
    for name in lineage:  # the child's field first
        for prop in types[name].get("properties") or []:
            if isinstance(prop, dict) and prop.get("name") == "accessTokenUrl":
                url = prop.get("default")
                return url if isinstance(url, str) and url.startswith("https://") else None
    return None


def user_fields(type_: str, types: Catalogue) -> tuple[list[str], list[str]]:
    """(the fields a user must give, the other fields the editor shows) of ``type_``, its
    parents' included: the real field names a message can show. A field the editor hides, or
    shows only for another choice than the defaults (``displayOptions``), is in neither."""
    fields: dict[str, Mapping[str, Any]] = {}
    for name in reversed(list(_lineage(types, type_))):  # a child's field overrides its parent's
        for prop in types[name].get("properties") or []:
            if isinstance(prop, dict) and isinstance(prop.get("name"), str):
                fields[prop["name"]] = prop
    defaults = {name: prop.get("default") for name, prop in fields.items()}
    shown = [
        name
        for name, prop in fields.items()
        if prop.get("type") not in _SKIPPED_KINDS and _shown(prop, defaults)
    ]
    required = [name for name in shown if fields[name].get("required")]
    return required, [name for name in shown if name not in required]


def _shown(prop: Mapping[str, Any], values: Mapping[str, Any]) -> bool:
    """Whether the editor shows the field while every other field holds its default."""
    options = prop.get("displayOptions") or {}
    show, hide = options.get("show") or {}, options.get("hide") or {}
    if any(values.get(name) not in allowed for name, allowed in show.items()):
        return False
    return not any(values.get(name) in hidden for name, hidden in hide.items())
