"""The workflow-under-test loader: good manifests load, every mistake names file, field and fix."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from fake_providers.payment import Effect as ProviderEffect
from harness.errors import ConfigError
from harness.workflow.manifest import (
    EffectEndpoint,
    Promise,
    WorkflowUnderTest,
    discover,
    load_manifest,
)
from harness.workflow.workflow_json import wait_seconds

BUNDLED = Path(__file__).resolve().parents[2] / "workflows_under_test"
# The minimal test workflow calls no provider: its warning is tested in test_manifest_model.
pytestmark = pytest.mark.filterwarnings("ignore::harness.workflow.manifest.ManifestWarning")

WORKFLOW: dict[str, Any] = {
    "name": "pay",
    "nodes": [
        {
            "id": "1",
            "name": "Webhook",
            "type": "n8n-nodes-base.webhook",
            "typeVersion": 2.1,
            "position": [0, 0],
            "parameters": {"httpMethod": "POST", "path": "pay", "responseMode": "responseNode"},
        },
        {
            "id": "2",
            "name": "Respond",
            "type": "n8n-nodes-base.respondToWebhook",
            "typeVersion": 1.1,
            "position": [200, 0],
            "parameters": {"respondWith": "json"},
        },
    ],
    "connections": {"Webhook": {"main": [[{"node": "Respond", "type": "main", "index": 0}]]}},
}

MANIFEST: dict[str, Any] = {
    "name": "pay",
    "description": "a payment",
    "workflow": "workflow.json",
    "promise": "exactly_once",
    "trigger": {
        "method": "POST",
        "path": "pay",
        "body": {
            "order_id": "{key}",
            "event_id": "{event_id}",
            "amount": 1250,
            "meta": {"note": "order {key}", "tags": ["{event_id}", 7]},
        },
    },
    "business_key": "order_id",
    "effect": "charges",
    "ledger": {
        "schema": "ledger.sql",
        "state_query": "SELECT status FROM pay_ledger WHERE op_key = 'pay:' || %(key)s",
        "done_state": "confirmed",
        "unknown_states": ["claimed", "unknown"],
    },
}


def write_case(
    root: Path,
    manifest: dict[str, Any] | str | None = None,
    workflow: dict[str, Any] | str | None = None,
    folder: str = "pay",
    schema: str | None = "CREATE TABLE IF NOT EXISTS pay_ledger (op_key text PRIMARY KEY);\n",
) -> Path:
    directory = root / folder
    directory.mkdir(parents=True)
    for name, doc in (
        ("manifest.json", MANIFEST if manifest is None else manifest),
        ("workflow.json", WORKFLOW if workflow is None else workflow),
    ):
        text = doc if isinstance(doc, str) else json.dumps(doc, indent=2)
        (directory / name).write_text(text)
    if schema is not None:
        (directory / "ledger.sql").write_text(schema)
    return directory


def edited(doc: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy of doc with the dotted field set to value (or removed if value is ...)."""
    result = copy.deepcopy(doc)
    *parents, last = path.split(".")
    target = result
    for part in parents:
        target = target[int(part)] if isinstance(target, list) else target[part]
    if value is ...:
        del target[last]
    else:
        target[last] = value
    return result


def test_good_manifest_loads_every_field(tmp_path: Path) -> None:
    directory = write_case(tmp_path)
    wut = load_manifest(directory)
    assert isinstance(wut, WorkflowUnderTest)
    assert wut.name == "pay"
    assert wut.description == "a payment"
    assert wut.promise is Promise.EXACTLY_ONCE and str(wut.promise) == "exactly_once"
    assert wut.workflow == WORKFLOW
    assert (wut.method, wut.path) == ("POST", "pay")
    assert wut.body_template == MANIFEST["trigger"]["body"]
    assert wut.business_key == "order_id"
    assert wut.effect is EffectEndpoint.CHARGES
    assert wut.effect.provider_effect is ProviderEffect.CHARGE
    assert wut.ledger_schema_sql is not None and "CREATE TABLE" in wut.ledger_schema_sql
    assert wut.ledger_state_query == MANIFEST["ledger"]["state_query"]
    assert wut.ledger_done_state == "confirmed"
    assert wut.ledger_unknown_states == ("claimed", "unknown")
    assert wut.directory == directory


def test_render_body_replaces_placeholders_recursively(tmp_path: Path) -> None:
    wut = load_manifest(write_case(tmp_path))
    body = wut.render_body(key="order-7", event_id="evt-9")
    assert body == {
        "order_id": "order-7",
        "event_id": "evt-9",
        "amount": 1250,
        "meta": {"note": "order order-7", "tags": ["evt-9", 7]},
    }
    # The template is not touched: a second rendering starts from placeholders again.
    assert wut.render_body(key="b", event_id="c")["order_id"] == "b"
    assert wut.body_template["meta"]["tags"][0] == "{event_id}"


def test_ledger_is_optional(tmp_path: Path) -> None:
    minimal = edited(edited(MANIFEST, "ledger", ...), "promise", "none")
    wut = load_manifest(write_case(tmp_path, minimal, schema=None))
    assert wut.promise is Promise.NONE
    assert wut.ledger_schema_sql is None and wut.ledger_state_query is None
    assert wut.ledger_done_state is None and wut.ledger_unknown_states == ()


def test_with_path_changes_only_the_copy(tmp_path: Path) -> None:
    wut = load_manifest(write_case(tmp_path))
    moved = wut.with_path("pay-run-1")
    assert moved.path == "pay-run-1"
    assert moved.workflow["nodes"][0]["parameters"]["path"] == "pay-run-1"
    assert wut.workflow["nodes"][0]["parameters"]["path"] == "pay"
    assert wut.path == "pay"
    with pytest.raises(ConfigError, match="not a static webhook path"):
        wut.with_path("/pay/:id")


