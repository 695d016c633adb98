"""Internal: the credential types the harness fills itself, one entry each: what their data
is in the test n8n, pointing at the fakes (``FillContext`` carries this run's secret and addresses).

A type not in ``FILLABLE`` is filled from n8n's own catalogue of credential types
(``harness.workflow.credential_catalogue``: every field's default, or a secret), unless it needs an
authorization flow's token; then its data comes from the manifest's ``credentials`` field.
Data given there is laid over a filled type's (by type, then by the credential's name).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from harness.workflow.credential_catalogue import generic_fill, oauth2_token_url
from harness.workflow.credential_hosts import host_fields

# A header the harness's trigger auth sends (and the HTTP Request nodes' header auth).
HEADER_AUTH_NAME = "Authorization"
BASIC_AUTH_USER = "n8n-chaos"


@dataclass(frozen=True)
class FillContext:
    """This run's values: a random secret, the SMTP sink's port (the stack's "smtp" link),
    the generic OAuth2 type's token endpoint (a token fake answers it) and the hosts the
    manifest maps (a credential's host field is set to one: ``credential_hosts``)."""

    secret: str = field(default_factory=lambda: secrets.token_urlsafe(24), repr=False)
    hosts: tuple[str, ...] = ()
    smtp_host: str = "127.0.0.1"
    smtp_port: int | None = None
    token_url: str = ""  # GENERIC_TOKEN_URL (defined below)
    redis_port: int | None = None


def _smtp(ctx: FillContext) -> dict[str, Any]:
    if ctx.smtp_port is None:
        raise LookupError(
            "the stack has no 'smtp' link to the mail fake; map 'smtp' to 'mail' in the "
            "manifest's upstreams"
        )
    # No TLS: the mail fake speaks plain SMTP (disableStartTls keeps nodemailer from asking).
    return {
        "host": ctx.smtp_host,
        "port": ctx.smtp_port,
        "secure": False,
        "disableStartTls": True,
        "user": BASIC_AUTH_USER,
        "password": ctx.secret,
    }


def _oauth2_client(ctx: FillContext) -> dict[str, Any]:
    return {"clientId": "n8n-chaos", "clientSecret": ctx.secret}


def _oauth2_connected(ctx: FillContext) -> dict[str, Any]:
    """An authorization-code type (Google's) as n8n stores it once connected: the client and
    the token its OAuth2 callback would have saved. n8n signs each request with the access
    token and refreshes only when the API answers 401, at the type's own token URL
    (``https://oauth2.googleapis.com/token`` for Google, a hidden field): the harness maps
    that host to a token fake (``harness.workflow.upstream_config.token_upstreams``). Created
    through the editor's API (``N8nApi.create_credential``): the public one refuses the token."""
    return {
        **_oauth2_client(ctx),
        "oauthTokenData": {
            "access_token": f"ya29.n8n-chaos-{ctx.secret}",
            "refresh_token": f"1//n8n-chaos-{ctx.secret}",
            "token_type": "Bearer",
            "expires_in": 3599,
            "scope": "",
        },
    }


def _oauth2_generic(ctx: FillContext) -> dict[str, Any]:
    """The generic type (``oAuth2Api``: PayPal and any service n8n has no type for) with the
    client-credentials grant: n8n fetches a token at ``accessTokenUrl`` before its first
    request, through the intercepting proxy, from the token fake of ``GENERIC_TOKEN_HOST``
    (``harness.workflow.upstream_config.token_upstreams``), as a connected type refreshes its
    own."""
    return {
        "grantType": "clientCredentials",
        "accessTokenUrl": ctx.token_url or GENERIC_TOKEN_URL,
        "scope": "",
        "authentication": "header",
        **_oauth2_client(ctx),
    }


# n8n's queue uses database 0 of the stack's Redis; a workflow's own keys (a dedup SETNX) get
# another, so its Redis node meets real Redis semantics without touching the queue.
WORKFLOW_REDIS_DB = 1


def _redis(ctx: FillContext) -> dict[str, Any]:
    if ctx.redis_port is None:
        raise LookupError("the stack has no Redis address for the workflow's Redis node")
    return {
        "host": "127.0.0.1",
        "port": ctx.redis_port,
        "database": WORKFLOW_REDIS_DB,
        "user": "",
        "password": "",
        "ssl": False,
    }


# A Supabase project the manifest maps to the postgrest personality (another project's URL
# goes in the manifest's credentials.supabaseApi.host); a Twilio test account's SID.
SUPABASE_URL = "https://n8n-chaos.supabase.co"
TWILIO_ACCOUNT_SID = "AC0123456789abcdef0123456789abcdef"

FILLABLE: dict[str, Callable[[FillContext], dict[str, Any]]] = {
    "stripeApi": lambda ctx: {"secretKey": f"sk_test_{ctx.secret}"},
    "smtp": _smtp,
    "redis": _redis,
    "httpBasicAuth": lambda ctx: {"user": BASIC_AUTH_USER, "password": ctx.secret},
    "httpHeaderAuth": lambda ctx: {"name": HEADER_AUTH_NAME, "value": f"Bearer {ctx.secret}"},
    "oAuth2Api": _oauth2_generic,
    "googleOAuth2Api": _oauth2_connected,
    "googleSheetsOAuth2Api": _oauth2_connected,
    "gmailOAuth2": _oauth2_connected,
    "notionApi": lambda ctx: {"apiKey": f"secret_{ctx.secret}"},
    "airtableTokenApi": lambda ctx: {"accessToken": f"pat{ctx.secret}"},
    "sendGridApi": lambda ctx: {"apiKey": f"SG.{ctx.secret}"},
    "pipedriveApi": lambda ctx: {"apiToken": ctx.secret},
    # HubSpot's private-app token (the HTTP Request node's predefined type for api.hubapi.com).
    "hubspotAppToken": lambda ctx: {"appToken": f"pat-na1-{ctx.secret}"},
    # The catalogue's default would make the project URL a bare 127.0.0.1 (a "host" field):
    # the Supabase node calls <host>/rest/v1, so it is a project URL the manifest maps.
    "supabaseApi": lambda ctx: {"host": SUPABASE_URL, "serviceRole": ctx.secret},
    # The account SID is in the node's URL (/Accounts/<sid>/Messages.json): not left empty.
    "twilioApi": lambda ctx: {
        "authType": "authToken",
        "accountSid": TWILIO_ACCOUNT_SID,
        "authToken": ctx.secret,
    },
}


# Where n8n refreshes a connected type's token (the type's hidden ``accessTokenUrl``): the
# harness answers it with a token fake (``harness.workflow.upstream_config.token_upstreams``).
GOOGLE_TOKEN_HOST = "oauth2.googleapis.com"
TOKEN_HOSTS = {
    "googleOAuth2Api": GOOGLE_TOKEN_HOST,
    "googleSheetsOAuth2Api": GOOGLE_TOKEN_HOST,
    "gmailOAuth2": GOOGLE_TOKEN_HOST,
}
GOOGLE_TOKEN_PATH = "/token"
# The generic type's token endpoint: a host no service owns (RFC 6761's .test), answered only
# by its token fake inside the stack.
GENERIC_TOKEN_HOST = "oauth2.n8n-chaos.test"
GENERIC_TOKEN_URL = f"https://{GENERIC_TOKEN_HOST}/token"


def token_endpoint(type_: str) -> tuple[str, str] | None:
    """(host, path) where n8n fetches or refreshes an OAuth2 type's token, or None."""
    if type_ in TOKEN_HOSTS:
        return TOKEN_HOSTS[type_], GOOGLE_TOKEN_PATH
    if type_ == "oAuth2Api":
        parts = urlsplit(GENERIC_TOKEN_URL)
        return GENERIC_TOKEN_HOST, parts.path
    url = oauth2_token_url(type_)
    if url is None:
        return None
    parts = urlsplit(url)
    return (parts.hostname or "").lower(), parts.path or "/"


def credential_data(
    type_: str,
    name: str | None,
    ctx: FillContext,
    given: dict[str, dict[str, Any]],
) -> dict[str, Any] | None:
    """The data of one credential: the table's, overlaid with the manifest's by type and by
    name; None when neither knows the type."""
    fill = FILLABLE.get(type_)
    if fill is None and oauth2_token_url(type_) is not None:
        fill = _oauth2_connected  # any authorization-code OAuth2 type, as Google's
    overlays = [given[k] for k in (type_, name) if k is not None and k in given]
    generic = None if fill is not None else generic_fill(type_, ctx.secret)
    if fill is None and generic is None and not any(overlays):
        return None
    if generic is not None:
        generic |= host_fields(type_, ctx.hosts, ctx.secret)
    data = fill(ctx) if fill is not None else (generic or {})
    for overlay in overlays:
        data = {**data, **overlay}
    return data
