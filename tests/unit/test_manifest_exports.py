"""Plain n8n exports: the fixtures under fixtures/exports load untouched, with their
triggers, credentials and upstreams; every mistake is one line naming file, field and fix."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from harness.errors import ConfigError
from harness.workflow.credential_catalogue import installed_catalogue
from harness.workflow.manifest import WorkflowUnderTest, load_manifest

EXPORTS = Path(__file__).parent / "fixtures" / "exports"
NAMES = (
    "airtable_find_or_create_record",
    "form_notion",
    "gmail_receipt",
    "hubspot_find_or_create_deal",
    "hubspot_upsert_contact",
    "mailchimp_add_member",
    "notion_find_or_create_page",
    "pipedrive_find_or_create_deal",
    "sendgrid_upsert_contact",
    "sheets_default_append_row",
    "sheets_find_or_append_row",
    "sheets_order_row",
    "slack_order_message",
    "smtp_receipt",
    "stripe_http_form",
    "stripe_node_charge",
    "supabase_find_or_create_row",
    "twilio_order_sms",
    "zendesk_find_or_create_ticket",
)


def copied(tmp_path: Path, name: str) -> Path:
    return Path(shutil.copytree(EXPORTS / name, tmp_path / name))


def rewrite(path: Path, change: Any) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def load_with(tmp_path: Path, name: str, manifest: Any = None, workflow: Any = None) -> Any:
    folder = copied(tmp_path, name)
    if manifest is not None:
        rewrite(folder / "manifest.json", manifest)
    if workflow is not None:
        rewrite(folder / "workflow.json", workflow)
    return load_manifest(folder)


@pytest.mark.parametrize("name", NAMES)
def test_every_fixture_export_loads_untouched_without_warnings(name: str) -> None:
    wut = load_manifest(EXPORTS / name)
    raw = (EXPORTS / name / "workflow.json").read_bytes()
    assert wut.file_sha256 == hashlib.sha256(raw).hexdigest()
    assert {k: v for k, v in wut.workflow.items() if k != "name"} == {
        k: v for k, v in json.loads(raw).items() if k != "name"
    }
    assert wut.warnings == ()


def test_a_nameless_export_takes_its_folders_name(tmp_path: Path) -> None:
    assert "name" not in json.loads((EXPORTS / "stripe_node_charge" / "workflow.json").read_text())
    wut = load_manifest(copied(tmp_path, "stripe_node_charge"))
    assert wut.workflow["name"] == "stripe_node_charge"


def test_the_form_trigger_posts_its_fields_as_a_multipart_form() -> None:
    wut = load_manifest(EXPORTS / "form_notion")
    assert (wut.method, wut.path) == ("POST", "order-form")
    request = wut.render_request("ord-1", "evt-1")
    assert request.body == {"field-0": "ord-1", "field-1": "buyer@example.com", "field-2": "2"}
    assert request.headers == {"Content-Type": "multipart/form-data"}
    assert wut.render_body("ord-1", "evt-1") == request.body


def test_basic_auth_on_the_webhook_is_sent_with_a_fresh_secret() -> None:
    first = load_manifest(EXPORTS / "smtp_receipt")
    second = load_manifest(EXPORTS / "smtp_receipt")
    assert first.trigger_auth is not None and second.trigger_auth is not None
    assert first.trigger_auth.credential_type == "httpBasicAuth"
    header = first.render_request("k", "e").headers["Authorization"]
    user, password = base64.b64decode(header.removeprefix("Basic ")).decode().split(":", 1)
    assert (user, password) == (
        first.trigger_auth.data["user"],
        first.trigger_auth.data["password"],
    )
    assert len(password) >= 20 and first.trigger_auth.data != second.trigger_auth.data
    assert password not in repr(first)


def test_header_auth_sends_the_credentials_header(tmp_path: Path) -> None:
    def header_auth(doc: dict[str, Any]) -> None:
        node = doc["nodes"][0]
        node["parameters"]["authentication"] = "headerAuth"
        node["credentials"] = {"httpHeaderAuth": {"id": "1", "name": "hook key"}}

    given = {"hook key": {"name": "X-Shop-Token", "value": "s3cret"}}
    wut = load_with(tmp_path, "smtp_receipt", lambda m: m.update(credentials=given), header_auth)
    assert wut.render_request("k", "e").headers == {"X-Shop-Token": "s3cret"}


def test_a_get_webhook_carries_the_key_in_its_query(tmp_path: Path) -> None:
    def get(doc: dict[str, Any]) -> None:
        doc["nodes"][0]["parameters"]["httpMethod"] = "GET"

    def query(doc: dict[str, Any]) -> None:
        doc["trigger"] = {
            "method": "GET",
            "path": "shop-order",
            "body": {},
            "query": {"order_id": "{key}"},
        }

    wut = load_with(tmp_path, "stripe_http_form", query, get)
    assert wut.render_request("ord-9", "e").query == {"order_id": "ord-9"}


def test_upstreams_become_the_fakes_config() -> None:
    pytest.importorskip("fake_providers.upstreams")
    wut = load_manifest(EXPORTS / "form_notion")
    (notion,) = wut.upstream_configs()
    assert (notion.host, notion.fake) == ("api.notion.com", "record")
    assert notion.reference is not None and notion.reference.kind == "json"
    assert [(r.method, r.path) for r in notion.effects] == [("POST", "/v1/pages")]
    (template,) = notion.templates
    assert json.loads(template.body) == {"object": "page", "id": "{{id}}"}
    (stripe,) = load_manifest(EXPORTS / "stripe_node_charge").upstream_configs()
    # No reference in the manifest: the key's name as Stripe metadata.
    assert (stripe.fake, stripe.effects) == ("stripe", ())
    assert stripe.reference is not None
    assert (stripe.reference.kind, stripe.reference.where) == ("form", "metadata[order_id]")


def test_a_google_oauth2_credential_brings_its_token_fake_unless_mapped(tmp_path: Path) -> None:
    pytest.importorskip("fake_providers.upstreams")
    gmail, token = load_manifest(EXPORTS / "gmail_receipt").upstream_configs()
    assert (gmail.host, token.host, token.fake) == (
        "www.googleapis.com",
        "oauth2.googleapis.com",
        "record",
    )
    assert token.is_read("POST", "/token") and token.template_for("POST", "/token") is not None
    own = {"fake": "record", "reads": ["POST /token"]}
    mapped = load_with(
        tmp_path,
        "gmail_receipt",
        lambda m: m["upstreams"].update({"oauth2.googleapis.com": own}),
    )
    hosts = [u.host for u in mapped.upstream_configs()]
    assert hosts == ["www.googleapis.com", "oauth2.googleapis.com"]  # the manifest's, once
    assert mapped.warnings == ()  # n8n calls it on a refresh: no "no node calls" warning
    assert mapped.upstream_configs()[1].templates == ()


# -- warnings ------------------------------------------------------------------------------


def _telegram_node(doc: dict[str, Any]) -> None:
    doc["nodes"].append(
        {
            "name": "Alert",
            "type": "n8n-nodes-base.telegram",
            "parameters": {"chatId": "1", "text": "x"},
            "credentials": {"telegramApi": {"id": "7", "name": "Telegram"}},
        }
    )


def test_a_service_node_calls_its_credentials_base_url_host(tmp_path: Path) -> None:
    unmapped = load_with(tmp_path / "a", "stripe_node_charge", workflow=_telegram_node)
    if installed_catalogue():  # n8n's catalogue says Telegram's base URL
        (line,) = unmapped.warnings
        assert "node 'Alert' calls api.telegram.org but field 'upstreams' does not map it" in line
    mapped = load_with(
        tmp_path / "b",
        "stripe_node_charge",
        lambda m: m["upstreams"].update({"api.telegram.org": "record"}),
        _telegram_node,
    )
    assert mapped.warnings == ()


def test_a_node_whose_hosts_are_unknown_keeps_mapped_hosts_quiet(tmp_path: Path) -> None:
    def slack(doc: dict[str, Any]) -> None:
        doc["nodes"].append(
            {
                "name": "Notify",
                "type": "n8n-nodes-base.slack",
                "parameters": {},
                "credentials": {"slackApi": {"id": "8", "name": "Slack"}},
            }
        )

    wut = load_with(
        tmp_path,
        "stripe_node_charge",
        lambda m: m["upstreams"].update({"slack.com": "record"}),
        slack,
    )
    assert wut.warnings == ()


def test_a_mapped_host_no_node_calls_warns(tmp_path: Path) -> None:
    wut = load_with(
        tmp_path,
        "stripe_node_charge",
        lambda m: m["upstreams"].update({"api.notion.com": "record"}),
    )
    (line,) = wut.warnings
    assert "field 'upstreams.api.notion.com': no node of the workflow calls api.notion.com" in line


def test_an_effect_route_no_node_sends_warns(tmp_path: Path) -> None:
    def other_route(doc: dict[str, Any]) -> None:
        doc["upstreams"]["api.stripe.com"]["effects"] = ["POST /v1/charges"]

    (line,) = load_with(tmp_path, "stripe_http_form", other_route).warnings
    assert "field 'upstreams.api.stripe.com.effects': no node sends 'POST /v1/charges'" in line


def test_an_effect_route_of_a_service_node_whose_host_the_json_does_not_tell_is_no_warning(
    tmp_path: Path,
) -> None:
    def trello_card(doc: dict[str, Any]) -> None:
        doc["nodes"].append(
            {
                "name": "Create card",
                "id": "t",
                "type": "n8n-nodes-base.trello",
                "typeVersion": 1,
                "position": [0, 0],
                "parameters": {"resource": "card", "operation": "create"},
                "credentials": {"trelloApi": {"id": "1", "name": "Trello account"}},
            }
        )

    def trello_upstream(doc: dict[str, Any]) -> None:
        doc["upstreams"]["api.trello.com"] = {"fake": "record", "effects": ["POST /1/cards"]}

    wut = load_with(tmp_path, "stripe_http_form", trello_upstream, trello_card)
    assert not [line for line in wut.warnings if "no node sends" in line]


def test_a_called_host_no_upstream_maps_warns_naming_node_and_host(tmp_path: Path) -> None:
    def second_call(doc: dict[str, Any]) -> None:
        extra = copy.deepcopy(doc["nodes"][1])
        extra.update(name="Notify CRM", id="x")
        extra["parameters"]["url"] = "=https://crm.example.org/api/orders/{{ $json.id }}"
        doc["nodes"].append(extra)

    (line,) = load_with(tmp_path, "stripe_http_form", workflow=second_call).warnings
    assert "node 'Notify CRM' calls crm.example.org but field 'upstreams' does not map it" in line
    assert "502" in line and "$env" not in line


# -- errors --------------------------------------------------------------------------------


def _set(path: str, value: Any) -> Any:
    def change(doc: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target = doc
        for part in parents:
            target = target[part]
        target[last] = value

    return change


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (
            "upstreams.api~stripe~com.fake",
            "paypal",
            r"field 'upstreams.api.stripe.com.fake': unknown fake 'paypal'; use one of "
            r"'stripe', 'record', 'mail'",
        ),
        (
            "upstreams.api~stripe~com",
            "paypal",
            r"field 'upstreams.api.stripe.com.fake': unknown fake 'paypal'",
        ),
        (
            "upstreams.api~stripe~com.effects",
            ["POST"],
            r"upstreams.api.stripe.com.effects.0': 'POST' is not a route",
        ),
        (
            "upstreams.api~stripe~com.reference",
            {"cookie": "x"},
            r"'upstreams.api.stripe.com.reference': \{'cookie': 'x'\} is not a reference",
        ),
        (
            "upstreams.api~stripe~com.templates",
            {"POST /v1/x": {"body": "{id: 1}"}},
            r"templates.POST /v1/x.body': not valid JSON",
        ),
        (
            "upstreams.api~stripe~com.templates",
            {"POST /v1/x": {"body": "{}"}},
            r"'upstreams.api.stripe.com': templates, reads, idempotency_header, personality and "
            r"collections are the record fake's",
        ),
        (
            "upstreams.api~stripe~com",
            {"fake": "record", "personality": "notoin"},
            r"'upstreams.api.stripe.com.personality': unknown personality 'notoin'; use one of "
            r"'airtable', 'hubspot', 'mailchimp', 'notion'",
        ),
        (
            "upstreams.api~stripe~com.reference",
            {"query": "id", "regex": "^eq\\..+$"},
            r"'upstreams.api.stripe.com.reference': regex '\^eq\\\\..\+\$' has 0 groups; "
            r"capture the business key in one",
        ),
        (
            "upstreams.api~stripe~com",
            {"fake": "record", "personality": "twilio", "idempotency_header": "Idem"},
            r"'upstreams.api.stripe.com.idempotency_header': the twilio service keeps no such "
            r"keys, so its fake ignores 'Idem' as the service would",
        ),
        (
            "upstreams.api~stripe~com",
            {"fake": "record", "collections": {"customers": {"reads": ["GET /customers"]}}},
            r"'upstreams.api.stripe.com.collections.customers.writes': collection 'customers' "
            r"names no write",
        ),
        (
            "upstreams.https://api~stripe~com",
            "stripe",
            r"'upstreams.https://api.stripe.com': 'https://api.stripe.com' is not a host",
        ),
        ("upstreams.smtp", "stripe", r"'upstreams.smtp': the 'mail' fake answers"),
        (
            "upstreams.api~stripe~com.bogus",
            1,
            r"'upstreams.api.stripe.com.bogus': unknown field; the known ones are "
            r"upstreams.api.stripe.com.fake, upstreams.api.stripe.com.reference",
        ),
    ],
)
def test_bad_upstreams_name_file_field_and_fix(
    tmp_path: Path, path: str, value: Any, message: str
) -> None:
    keys = [p.replace("~", ".") for p in path.split(".")]

    def change(doc: dict[str, Any]) -> None:
        target = doc
        for part in keys[:-1]:
            target = target.setdefault(part, {})
        target[keys[-1]] = value

    with pytest.raises(ConfigError, match=message) as caught:
        load_with(tmp_path, "stripe_http_form", change)
    assert "manifest.json: field 'upstreams." in str(caught.value)


def test_a_node_needing_an_unreferenced_credential_is_one_line(tmp_path: Path) -> None:
    def no_credential(doc: dict[str, Any]) -> None:
        del doc["nodes"][1]["credentials"]

    with pytest.raises(ConfigError) as caught:
        load_with(tmp_path, "stripe_http_form", workflow=no_credential)
    line = str(caught.value)
    assert "\n" not in line
    assert "node 'Create PaymentIntent' needs a credential of type stripeApi" in line
    assert "field 'credentials'" in line
    fixed = load_with(
        tmp_path / "again",
        "stripe_http_form",
        lambda m: m.update(credentials={"stripeApi": {}}),
        no_credential,
    )
    assert isinstance(fixed, WorkflowUnderTest)


def test_a_type_the_harness_cannot_fill_names_the_manifest_field(tmp_path: Path) -> None:
    # An API-key type comes from n8n's catalogue; an OAuth2 one needs a token first.
    def hunter(doc: dict[str, Any]) -> None:
        node = doc["nodes"][1]
        node["parameters"]["nodeCredentialType"] = "salesforceOAuth2Api"
        node["credentials"] = {"salesforceOAuth2Api": {"id": "9", "name": "Hunter"}}

    with pytest.raises(
        ConfigError,
        match=r"node 'Create PaymentIntent' uses a credential of type salesforceOAuth2Api "
        r"\(Hunter\) that the harness cannot fill; give its data in .*manifest.json field "
        r"'credentials.salesforceOAuth2Api'",
    ):
        load_with(tmp_path, "stripe_http_form", workflow=hunter)
    given = lambda m: m.update(credentials={"Hunter": {"apiKey": "test"}})  # noqa: E731
    assert load_with(tmp_path / "again", "stripe_http_form", given, hunter).warnings == ()


def test_gmail_through_a_service_account_is_one_line_naming_the_type(tmp_path: Path) -> None:
    def service_account(doc: dict[str, Any]) -> None:
        node = doc["nodes"][1]
        node["parameters"]["authentication"] = "serviceAccount"
        node["credentials"] = {"googleApi": {"id": "Sa1", "name": "Google service account"}}

    with pytest.raises(
        ConfigError,
        match=r"node 'Send a message' uses a credential of type googleApi \(Google service "
        r"account\) that the harness cannot fill; give its data in .*manifest.json field "
        r"'credentials.googleApi'",
    ) as caught:
        load_with(tmp_path, "gmail_receipt", workflow=service_account)
    if installed_catalogue():  # the example shows the type's own fields, from n8n's catalogue
        assert '{"googleApi": {"email": "...", "privateKey": "..."}}' in str(caught.value)


def test_a_credential_type_n8n_does_not_have_is_refused_at_load(tmp_path: Path) -> None:
    def acme(doc: dict[str, Any]) -> None:
        doc["nodes"][1]["credentials"] = {"acmeWidgetsApi": {"id": "7", "name": "Acme"}}

    if not installed_catalogue():
        return  # nothing to check the type against: its data is asked for (test_credentials)
    with pytest.raises(
        ConfigError,
        match=r"workflow.json: node 'Create PaymentIntent' field 'credentials.acmeWidgetsApi': "
        r"n8n \S+ has no credential type 'acmeWidgetsApi' \(a typo, or a community node's type",
    ):
        load_with(tmp_path, "stripe_http_form", workflow=acme)


def test_a_form_body_field_the_form_lacks_is_refused(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError,
        match=r"field 'trigger.body': 'Phone' is no field of the Form Trigger 'On form "
        r"submission'.*'Order ID', 'Email', 'Quantity'",
    ):
        load_with(tmp_path, "form_notion", _set("trigger.body.Phone", "1"))


def test_jwt_auth_on_the_trigger_is_refused_with_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"parameters.authentication is 'jwtAuth'; the harness"):
        load_with(
            tmp_path,
            "smtp_receipt",
            workflow=lambda d: d["nodes"][0]["parameters"].update(authentication="jwtAuth"),
        )


def test_effect_is_required_only_without_upstreams(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"field 'effect': missing; add it"):
        load_with(tmp_path, "stripe_http_form", lambda m: m.pop("upstreams"))


def test_a_mail_fake_without_a_reference_finds_the_case_key_anywhere_in_the_message(
    tmp_path: Path,
) -> None:
    pytest.importorskip("fake_providers.upstreams")
    import re

    from fake_providers.upstreams import KEY_IN_TEXT
    from harness.workflow.manifest import case_key

    wut = load_with(
        tmp_path, "smtp_receipt", lambda m: m["upstreams"].update({"smtp": {"fake": "mail"}})
    )
    (smtp,) = wut.upstream_configs()
    assert smtp.reference is not None
    assert (smtp.reference.kind, smtp.reference.where) == ("body_regex", KEY_IN_TEXT)
    key = case_key("smtp_receipt-retry-no_fault-none")
    message = f"Subject: Your receipt\r\n\r\nThanks! Order {key}, 12.50 EUR.\r\n"
    found = re.search(smtp.reference.where, message)
    assert found is not None and found.group(1) == key