SHARED_SCHEMA = "CREATE TABLE IF NOT EXISTS {prefix}_ledger (op_key text PRIMARY KEY);\n"


def test_a_shared_ledger_schema_makes_each_workflow_its_own_tables(tmp_path: Path) -> None:
    (tmp_path / "_ledgers").mkdir()
    (tmp_path / "_ledgers" / "charge.sql").write_text(SHARED_SCHEMA)
    manifest = edited(MANIFEST, "ledger.schema", "../_ledgers/charge.sql")
    wut = load_manifest(write_case(tmp_path, edited(manifest, "ledger.prefix", "pay"), schema=None))
    assert (
        wut.ledger_schema_sql
        == "CREATE TABLE IF NOT EXISTS pay_ledger (op_key text PRIMARY KEY);\n"
    )


def test_a_ledger_prefix_needs_a_schema(tmp_path: Path) -> None:
    manifest = edited(edited(MANIFEST, "ledger.prefix", "pay"), "ledger.schema", ...)
    with pytest.raises(
        ConfigError, match=r"field 'ledger.schema': missing: the prefix is for a schema"
    ):
        load_manifest(write_case(tmp_path, manifest))


@pytest.mark.parametrize(
    ("schema", "prefix", "message"),
    [
        (
            SHARED_SCHEMA,
            ...,
            r"field 'ledger.prefix': missing: .*ledger.sql names its tables with "
            r"\{prefix\}; add the prefix",
        ),
        (
            "CREATE TABLE IF NOT EXISTS t (k text);",
            "pay",
            r"field 'ledger.prefix': .*ledger.sql has "
            r"no \{prefix\} to replace; drop the prefix",
        ),
        (SHARED_SCHEMA, "Pay-1", r"field 'ledger.prefix': 'Pay-1' is not a table name's start"),
    ],
)
def test_ledger_prefix_errors(tmp_path: Path, schema: str, prefix: Any, message: str) -> None:
    manifest = MANIFEST if prefix is ... else edited(MANIFEST, "ledger.prefix", prefix)
    with pytest.raises(ConfigError, match=message):
        load_manifest(write_case(tmp_path, manifest, schema=schema))


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("promise", ..., r"field 'promise': missing"),
        ("trigger", ..., r"field 'trigger': missing"),
        ("trigger.path", ..., r"field 'trigger.path': missing"),
        ("trigger.body", ..., r"field 'trigger.body': missing"),
        ("business_key", ..., r"field 'business_key': missing"),
        ("effect", ..., r"field 'effect': missing"),
        ("name", 7, r"field 'name': expected a string, got a number 7"),
        ("trigger", [], r"field 'trigger': expected an object, got a list"),
        ("trigger.body", "x", r"field 'trigger.body': expected an object, got a string"),
        ("ledger", "ledger.sql", r"field 'ledger': expected an object"),
        ("ledger.state_query", 5, r"field 'ledger.state_query': expected a string"),
        (
            "promise",
            "exactly-once",
            r"field 'promise': unknown promise 'exactly-once'; use one "
            r"of 'exactly_once', 'at_most_once', 'none'",
        ),
        ("effect", "sms", r"field 'effect': unknown effect 'sms'; use one of 'charges', 'emails'"),
        ("trigger.method", "FETCH", r"field 'trigger.method': 'FETCH' is not one of"),
        ("trigger.path", "/pay", r"field 'trigger.path': '/pay' is not a static webhook path"),
        ("name", "other", r"field 'name': 'other' differs from its folder 'pay'"),
        ("name", "", r"field 'name': must not be empty"),
        ("promis", "none", r"field 'promis': unknown field; the known ones are name, "),
        ("trigger.bodyy", {}, r"field 'trigger.bodyy': unknown field"),
        ("ledger.schema_file", "x", r"field 'ledger.schema_file': unknown field"),
        (
            "business_key",
            "amount",
            r"field 'business_key': trigger.body.amount must be the "
            r"string '\{key\}', got 1250",
        ),
        (
            "business_key",
            "customer",
            r"trigger.body has no field 'customer'; did you mean 'order_id' \(which holds "
            r"'\{key\}'\)\? set business_key to it",
        ),
        ("workflow", "wf.json", r"field 'workflow': file .*wf.json not found"),
        (
            "workflow",
            "../pay/workflow.json",
            r"field 'workflow': '\.\./pay/workflow.json' must "
            r"be a file name inside",
        ),
        ("ledger.schema", "schema.sql", r"field 'ledger.schema': file .*schema.sql not found"),
        (
            "ledger.schema",
            "../_ledgers/../../schema.sql",
            r"field 'ledger.schema': .* must be a file name inside .*, or \.\./<folder>/<file>",
        ),
        (
            "ledger.state_query",
            "SELECT status FROM pay_ledger WHERE op_key = %s",
            r"field 'ledger.state_query': the query must select by the business key with the "
            r"placeholder %\(key\)s",
        ),
        ("ledger.unknown_states", "unknown", r"field 'ledger.unknown_states': expected a list"),
        ("ledger.state_query", ..., r"field 'ledger.state_query': missing: done_state"),
    ],
)
def test_manifest_errors_name_file_field_and_fix(
    tmp_path: Path, field: str, value: Any, message: str
) -> None:
    directory = write_case(tmp_path, edited(MANIFEST, field, value))
    with pytest.raises(ConfigError, match=message) as info:
        load_manifest(directory)
    assert str(directory / "manifest.json") in str(info.value)


