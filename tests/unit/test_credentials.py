"""Credentials the workflow names, provided: created per run with data pointing at the fakes,
and bound by id in the deployed copy only."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness import loopback
from harness.errors import ConfigError, SetupError
from harness.stack.install import DEFAULT_N8N_VERSION
from harness.stack.n8n_api import N8nApi, Owner
from harness.workflow import credentials as creds
from harness.workflow.credential_catalogue import known_types, user_fields
from harness.workflow.credential_fill import (
    FILLABLE,
    GENERIC_TOKEN_HOST,
    GENERIC_TOKEN_URL,
    TOKEN_HOSTS,
    WORKFLOW_REDIS_DB,
    FillContext,
    credential_data,
    token_endpoint,
)
from harness.workflow.manifest import load_manifest

EXPORTS = Path(__file__).parent / "fixtures" / "exports"


class Recorder:
    """Stands in for N8nApi.create_credential: records each call, answers a new id."""

    def __init__(self) -> None:
        self.created: list[tuple[str, str, dict[str, Any]]] = []

    def __call__(self, name: str, type_: str, data: dict[str, Any]) -> str:
        self.created.append((name, type_, data))
        return f"new-{len(self.created)}"


def test_each_referenced_credential_is_created_once_and_rebound() -> None:
    wut = load_manifest(EXPORTS / "stripe_node_charge")
    original = copy.deepcopy(wut.workflow)
    create = Recorder()
    ctx = FillContext(secret="s3cret")
    bound = creds.provision(wut.workflow, create, ctx, {})
    # Two nodes shared one credential in the export: they share one here too.
    assert create.created == [("Stripe live", "stripeApi", {"secretKey": "sk_test_s3cret"})]
    assert [n.get("credentials") for n in bound["nodes"]] == [
        None,
        {"stripeApi": {"id": "new-1", "name": "Stripe live"}},
        {"stripeApi": {"id": "new-1", "name": "Stripe live"}},
    ]
    assert wut.workflow == original  # the loaded file is untouched

    def without_ids(workflow: dict[str, Any]) -> str:
        text = json.dumps(workflow, sort_keys=True)
        return text.replace('"id": "7"', "ID").replace('"id": "new-1"', "ID")

    assert without_ids(bound) == without_ids(original)


def test_smtp_points_at_the_stacks_smtp_link_without_tls() -> None:
    wut = load_manifest(EXPORTS / "smtp_receipt")
    create = Recorder()
    assert wut.trigger_auth is not None
    creds.provision(
        wut.workflow,
        create,
        FillContext(smtp_port=2525),
        {},
        fixed={"Paid order": wut.trigger_auth.data},
    )
    by_type = {type_: (name, data) for name, type_, data in create.created}
    name, smtp = by_type["smtp"]
    assert name == "SMTP account"
    assert (smtp["host"], smtp["port"], smtp["secure"], smtp["disableStartTls"]) == (
        "127.0.0.1",
        2525,
        False,
        True,
    )
    # The trigger's credential carries the secret the sender sends.
    assert by_type["httpBasicAuth"] == ("Shop webhook login", wut.trigger_auth.data)


def test_smtp_without_a_link_is_a_setup_error_naming_the_fix() -> None:
    wut = load_manifest(EXPORTS / "smtp_receipt")
    with pytest.raises(SetupError, match=r"'SMTP account' \(smtp\): the stack has no 'smtp' link"):
        creds.provision(wut.workflow, Recorder(), FillContext(), {})


def test_postgres_is_bound_to_the_stacks_ledger_and_given_types_get_a_reference() -> None:
    workflow = {
        "nodes": [
            {"name": "Ledger", "type": "n8n-nodes-base.postgres", "parameters": {}},
            {"name": "Mail", "type": "n8n-nodes-base.sendGrid", "parameters": {}},
        ]
    }
    create = Recorder()
    bound = creds.provision(
        workflow,
        create,
        FillContext(secret="x"),
        {"sendGridApi": {"apiKey": "SG.mine"}},
        provided={"postgres": "ledger-1"},
    )
    assert bound["nodes"][0]["credentials"] == {
        "postgres": {"id": "ledger-1", "name": "n8n-chaos postgres"}
    }
    assert bound["nodes"][1]["credentials"]["sendGridApi"]["id"] == "new-1"
    assert create.created == [("n8n-chaos sendGridApi", "sendGridApi", {"apiKey": "SG.mine"})]


def test_the_manifest_overlays_by_type_then_by_name() -> None:
    ctx = FillContext(secret="s")
    given = {"stripeApi": {"secretKey": "sk_test_type"}, "Shop": {"secretKey": "sk_test_name"}}
    assert credential_data("stripeApi", "Other", ctx, given) == {"secretKey": "sk_test_type"}
    assert credential_data("stripeApi", "Shop", ctx, given) == {"secretKey": "sk_test_name"}
    assert credential_data("salesforceOAuth2Api", "Hunter", ctx, {}) is None
    assert credential_data("salesforceOAuth2Api", "Hunter", ctx, {"Hunter": {"apiKey": "k"}}) == {
        "apiKey": "k"
    }


def test_every_fillable_type_fills_without_secrets_shared_between_runs() -> None:
    one, two = FillContext(smtp_port=1, redis_port=2), FillContext(smtp_port=1, redis_port=2)
    for type_, fill in FILLABLE.items():
        if type_ != "redis":  # the run's own Redis: an address, no secret
            assert fill(one) != fill(two), type_
    assert FILLABLE["redis"](one) == {
        "host": "127.0.0.1",
        "port": 2,
        "database": WORKFLOW_REDIS_DB,
        "user": "",
        "password": "",
        "ssl": False,
    }
    generic = FILLABLE["oAuth2Api"](one)
    assert generic["grantType"] == "clientCredentials"
    # n8n fetches the token where a token fake answers it (as a connected type refreshes).
    assert generic["accessTokenUrl"] == GENERIC_TOKEN_URL
    assert token_endpoint("oAuth2Api") == (GENERIC_TOKEN_HOST, "/token")
    # Only the fields of n8n's type (HubspotAppToken.credentials: appToken).
    assert set(FILLABLE["hubspotAppToken"](one)) == {"appToken"}
    # The Supabase node calls <host>/rest/v1: a project URL, not the catalogue's bare address.
    assert FILLABLE["supabaseApi"](one)["host"] == "https://n8n-chaos.supabase.co"
    # Twilio's URL carries the account SID (/Accounts/<sid>/Messages.json).
    assert FILLABLE["twilioApi"](one)["accountSid"].startswith("AC")


@pytest.mark.parametrize(
    ("node", "types"),
    [
        ({"type": "n8n-nodes-base.stripe"}, ["stripeApi"]),
        ({"type": "n8n-nodes-base.emailSend"}, ["smtp"]),
        ({"type": "n8n-nodes-base.gmail"}, ["gmailOAuth2"]),
        (
            {
                "type": "n8n-nodes-base.googleSheets",
                "parameters": {"authentication": "serviceAccount"},
            },
            ["googleApi"],
        ),
        (
            {
                "type": "n8n-nodes-base.httpRequest",
                "parameters": {
                    "authentication": "genericCredentialType",
                    "genericAuthType": "httpHeaderAuth",
                },
            },
            ["httpHeaderAuth"],
        ),
        ({"type": "n8n-nodes-base.httpRequest", "parameters": {"url": "https://x"}}, []),
        (
            {"type": "n8n-nodes-base.webhook", "parameters": {"authentication": "basicAuth"}},
            ["httpBasicAuth"],
        ),
        ({"type": "n8n-nodes-base.set"}, []),
    ],
)
def test_needed_types(node: dict[str, Any], types: list[str]) -> None:
    assert creds.needed_types(node) == types


@pytest.mark.parametrize(
    ("name", "type_"),
    [("gmail_receipt", "gmailOAuth2"), ("sheets_order_row", "googleSheetsOAuth2Api")],
)
def test_google_oauth2_credentials_are_created_connected(name: str, type_: str) -> None:
    """As n8n stores them after its OAuth2 callback: the client, and a token the node signs
    its requests with (n8n refuses an authorization-code type without ``oauthTokenData``:
    "OAuth credentials not connected"). The token URL is the type's own (hidden) one."""
    create = Recorder()
    bound = creds.provision(load_manifest(EXPORTS / name).workflow, create, FillContext("s"), {})
    [(_, created_type, data)] = create.created
    assert created_type == type_
    assert data == {
        "clientId": "n8n-chaos",
        "clientSecret": "s",
        "oauthTokenData": {
            "access_token": "ya29.n8n-chaos-s",
            "refresh_token": "1//n8n-chaos-s",
            "token_type": "Bearer",
            "expires_in": 3599,
            "scope": "",
        },
    }
    assert "accessTokenUrl" not in data and "grantType" not in data
    assert bound["nodes"][1]["credentials"][type_]["id"] == "new-1"
    assert TOKEN_HOSTS[type_] == "oauth2.googleapis.com"


