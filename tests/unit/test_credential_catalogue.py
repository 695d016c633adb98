"""Credentials of types the harness has no entry for, filled from n8n's own catalogue."""

from __future__ import annotations

from harness.workflow.credential_catalogue import (
    generic_fill,
    installed_catalogue,
    oauth2_token_url,
)
from harness.workflow.credential_fill import FillContext, credential_data, token_endpoint

CATALOGUE = {
    "chatApi": {
        "name": "chatApi",
        "properties": [
            {"name": "accessToken", "type": "string", "default": "", "required": True},
            {"name": "orgId", "type": "string", "default": ""},
            {
                "name": "webhookSecret",
                "type": "string",
                "default": "",
                "typeOptions": {"password": True},
            },
            {"name": "baseUrl", "type": "string", "default": "https://api.chat.example"},
            {
                "name": "region",
                "type": "options",
                "default": "",
                "options": [{"name": "EU", "value": "eu"}, {"name": "US", "value": "us"}],
            },
            {"name": "verbose", "type": "boolean", "default": False},
            {"name": "retries", "type": "number", "default": 3},
            {"name": "notice", "type": "notice", "default": ""},
            {"name": "hiddenThing", "type": "hidden", "default": "x"},
            {"name": "computed", "type": "string", "default": "={{$self.orgId}}"},
            {"name": "host", "type": "string", "default": "", "required": True},
        ],
    },
    "chatEnterpriseApi": {
        "name": "chatEnterpriseApi",
        "extends": ["chatApi"],
        "properties": [
            {"name": "baseUrl", "type": "string", "default": "https://ent.chat.example"}
        ],
    },
    "oAuth2Api": {"name": "oAuth2Api", "properties": []},
    "chatOAuth2Api": {"name": "chatOAuth2Api", "extends": ["oAuth2Api"], "properties": []},
}


def test_every_field_gets_its_default_or_the_secret_where_the_node_sends_one() -> None:
    assert generic_fill("chatApi", "S", CATALOGUE) == {
        "accessToken": "n8n-chaos-S",
        "orgId": "",
        "webhookSecret": "n8n-chaos-S",
        "baseUrl": "https://api.chat.example",
        "region": "eu",
        "verbose": False,
        "retries": 3,
        "host": "127.0.0.1",
    }


def test_a_child_type_overrides_its_parents_fields() -> None:
    data = generic_fill("chatEnterpriseApi", "S", CATALOGUE)
    assert data is not None
    assert data["baseUrl"] == "https://ent.chat.example"
    assert data["accessToken"] == "n8n-chaos-S"


def test_unknown_types_authorization_flows_and_real_keys_are_not_filled() -> None:
    pem = {
        "name": "keyApi",
        "properties": [{"name": "privateKey", "type": "string", "required": True}],
    }
    assert generic_fill("keyApi", "S", {"keyApi": pem}) is None
    assert generic_fill("nosuchApi", "S", CATALOGUE) is None
    assert generic_fill("chatOAuth2Api", "S", CATALOGUE) is None


def test_the_installed_catalogue_fills_common_services() -> None:
    if not installed_catalogue():
        return  # n8n is not installed here; the fill above is the logic
    data = credential_data("telegramApi", None, FillContext(secret="S"), {})
    assert data == {"accessToken": "n8n-chaos-S", "baseUrl": "https://api.telegram.org"}
    # An authorization-code OAuth2 type is created connected; its token refreshes at its own
    # token URL, which the harness answers (harness.workflow.upstream_config.token_upstreams).
    slack = credential_data("slackOAuth2Api", None, FillContext(secret="S"), {})
    assert slack is not None and slack["oauthTokenData"]["token_type"] == "Bearer"
    assert token_endpoint("slackOAuth2Api") == ("slack.com", "/api/oauth.v2.access")
    assert token_endpoint("gmailOAuth2") == ("oauth2.googleapis.com", "/token")
    # A token URL that is an expression of other fields (Salesforce's environment): not filled.
    assert credential_data("salesforceOAuth2Api", None, FillContext(secret="S"), {}) is None


def test_an_oauth2_types_token_url_is_its_hidden_default() -> None:
    types = {
        "oAuth2Api": {"name": "oAuth2Api", "properties": []},
        "chatOAuth2Api": {
            "name": "chatOAuth2Api",
            "extends": ["oAuth2Api"],
            "properties": [
                {"name": "accessTokenUrl", "type": "hidden", "default": "https://chat.example/t"}
            ],
        },
        "exprOAuth2Api": {
            "name": "exprOAuth2Api",
            "extends": ["oAuth2Api"],
            "properties": [{"name": "accessTokenUrl", "type": "hidden", "default": "={{ 1 }}"}],
        },
    }
    assert oauth2_token_url("chatOAuth2Api", types) == "https://chat.example/t"
    assert oauth2_token_url("exprOAuth2Api", types) is None
    assert oauth2_token_url("oAuth2Api", types) is None
    assert oauth2_token_url("chatApi", CATALOGUE) is None


def test_a_host_field_takes_the_host_the_manifest_maps() -> None:
    if not installed_catalogue():
        return  # n8n is not installed here; test_credential_hosts has the logic
    ctx = FillContext(secret="S", hosts=("api.stripe.com", "acme.zendesk.com"))
    zendesk = credential_data("zendeskApi", None, ctx, {})
    assert zendesk is not None and zendesk["subdomain"] == "acme"
    given = credential_data("zendeskApi", "Z", ctx, {"Z": {"subdomain": "mine"}})
    assert given is not None and given["subdomain"] == "mine"  # the manifest's data wins