def test_name_and_workflow_default_to_the_folder_and_its_export(tmp_path: Path) -> None:
    manifest = edited(edited(MANIFEST, "name", ...), "workflow", ...)
    assert load_manifest(write_case(tmp_path / "a", manifest)).name == "pay"
    # An export saved under its own title is the folder's only other JSON file.
    directory = write_case(tmp_path / "b", manifest)
    (directory / "workflow.json").rename(directory / "Pay by card.json")
    assert load_manifest(directory).name == "pay"
    (directory / "notes.json").write_text("{}")
    with pytest.raises(ConfigError, match=r"field 'workflow': file .*workflow.json not found"):
        load_manifest(directory)


def test_manifest_that_is_not_an_object(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"manifest.json: \(top level\): expected a JSON object"):
        load_manifest(write_case(tmp_path, manifest="[1, 2]"))


def test_broken_manifest_json_gives_line_and_column(tmp_path: Path) -> None:
    text = '{\n  "name": "pay",\n  "promise": "none",\n}\n'
    directory = write_case(tmp_path, manifest=text)
    with pytest.raises(ConfigError) as info:
        load_manifest(directory)
    message = str(info.value)
    assert str(directory / "manifest.json") in message
    assert "line 4 column 1" in message
    assert "the manifest is not valid JSON" in message
    assert "trailing commas" in message


def test_broken_workflow_json_gives_line_and_column(tmp_path: Path) -> None:
    text = '{\n  "name": "pay",\n  "nodes": [\n    {"id": 1,,}\n  ]\n}\n'
    directory = write_case(tmp_path, workflow=text)
    with pytest.raises(
        ConfigError,
        match=r"workflow.json: line 4 column 14: the workflow is "
        r"not valid JSON",
    ):
        load_manifest(directory)


def test_a_node_id_longer_than_n8n_keeps_is_refused(tmp_path: Path) -> None:
    """n8n 2.40 records a trigger's publication under its node id (36 characters): a longer
    one fails there and stalls the stack's next publications for a minute."""
    long_id = "993082547347-aaaa-4bbb-8ccc-000000000000"  # 40 characters, hand-written
    nodes = [{**WORKFLOW["nodes"][0], "id": long_id}, *WORKFLOW["nodes"][1:]]
    with pytest.raises(ConfigError) as refused:
        load_manifest(write_case(tmp_path, workflow={**WORKFLOW, "nodes": nodes}))
    assert f"id {long_id!r} has 40 characters" in str(refused.value)
    assert "give it a UUID" in str(refused.value)


@pytest.mark.parametrize(
    "wrapped",
    [[WORKFLOW], {"data": WORKFLOW}, {"data": [WORKFLOW]}],
    ids=["array", "api-answer", "api-list"],
)
def test_a_file_wrapping_one_workflow_loads_it(tmp_path: Path, wrapped: Any) -> None:
    # n8n's export of several workflows is an array; its API answers {"data": ...}.
    wut = load_manifest(write_case(tmp_path, workflow=wrapped))
    assert wut.workflow == WORKFLOW