def test_an_oauth2_credential_with_a_token_goes_through_the_editors_api() -> None:
    """The public API refuses ``oauthTokenData`` (not a field the type shows); the editor's
    POST /rest/credentials, after the owner's login, takes it and n8n encrypts it."""
    seen: list[tuple[str, str, dict[str, str], Any]] = []

    def n8n(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else None
        seen.append((request.method, request.url.path, dict(request.headers), body))
        if request.url.path == "/rest/login":
            return httpx.Response(200, json={"data": {}}, headers={"set-cookie": "n8n-auth=t"})
        if request.url.path == "/rest/credentials":
            return httpx.Response(200, json={"data": {"id": "c-1"}})
        return httpx.Response(200, json={"id": "p-1"})

    owner = Owner("o@x.test", "pw", "key")
    api = N8nApi("http://127.0.0.1:9", "key", owner=owner)
    transport = httpx.MockTransport(n8n)
    api._client = httpx.Client(base_url="http://127.0.0.1:9/api/v1", transport=transport)
    real_client = loopback.client
    try:
        loopback.client = lambda **kw: httpx.Client(transport=transport, **kw)  # type: ignore[assignment]
        data = FILLABLE["gmailOAuth2"](FillContext("s"))
        assert api.create_credential("Gmail", "gmailOAuth2", data) == "c-1"
        assert api.create_credential("Gmail 2", "gmailOAuth2", data) == "c-1"
        assert api.create_credential("Stripe", "stripeApi", {"secretKey": "sk_test_s"}) == "p-1"
    finally:
        loopback.client = real_client  # type: ignore[assignment]
    paths = [(method, path) for method, path, _, _ in seen]
    assert paths == [
        ("POST", "/rest/login"),  # once: the session is kept
        ("POST", "/rest/credentials"),
        ("POST", "/rest/credentials"),
        ("POST", "/api/v1/credentials"),
    ]
    assert seen[0][3] == {"emailOrLdapLoginId": "o@x.test", "password": "pw"}
    assert seen[1][2]["browser-id"] == seen[0][2]["browser-id"]
    assert seen[1][2]["cookie"] == "n8n-auth=t"
    assert seen[1][3] == {"name": "Gmail", "type": "gmailOAuth2", "data": data}


def test_without_the_owner_an_oauth2_token_is_a_setup_error() -> None:
    api = N8nApi("http://127.0.0.1:9", "key")
    with pytest.raises(SetupError, match="needs the owner's login"):
        api.create_credential("Gmail", "gmailOAuth2", FILLABLE["gmailOAuth2"](FillContext()))


# -- the load-time check against n8n's catalogue of credential types -------------------------

# A catalogue as n8n ships it: a service-account type whose key must parse (not fillable).
SERVICE_ACCOUNT = {
    "googleApi": {
        "name": "googleApi",
        "properties": [
            {"name": "region", "type": "options", "default": "global", "options": []},
            {"name": "email", "type": "string", "default": "", "required": True},
            {"name": "privateKey", "type": "string", "default": "x", "required": True},
            {"name": "inpersonate", "type": "boolean", "default": False},
            {
                "name": "delegatedEmail",
                "type": "string",
                "default": "",
                "displayOptions": {"show": {"inpersonate": [True]}},
            },
            {"name": "note", "type": "notice", "default": ""},
        ],
    },
    "httpHeaderAuth": {"name": "httpHeaderAuth", "properties": []},
}


def _using(type_: str, node_type: str = "n8n-nodes-base.set") -> dict[str, Any]:
    node = {"name": "Widget", "type": node_type, "credentials": {type_: {"id": "1", "name": "W"}}}
    return {"nodes": [node]}


def _check(workflow: dict[str, Any], types: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as caught:
        creds.check(workflow, Path("wf/workflow.json"), Path("wf/manifest.json"), {}, types)
    return str(caught.value)


def test_a_type_n8n_does_not_have_is_refused_at_load_naming_node_and_fix() -> None:
    line = _check(_using("acmeWidgetsApi"), SERVICE_ACCOUNT)
    assert line == (
        f"wf/workflow.json: node 'Widget' field 'credentials.acmeWidgetsApi': n8n "
        f"{DEFAULT_N8N_VERSION} has no credential type 'acmeWidgetsApi' (a typo, or a "
        "community node's type that this n8n does not have installed); correct the type there "
        "(or select the credential on the node in n8n and export the workflow again), or use "
        "one of n8n's own nodes instead; a community node in your own image (--backend "
        "compose --n8n-image): give the credential's data in the manifest field "
        "'credentials.acmeWidgetsApi'"
    )
    # Data given for it is left to n8n: the user's own image may have the community node.
    given = {"acmeWidgetsApi": {"apiKey": "k"}}
    creds.check(_using("acmeWidgetsApi"), Path("w"), Path("m"), given, SERVICE_ACCOUNT)


def test_an_http_request_nodes_unknown_predefined_type_is_refused() -> None:
    node = {
        "name": "Call",
        "type": creds.HTTP_REQUEST_NODE_TYPE,
        "parameters": {
            "authentication": "predefinedCredentialType",
            "nodeCredentialType": "acmeWidgetsApi",
        },
    }
    line = _check({"nodes": [node]}, SERVICE_ACCOUNT)
    assert "node 'Call' field 'parameters': n8n " in line
    assert "has no credential type 'acmeWidgetsApi'" in line


def test_without_the_installed_catalogue_an_unknown_type_asks_for_its_data() -> None:
    line = _check(_using("acmeWidgetsApi"), {})
    assert "uses a credential of type acmeWidgetsApi (W) that the harness cannot fill" in line
    assert "field 'credentials.acmeWidgetsApi', e.g. " in line
    assert '{"acmeWidgetsApi": {"apiKey": "test"}}' in line
    creds.check(_using("acmeWidgetsApi"), Path("w"), Path("m"), {"W": {"apiKey": "k"}}, {})


def test_a_type_the_harness_cannot_fill_shows_its_real_fields() -> None:
    line = _check(_using("googleApi"), SERVICE_ACCOUNT)
    assert line == (
        "wf/workflow.json: node 'Widget' uses a credential of type googleApi (W) that the "
        "harness cannot fill; give its data in wf/manifest.json field 'credentials.googleApi', "
        'e.g. {"googleApi": {"email": "...", "privateKey": "..."}} (its other fields: region, '
        "inpersonate)"
    )


def test_the_installed_catalogue_knows_the_ai_nodes_types_and_every_fillable_one() -> None:
    types = known_types()
    if not types:
        return  # n8n is not installed here; the checks above are the logic
    assert "anthropicApi" in types and "googleApi" in types  # the AI nodes' and the base's
    assert set(FILLABLE) <= set(types)
    assert user_fields("googleApi", types)[0] == ["email", "privateKey"]


def test_a_site_credential_without_a_site_is_refused_naming_the_field() -> None:
    types = known_types()
    if not types:
        return  # n8n is not installed here; test_credential_hosts has the logic
    line = _check(_using("mattermostApi"), dict(types))
    assert "uses a credential of type mattermostApi (W), whose requests go to the site its " in line
    assert '{"mattermostApi": {"baseUrl": "https://<your site>"}}' in line
    given = {"mattermostApi": {"baseUrl": "https://chat.acme.org"}}
    creds.check(_using("mattermostApi"), Path("w"), Path("m"), given, dict(types))
    # A site with a placeholder, a host label: the harness sets them itself.
    for type_ in ("jiraSoftwareCloudApi", "zendeskApi", "mailchimpApi"):
        creds.check(_using(type_), Path("w"), Path("m"), {}, dict(types))