@pytest.mark.parametrize("wrapped", [[WORKFLOW, WORKFLOW], {"data": [WORKFLOW, WORKFLOW]}])
def test_a_file_of_several_workflows_says_how_many_and_to_split_them(
    tmp_path: Path, wrapped: Any
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_manifest(write_case(tmp_path, workflow=wrapped))
    assert str(caught.value) == (
        f"{tmp_path / 'pay' / 'workflow.json'}: (top level): the file holds 2 workflows, not "
        "one (as `n8n export:workflow --all` writes them); put each workflow in a file of its "
        "own (`--separate` does): one folder per workflow under test, those it calls beside it"
    )


def test_missing_manifest_names_the_file(tmp_path: Path) -> None:
    directory = tmp_path / "pay"
    directory.mkdir()
    with pytest.raises(ConfigError) as caught:
        load_manifest(directory)
    assert str(caught.value) == (
        f"{directory / 'manifest.json'}: file not found; each workflow folder needs a "
        "manifest.json beside its workflow (see README's manifest section, or `n8n-chaos "
        "schema`); for a folder of several n8n exports judged together, write "
        "n8n-chaos-project.json there instead"
    )


@pytest.mark.parametrize("name", ["manifest.yaml", "manifest.yml"])
def test_a_yaml_manifest_is_refused_with_the_fix_to_convert_it(tmp_path: Path, name: str) -> None:
    directory = write_case(tmp_path)
    (directory / "manifest.json").rename(directory / name)
    with pytest.raises(ConfigError) as caught:
        load_manifest(directory)
    assert str(caught.value) == (
        f"{directory / name}: found {name}; the harness reads manifest.json only: convert it "
        f"to {directory / 'manifest.json'} (the same fields, in JSON)"
    )


def test_unreadable_ledger_schema_is_refused(tmp_path: Path) -> None:
    directory = write_case(tmp_path)
    (directory / "ledger.sql").write_bytes(b"CREATE TABLE \xff\xfe;")
    with pytest.raises(ConfigError, match=r"ledger.sql: cannot read the ledger schema: .*UTF-8"):
        load_manifest(directory)


def test_empty_ledger_schema_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"field 'ledger.schema': .*ledger.sql is empty"):
        load_manifest(write_case(tmp_path, schema="  \n"))


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        (
            "nodes",
            ...,
            r"workflow.json: field 'nodes': expected a list of node objects, got "
            r"null",
        ),
        (
            "connections",
            [],
            r"workflow.json: field 'connections': expected an object, got a "
            r"list",
        ),
        ("name", "", r"workflow.json: field 'name': the workflow needs a non-empty name"),
        (
            "connections",
            {"Webhook": {"main": [[{"node": "Charge", "type": "main", "index": 0}]]}},
            r"workflow.json: field 'connections.Webhook': names node 'Charge', which the file "
            r"does not have",
        ),
        (
            "connections",
            {"node-id-1": {"main": [[{"node": "Respond", "type": "main", "index": 0}]]}},
            r"field 'connections.node-id-1': names node 'node-id-1'",
        ),
        (
            "nodes.0.type",
            "n8n-nodes-base.manualTrigger",
            r"workflow.json: field 'nodes': no "
            r"Webhook node \(type 'n8n-nodes-base.webhook'\)",
        ),
        (
            "nodes.1.type",
            "n8n-nodes-base.webhook",
            r"field 'nodes': 2 Webhook/Form Trigger nodes "
            r"\('Webhook', 'Respond'\); keep exactly one",
        ),
        (
            "nodes.0.parameters.path",
            "pay-other",
            r"Webhook node 'Webhook': parameters.path is "
            r"'pay-other' but .*manifest.json field 'trigger.path' is 'pay'; make them the same",
        ),
        (
            "nodes.0.parameters.httpMethod",
            ...,
            r"parameters.httpMethod is 'GET' but .*"
            r"'trigger.method' is 'POST'",
        ),
        ("nodes.0.parameters.httpMethod", "PUT", r"parameters.httpMethod is 'PUT'"),
        (
            "nodes.0.parameters.responseMode",
            "streaming",
            r"parameters.responseMode is 'streaming'; set it to 'lastNode' or 'responseNode' "
            r"\(answer once the effect is known\) or 'onReceived'",
        ),
        ("nodes.0.parameters", None, r"Webhook node 'Webhook' has no 'parameters' object"),
    ],
)
def test_workflow_errors_name_file_field_and_fix(
    tmp_path: Path, field: str, value: Any, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        load_manifest(write_case(tmp_path, workflow=edited(WORKFLOW, field, value)))


def test_multiple_methods_on_the_webhook_are_accepted(tmp_path: Path) -> None:
    workflow = edited(WORKFLOW, "nodes.0.parameters.httpMethod", ["GET", "POST"])
    assert load_manifest(write_case(tmp_path, workflow=workflow)).method == "POST"


def test_discover_sorts_skips_hidden_and_refuses_shared_routes(tmp_path: Path) -> None:
    write_case(tmp_path, folder="pay")
    write_case(
        tmp_path,
        edited(edited(MANIFEST, "name", "alpha"), "trigger.path", "alpha"),
        edited(WORKFLOW, "nodes.0.parameters.path", "alpha"),
        folder="alpha",
    )
    (tmp_path / "_drafts").mkdir()
    (tmp_path / ".cache").mkdir()
    (tmp_path / "README.md").write_text("notes\n")
    # What `n8n-chaos run` started in this folder writes beside the workflows: Allure's
    # results (the default --alluredir, or one named otherwise) and a report made from them.
    (tmp_path / "allure-results").mkdir()
    (tmp_path / "results-of-tuesday").mkdir()
    (tmp_path / "results-of-tuesday" / "0b1c-result.json").write_text("{}")
    assert [w.name for w in discover(tmp_path)] == ["alpha", "pay"]

    write_case(tmp_path, edited(MANIFEST, "name", "zeta"), folder="zeta")
    with pytest.raises(
        ConfigError,
        match=r"zeta/manifest.json: field 'trigger.path': POST "
        r"'pay' is already a webhook of .*pay/manifest.json",
    ):
        discover(tmp_path)


def test_discover_refuses_a_reconciler_on_another_workflows_path(tmp_path: Path) -> None:
    write_case(tmp_path, folder="pay")
    other = write_case(
        tmp_path,
        edited(
            edited(edited(MANIFEST, "name", "zeta"), "trigger.path", "zeta"),
            "reconciler",
            {"workflow": "reconciler.json", "trigger": {"method": "POST", "path": "pay"}},
        ),
        edited(WORKFLOW, "nodes.0.parameters.path", "zeta"),
        folder="zeta",
    )
    reconciler = edited(RECONCILER_WORKFLOW, "nodes.0.parameters.path", "pay")
    (other / "reconciler.json").write_text(json.dumps(reconciler))
    with pytest.raises(
        ConfigError,
        match=r"zeta/manifest.json: field 'reconciler.trigger.path': POST 'pay' is already a "
        r"webhook of .*pay/manifest.json",
    ):
        discover(tmp_path)


def test_discover_refuses_a_folder_without_manifest(tmp_path: Path) -> None:
    (tmp_path / "half_done").mkdir()
    with pytest.raises(ConfigError, match=r"half_done/manifest.json: file not found"):
        discover(tmp_path)


def test_discover_refuses_a_workflow_folder_given_as_the_root(tmp_path: Path) -> None:
    directory = write_case(tmp_path)
    with pytest.raises(ConfigError) as caught:
        discover(directory)
    assert str(caught.value) == (
        f"{directory}: this folder is itself a workflow folder (it holds manifest.json); point "
        f"--workflows at its parent, {tmp_path.resolve()}, the folder of workflow folders"
    )


def test_discover_refuses_a_root_without_workflow_folders(tmp_path: Path) -> None:
    (tmp_path / "_ledgers").mkdir()  # skipped: still no workflow folder
    with pytest.raises(ConfigError) as caught:
        discover(tmp_path)
    assert str(caught.value).startswith(
        f"{tmp_path}: no workflow folder (a folder with manifest.json) found under it; put one "
        "folder per workflow under test there"
    )


def test_discover_refuses_a_missing_root(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nowhere: not a folder"):
        discover(tmp_path / "nowhere")


CORRECT_BUNDLED = {
    "email_no_idempotency",
    "payment_async",
    "payment_error_handled",
    "payment_idempotent",
    "payment_naive",
    "sendgrid_contact_upsert",
    "smtp_receipt_dedup",
    "stripe_approval",
    "stripe_idempotent",
    "stripe_refund",
    "stripe_timeout",
    "subflow_checkout_idempotent",
    "stripe_trigger_dedup",
    "webhook_dedup",
}
NEGATIVE_CONTROLS = {
    "broken_ack_no_reconciler",
    "broken_done_before_effect",
    "broken_error_log_only",
    "broken_inflight_as_failure",
    "broken_key_from_execution",
    "broken_never_charges",
    "broken_no_idempotency_key",
    "broken_provider_409_as_failure",
    "broken_read_then_insert",
    "broken_remove_duplicates",
    "broken_resend_on_unknown",
    "broken_unknown_as_failure",
    "broken_wrong_reference",
    "crm_search_then_create",
    "notion_query_then_create",
    "sheets_lookup_then_append",
    "stripe_approval_naive",
    "stripe_naive",
    "stripe_refund_naive",
    "stripe_timeout_naive",
    "stripe_trigger_naive",
    "subflow_checkout_naive",
    "supabase_status_gate_late",
}
# Written as n8n's editor exports them for production: literal hosts, their own credentials.
AS_EXPORTED = {
    "crm_search_then_create",
    "notion_query_then_create",
    "sendgrid_contact_upsert",
    "sheets_lookup_then_append",
    "smtp_receipt_dedup",
    "stripe_approval",
    "stripe_approval_naive",
    "stripe_idempotent",
    "stripe_naive",
    "stripe_refund",
    "stripe_refund_naive",
    "stripe_timeout",
    "stripe_timeout_naive",
    "stripe_trigger_dedup",
    "stripe_trigger_naive",
    "subflow_checkout_idempotent",
    "subflow_checkout_naive",
    "supabase_status_gate_late",
}
# Guarded by the provider alone (no ledger of their own): its idempotency key, its upsert,
# a charge's memory of its refunds.
KEY_ONLY = {"stripe_approval", "sendgrid_contact_upsert", "stripe_refund"}


def test_bundled_workflows_load() -> None:
    found = {w.name: w for w in discover(BUNDLED)}
    assert set(found) == CORRECT_BUNDLED | NEGATIVE_CONTROLS
    assert found["payment_naive"].promise is Promise.NONE
    assert found["payment_naive"].ledger_state_query is None
    assert found["email_no_idempotency"].effect.provider_effect is ProviderEffect.EMAIL
    for wut in found.values():
        value: Any = wut.render_body("k-1", "e-1")
        for part in wut.business_key_path:  # a Stripe event's key is data.object.<field>
            value = value[part]
        assert value == "k-1"
        guarded = wut.negative_control is None and wut.name not in KEY_ONLY
        if wut.promise is not Promise.NONE and guarded:
            assert wut.ledger_schema_sql and wut.ledger_state_query and wut.ledger_done_state
        assert (wut.negative_control is not None) == (wut.name in NEGATIVE_CONTROLS), wut.name
    error_handled = found["payment_error_handled"]
    assert error_handled.error_workflow is not None
    assert set(error_handled.ledger_failed_states) == {"failed", "needs_action"}
    async_ = found["payment_async"]
    assert async_.acknowledges_early and async_.reconciler is not None
    assert found["broken_ack_no_reconciler"].acknowledges_early
    assert found["broken_ack_no_reconciler"].reconciler is None


def test_negative_controls_caught_before_the_send_expect_lost() -> None:
    """Their guard runs before the charge; a crash before the send then loses the payment."""
    found = {w.name: w for w in discover(BUNDLED)}
    for name in ("broken_done_before_effect", "broken_remove_duplicates"):
        control = found[name].negative_control
        assert control is not None
        assert control.caught_by["retry-worker_kill-before_send"] == "LOST"
        assert set(control.caught_by.values()) == {"LOST"}


def every_bundled_workflow() -> list[tuple[str, dict[str, Any]]]:
    """(name, workflow JSON) of every bundled workflow and its companions."""
    flows = []
    for wut in discover(BUNDLED):
        flows.append((wut.name, wut.workflow))
        if wut.reconciler is not None:
            flows.append((f"{wut.name} reconciler", wut.reconciler.workflow))
        if wut.error_workflow is not None:
            flows.append((f"{wut.name} error workflow", wut.error_workflow.workflow))
        flows += [(f"{wut.name} calls {called.name}", called.workflow) for called in wut.called]
    return flows


def test_bundled_workflows_use_node_versions_of_both_supported_n8n_releases() -> None:
    """typeVersions that exist in n8n 2.33 and 2.40 (n8n-nodes-base 2.33.2 / 2.40.2)."""
    supported: dict[str, set[float]] = {
        "n8n-nodes-base.webhook": {2.1},
        "n8n-nodes-base.httpRequest": {4.2},
        "n8n-nodes-base.postgres": {2.5},
        "n8n-nodes-base.code": {2},
        "n8n-nodes-base.if": {2.2},
        "n8n-nodes-base.switch": {3.2},
        "n8n-nodes-base.respondToWebhook": {1.1},
        "n8n-nodes-base.errorTrigger": {1},
        "n8n-nodes-base.removeDuplicates": {2},
        "n8n-nodes-base.wait": {1.1},
        "n8n-nodes-base.emailSend": {2.1},
        "n8n-nodes-base.executeWorkflow": {1.2},
        "n8n-nodes-base.executeWorkflowTrigger": {1.1},
        "n8n-nodes-base.noOp": {1},
        "n8n-nodes-base.stripeTrigger": {1},
    }
    for name, workflow in every_bundled_workflow():
        for node in workflow["nodes"]:
            assert node["typeVersion"] in supported[node["type"]], (name, node["name"])
            if name.split()[0] in AS_EXPORTED:
                continue  # their own credentials, as exported (the harness fills them)
            for ref in node.get("credentials", {}).values():
                assert ref["name"] == "n8n-chaos ledger", (name, node["name"])


def test_bundled_ledgers_use_their_own_tables() -> None:
    """The bundled workflows share one ledger database: no table is created twice."""
    owners: dict[str, str] = {}
    for wut in discover(BUNDLED):
        for table in re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)", wut.ledger_schema_sql or ""):
            assert owners.setdefault(table, wut.name) == wut.name, (table, wut.name)


# -- issue 7: early acknowledgement, failed states, effect id, companions, negative controls --

RECONCILER_WORKFLOW: dict[str, Any] = edited(
    edited(WORKFLOW, "nodes.0.parameters.path", "pay-reconcile"), "name", "pay reconciler"
)
ERROR_WORKFLOW: dict[str, Any] = {
    "name": "pay errors",
    "nodes": [
        {
            "id": "1",
            "name": "Error Trigger",
            "type": "n8n-nodes-base.errorTrigger",
            "typeVersion": 1,
            "position": [0, 0],
            "parameters": {},
        }
    ],
    "connections": {},
}
FULL: dict[str, Any] = {
    **MANIFEST,
    "ledger": {**MANIFEST["ledger"], "failed_states": ["failed", "needs_action"]},
    "response": {"effect_id_field": "charge.id"},
    "reconciler": {
        "workflow": "reconciler.json",
        "trigger": {
            "method": "post",
            "path": "pay-reconcile",
            "body": {"order_id": "{key}", "why": "event {event_id}"},
        },
    },
    "error_workflow": {
        "workflow": "error_workflow.json",
        "runs_query": "SELECT count(*) FROM pay_errors WHERE op_key = 'pay:' || %(key)s",
    },
    "negative_control": {
        "bug": "the key comes from the execution id",
        "caught_by": {"retry-worker_kill-after_commit": "DUPLICATE", "late-no_fault-none": "LOST"},
    },
}


def write_full(
    root: Path,
    manifest: dict[str, Any] | None = None,
    workflow: dict[str, Any] | None = None,
    reconciler: dict[str, Any] | None = None,
    error_workflow: dict[str, Any] | None = None,
) -> Path:
    directory = write_case(root, FULL if manifest is None else manifest, workflow)
    companions = (
        ("reconciler.json", RECONCILER_WORKFLOW if reconciler is None else reconciler),
        ("error_workflow.json", ERROR_WORKFLOW if error_workflow is None else error_workflow),
    )
    for name, doc in companions:
        (directory / name).write_text(json.dumps(doc))
    return directory


def test_new_fields_default_to_empty(tmp_path: Path) -> None:
    wut = load_manifest(write_case(tmp_path))
    assert wut.ledger_failed_states == ()
    assert wut.acknowledges_early is False
    assert wut.effect_id_field is None and wut.effect_id_in({"charge_id": "ch_1"}) is None
    assert wut.reconciler is None and wut.error_workflow is None and wut.negative_control is None
    assert wut.routes() == [("POST", "pay")]


def test_full_manifest_loads_every_new_field(tmp_path: Path) -> None:
    wut = load_manifest(write_full(tmp_path))
    assert wut.ledger_failed_states == ("failed", "needs_action")
    assert wut.effect_id_field == "charge.id"
    assert wut.reconciler is not None
    assert (wut.reconciler.method, wut.reconciler.path) == ("POST", "pay-reconcile")
    assert wut.reconciler.workflow == RECONCILER_WORKFLOW
    assert wut.reconciler.render_body("k-1", "e-1") == {"order_id": "k-1", "why": "event e-1"}
    assert wut.reconciler.body_template["order_id"] == "{key}"
    assert wut.error_workflow is not None
    assert wut.error_workflow.workflow == ERROR_WORKFLOW
    assert "%(key)s" in wut.error_workflow.runs_query
    assert wut.negative_control is not None
    assert wut.negative_control.bug == "the key comes from the execution id"
    assert wut.negative_control.caught_by == {
        "retry-worker_kill-after_commit": "DUPLICATE",
        "late-no_fault-none": "LOST",
    }
    assert wut.routes() == [("POST", "pay"), ("POST", "pay-reconcile")]


def test_reconciler_body_is_optional(tmp_path: Path) -> None:
    manifest = edited(FULL, "reconciler.trigger.body", ...)
    wut = load_manifest(write_full(tmp_path, manifest))
    assert wut.reconciler is not None and wut.reconciler.render_body("k", "e") == {}


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ({"charge": {"id": "ch_1"}}, "ch_1"),
        ({"charge": {"id": 7}}, "7"),
        ({"charge": {}}, None),
        ({"charge": "ch_1"}, None),
        ({"charge": {"id": {"nested": 1}}}, None),
        ([], None),
        (None, None),
    ],
)
def test_effect_id_in_follows_the_dotted_path(
    tmp_path: Path, answer: Any, expected: str | None
) -> None:
    wut = load_manifest(write_full(tmp_path))
    assert wut.effect_id_in(answer) == expected


def test_effect_id_in_indexes_lists(tmp_path: Path) -> None:
    manifest = edited(FULL, "response.effect_id_field", "data.0.id")
    wut = load_manifest(write_full(tmp_path, manifest))
    assert wut.effect_id_in({"data": [{"id": "ch_9"}]}) == "ch_9"
    assert wut.effect_id_in({"data": []}) is None


def test_with_path_suffix_moves_main_and_reconciler(tmp_path: Path) -> None:
    wut = load_manifest(write_full(tmp_path))
    moved = wut.with_path_suffix("r1")
    assert moved.routes() == [("POST", "pay-r1"), ("POST", "pay-reconcile-r1")]
    assert moved.reconciler is not None
    assert moved.reconciler.workflow["nodes"][0]["parameters"]["path"] == "pay-reconcile-r1"
    assert wut.reconciler is not None
    assert wut.reconciler.workflow["nodes"][0]["parameters"]["path"] == "pay-reconcile"
    plain = load_manifest(write_case(tmp_path / "plain")).with_path_suffix("r2")
    assert plain.routes() == [("POST", "pay-r2")] and plain.reconciler is None


@pytest.mark.parametrize(
    ("response_mode", "acknowledge", "early"),
    [
        ("onReceived", None, True),
        (..., None, True),  # n8n's default responseMode is onReceived
        ("onReceived", "early", True),
        ("responseNode", "early", True),
        ("responseNode", None, False),
        ("responseNode", "after_effect", False),
        ("lastNode", None, False),
    ],
)
def test_acknowledges_early(
    tmp_path: Path, response_mode: Any, acknowledge: str | None, early: bool
) -> None:
    workflow = edited(WORKFLOW, "nodes.0.parameters.responseMode", response_mode)
    manifest = MANIFEST if acknowledge is None else edited(MANIFEST, "acknowledge", acknowledge)
    wut = load_manifest(write_case(tmp_path, manifest, workflow))
    assert wut.acknowledges_early is early


@pytest.mark.parametrize(
    ("response_mode", "acknowledge", "message"),
    [
        (
            "onReceived",
            "after_effect",
            r"field 'acknowledge': 'after_effect' but the Webhook node of .*workflow.json has "
            r"responseMode 'onReceived', which answers before any work",
        ),
        (
            "lastNode",
            "early",
            r"field 'acknowledge': 'early' but the Webhook node of .*workflow.json has "
            r"responseMode 'lastNode'",
        ),
        ("responseNode", "soon", r"field 'acknowledge': unknown acknowledge 'soon'; use"),
    ],
)
def test_acknowledge_contradicting_the_webhook_is_refused(
    tmp_path: Path, response_mode: str, acknowledge: str, message: str
) -> None:
    workflow = edited(WORKFLOW, "nodes.0.parameters.responseMode", response_mode)
    directory = write_case(tmp_path, edited(MANIFEST, "acknowledge", acknowledge), workflow)
    with pytest.raises(ConfigError, match=message) as info:
        load_manifest(directory)
    assert str(directory / "manifest.json") in str(info.value)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("ledger.failed_states", "failed", r"field 'ledger.failed_states': expected a list"),
        ("ledger.failed_states", ["failed", ""], r"field 'ledger.failed_states': expected a list"),
        (
            "ledger.failed_states",
            ["failed", "unknown"],
            r"field 'ledger.failed_states': 'unknown' is also the done state or an unknown state",
        ),
        (
            "ledger.failed_states",
            ["confirmed"],
            r"field 'ledger.failed_states': 'confirmed' is also the done state",
        ),
        ("response", "charge_id", r"field 'response': expected an object, got a string"),
        ("response.effect_id", "x", r"field 'response.effect_id': unknown field; the known"),
        (
            "response.effect_id_field",
            "charge id",
            r"field 'response.effect_id_field': 'charge id' is not a dotted path",
        ),
        ("response.effect_id_field", 3, r"field 'response.effect_id_field': expected a string"),
        ("reconciler", "reconciler.json", r"field 'reconciler': expected an object"),
        ("reconciler.workflow", ..., r"field 'reconciler.workflow': missing"),
        (
            "reconciler.workflow",
            "nope.json",
            r"field 'reconciler.workflow': file .*nope.json not found",
        ),
        ("reconciler.trigger", ..., r"field 'reconciler.trigger': missing"),
        ("reconciler.trigger.path", ..., r"field 'reconciler.trigger.path': missing"),
        (
            "reconciler.trigger.path",
            "/x",
            r"field 'reconciler.trigger.path': '/x' is not a static webhook path",
        ),
        (
            "reconciler.trigger.method",
            "FETCH",
            r"field 'reconciler.trigger.method': 'FETCH' is not one of",
        ),
        ("reconciler.trigger.body", [], r"field 'reconciler.trigger.body': expected an object"),
        ("reconciler.schedule", "x", r"field 'reconciler.schedule': unknown field"),
        ("error_workflow", [], r"field 'error_workflow': expected an object, got a list"),
        ("error_workflow.runs_query", ..., r"field 'error_workflow.runs_query': missing"),
        (
            "error_workflow.runs_query",
            "SELECT count(*) FROM pay_errors",
            r"field 'error_workflow.runs_query': the query must count .* %\(key\)s",
        ),
        (
            "error_workflow.workflow",
            "gone.json",
            r"field 'error_workflow.workflow': file .*gone.json not found",
        ),
        ("error_workflow.query", "x", r"field 'error_workflow.query': unknown field"),
        ("negative_control", True, r"field 'negative_control': expected an object"),
        ("negative_control.bug", ..., r"field 'negative_control.bug': missing"),
        ("negative_control.bug", "two\nlines", r"field 'negative_control.bug': say the bug in"),
        ("negative_control.caught_by", {}, r"field 'negative_control.caught_by': empty"),
        (
            "negative_control.caught_by",
            {"worker_kill-after_commit": "DUPLICATE"},
            r"field 'negative_control.caught_by.worker_kill-after_commit': "
            r"'worker_kill-after_commit' is not a scenario id; write "
            r"<delivery>-<fault>-<crash point>",
        ),
        (
            "negative_control.caught_by",
            {"retry-worker_kill-after_commit": "duplicate"},
            r"field 'negative_control.caught_by.retry-worker_kill-after_commit': unknown verdict "
            r"'duplicate'; use one of DUPLICATE, STRAY, CONTRADICTED, LOST, NOT-DONE",
        ),
        ("promise", "none", r"field 'negative_control': a negative control breaks its own"),
    ],
)
def test_new_field_errors_name_file_field_and_fix(
    tmp_path: Path, field: str, value: Any, message: str
) -> None:
    directory = write_full(tmp_path, edited(FULL, field, value))
    with pytest.raises(ConfigError, match=message) as info:
        load_manifest(directory)
    assert str(directory / "manifest.json") in str(info.value)


def test_failed_states_need_the_state_query(tmp_path: Path) -> None:
    manifest = edited(
        edited(MANIFEST, "ledger", {"failed_states": ["failed"]}), "promise", "at_most_once"
    )
    with pytest.raises(ConfigError, match=r"field 'ledger.state_query': missing: done_state"):
        load_manifest(write_case(tmp_path, manifest, schema=None))


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        (
            "nodes.0.parameters.responseMode",
            "onReceived",
            r"reconciler.json: Webhook node 'Webhook': parameters.responseMode is 'onReceived'; "
            r"the harness waits for this webhook's answer",
        ),
        (
            "nodes.0.parameters.path",
            "other",
            r"reconciler.json: Webhook node 'Webhook': parameters.path is 'other' but "
            r".*manifest.json field 'reconciler.trigger.path' is 'pay-reconcile'",
        ),
        (
            "nodes.0.parameters.httpMethod",
            "GET",
            r"parameters.httpMethod is 'GET' but .*manifest.json field "
            r"'reconciler.trigger.method' is 'POST'",
        ),
        ("nodes.0.type", "n8n-nodes-base.manualTrigger", r"reconciler.json: field 'nodes': no"),
    ],
)
def test_reconciler_webhook_is_checked_like_the_main_one(
    tmp_path: Path, field: str, value: Any, message: str
) -> None:
    reconciler = edited(RECONCILER_WORKFLOW, field, value)
    with pytest.raises(ConfigError, match=message):
        load_manifest(write_full(tmp_path, reconciler=reconciler))


@pytest.mark.parametrize(
    ("workflow", "message"),
    [
        (
            edited(ERROR_WORKFLOW, "nodes.0.type", "n8n-nodes-base.manualTrigger"),
            r"error_workflow.json: field 'nodes': 0 Error Trigger nodes",
        ),
        (
            edited(ERROR_WORKFLOW, "nodes", [*ERROR_WORKFLOW["nodes"], WORKFLOW["nodes"][0]]),
            r"error_workflow.json: field 'nodes': an Error Workflow has a Webhook node",
        ),
        (edited(ERROR_WORKFLOW, "name", ""), r"error_workflow.json: field 'name': the workflow"),
    ],
)
def test_error_workflow_is_checked(tmp_path: Path, workflow: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_manifest(write_full(tmp_path, error_workflow=workflow))


def test_reconciler_on_the_main_path_is_refused(tmp_path: Path) -> None:
    manifest = edited(FULL, "reconciler.trigger.path", "pay")
    reconciler = edited(RECONCILER_WORKFLOW, "nodes.0.parameters.path", "pay")
    with pytest.raises(
        ConfigError, match=r"field 'reconciler.trigger.path': POST 'pay' is also the main trigger"
    ):
        load_manifest(write_full(tmp_path, manifest, reconciler=reconciler))


def test_bundled_exports_call_their_real_hosts_without_env() -> None:
    """The production-style examples run as exported: no ``$env`` but the deployment's own
    (their manifest's ``env``), https hosts, each host mapped to a fake, each credential a node
    uses referenced with an id and a name (sub-workflows included)."""
    found = {w.name: w for w in discover(BUNDLED)}
    for name in AS_EXPORTED:
        wut = found[name]
        workflows = [wut.workflow, *(called.workflow for called in wut.called)]
        text = json.dumps(workflows)
        assert set(re.findall(r"\$env\.(\w+)", text)) <= set(wut.env), name
        assert wut.upstreams, name
        urls = text + json.dumps(list(wut.env.values()))
        trigger = wut.service_trigger  # registers with its service's host, not a URL in the file
        for host in wut.upstreams:
            registers = trigger is not None and wut.upstreams[host].fake == trigger.fake
            assert host == "smtp" or registers or f"https://{host}" in urls, (name, host)
        for node in [n for w in workflows for n in w["nodes"]]:
            for ref in node.get("credentials", {}).values():
                assert ref["id"] and ref["name"], (name, node["name"])


def test_wait_nodes_lengthen_the_deadlines_by_their_interval() -> None:
    def wait(version: float, **params: Any) -> dict[str, Any]:
        return {"type": "n8n-nodes-base.wait", "typeVersion": version, "parameters": params}

    workflow = {
        "nodes": [
            wait(1.1, amount=150, unit="seconds"),
            wait(1.1, amount=1, unit="minutes"),
            wait(1.1),  # 5 s by default since version 1.1
            wait(1),  # 1 hour by default in version 1
            wait(1.1, resume="webhook"),  # resumes on a call: no interval
            {**wait(1.1, amount=9, unit="days"), "disabled": True},
        ]
    }
    assert wait_seconds(workflow) == 150 + 60 + 5 + 3600


def test_the_manifest_names_the_fakes_the_providers_define() -> None:
    """The schema's `fake` choices are the fake providers' own list (said there once)."""
    from typing import get_args

    from fake_providers.upstreams import FAKE_KINDS
    from harness.workflow.manifest_upstreams import UpstreamSpec

    assert get_args(UpstreamSpec.model_fields["fake"].annotation) == FAKE_KINDS


def test_discover_names_every_refused_folder_at_once(tmp_path: Path) -> None:
    write_case(tmp_path, folder="pay")
    (tmp_path / "half_done").mkdir()
    (tmp_path / "quarter_done").mkdir()
    with pytest.raises(ConfigError) as refused:
        discover(tmp_path)
    lines = str(refused.value).splitlines()
    assert lines[0] == f"2 workflow folders under {tmp_path} are refused:"
    assert "half_done/manifest.json: file not found" in lines[1]
    assert "quarter_done/manifest.json: file not found" in lines[2]
