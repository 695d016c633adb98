"""The manifest as a schema: trigger headers and query strings, a business key at a nested
path, the JSON Schema for editors, and the warnings for a workflow whose cases would judge
nothing it does."""

from __future__ import annotations

import json
import threading
import warnings
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, ClassVar

import jsonschema
import pytest
from click.testing import CliRunner

from harness.engine.workload import History, Sender, SenderPolicy
from harness.errors import ConfigError
from harness.front.cli import main
from harness.workflow import manifest_model as mm
from harness.workflow.manifest import BUNDLED_WORKFLOWS, ManifestWarning, discover, load_manifest
from harness.workflow.manifest_model import json_schema
from tests.unit.test_manifest import MANIFEST, WORKFLOW, edited, write_case

PROVIDER_CALL: dict[str, Any] = {
    "id": "3",
    "name": "Charge",
    "type": "n8n-nodes-base.httpRequest",
    "typeVersion": 4.2,
    "position": [400, 0],
    "parameters": {
        "method": "POST",
        "url": "={{ $env.N8N_CHAOS_UPSTREAM_PROVIDER }}/v1/charges",
        "jsonBody": "={{ JSON.stringify({ amount: 1, reference: $json.body.order_id }) }}",
    },
}


def calling(*nodes: dict[str, Any]) -> dict[str, Any]:
    """The test workflow plus extra nodes."""
    return {**WORKFLOW, "nodes": [*WORKFLOW["nodes"], *nodes]}


def with_body(value: str) -> dict[str, Any]:
    return edited(PROVIDER_CALL, "parameters.jsonBody", value)


# -- headers and query strings ----------------------------------------------------------------


def test_trigger_headers_and_query_render_like_the_body(tmp_path: Path) -> None:
    manifest = edited(MANIFEST, "trigger.headers", {"X-Order": "{key}", "X-Event": "{event_id}"})
    manifest = edited(manifest, "trigger.query", {"order": "{key}", "page": 2, "dry": False})
    wut = load_manifest(write_case(tmp_path, manifest, calling(PROVIDER_CALL)))
    request = wut.render_request("order-7", "evt-9")
    assert request.body == wut.render_body("order-7", "evt-9")
    assert request.headers == {"X-Order": "order-7", "X-Event": "evt-9"}
    assert request.query == {"order": "order-7", "page": "2", "dry": "false"}
    assert wut.headers_template["X-Order"] == "{key}"  # the template stays a template


def test_headers_and_query_default_to_none(tmp_path: Path) -> None:
    request = load_manifest(write_case(tmp_path)).render_request("k", "e")
    assert request.headers == {} and request.query == {}


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("trigger.headers", ["X-A"], r"field 'trigger.headers': expected an object, got a list"),
        ("trigger.headers", {"X-A": 1}, r"field 'trigger.headers.X-A': expected a string, got a"),
        ("trigger.query", "a=1", r"field 'trigger.query': expected an object, got a string"),
        (
            "trigger.query",
            {"a": [1]},
            r"field 'trigger.query.a': expected a string, number or boolean, got a list",
        ),
    ],
)
def test_bad_headers_and_query_name_the_field(
    tmp_path: Path, field: str, value: Any, message: str
) -> None:
    directory = write_case(tmp_path, edited(MANIFEST, field, value))
    with pytest.raises(ConfigError, match=message) as info:
        load_manifest(directory)
    assert str(directory / "manifest.json") in str(info.value)


class _Recorder(BaseHTTPRequestHandler):
    seen: ClassVar[list[tuple[str, dict[str, str], bytes]]] = []

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        self.seen.append((self.path, dict(self.headers), self.rfile.read(length)))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *_: Any) -> None:
        pass


@pytest.fixture
def recorder() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/webhook/pay"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_the_sender_sends_the_rendered_headers_and_query(tmp_path: Path, recorder: str) -> None:
    manifest = edited(MANIFEST, "trigger.headers", {"X-Signature": "sig-{key}"})
    manifest = edited(manifest, "trigger.query", {"order": "{key}"})
    wut = load_manifest(write_case(tmp_path, manifest, calling(PROVIDER_CALL)))
    request = wut.render_request("order-7", "evt-9")
    _Recorder.seen.clear()
    sender = Sender(
        recorder,
        wut.method,
        History(),
        SenderPolicy(retry=False),
        headers=request.headers,
        query=request.query,
    )
    assert sender.deliver(request.body).outcome == "ok"
    ((path, headers, body),) = _Recorder.seen
    assert path == "/webhook/pay?order=order-7"
    assert headers["X-Signature"] == "sig-order-7"
    assert json.loads(body)["order_id"] == "order-7"


# -- a business key at a nested path -----------------------------------------------------------


NESTED_BODY = {"order": {"id": "{key}", "lines": [{"sku": "{key}"}]}, "amount": 1}


@pytest.mark.parametrize(
    ("business_key", "path"),
    [
        ("order.id", ("order", "id")),
        ("/order/id", ("order", "id")),
        ("order.lines.0.sku", ("order", "lines", "0", "sku")),
    ],
)
def test_business_key_at_a_nested_path(tmp_path: Path, business_key: str, path: Any) -> None:
    manifest = edited(edited(MANIFEST, "trigger.body", NESTED_BODY), "business_key", business_key)
    call = with_body("={{ JSON.stringify({ reference: $json.body." + ".".join(path) + " }) }}")
    wut = load_manifest(write_case(tmp_path, manifest, calling(call)))
    assert wut.business_key_path == path
    assert wut.render_body("k-1", "e")["order"]["id"] == "k-1"
    assert wut.warnings == ()


@pytest.mark.parametrize(
    ("business_key", "message"),
    [
        (
            "order.name",
            r"trigger.body has no field 'order.name'; did you mean 'order.id' or "
            r"'order.lines.0.sku' \(each holds '\{key\}'\)\? set business_key to the one",
        ),
        ("order", r"trigger.body.order must be the string '\{key\}', got \{'id'"),
        ("order..id", r"'order\.\.id' is not a path into the trigger body; write a field name"),
        ("/order//id", r"is not a path into the trigger body"),
    ],
)
def test_a_nested_business_key_that_is_not_the_key(
    tmp_path: Path, business_key: str, message: str
) -> None:
    manifest = edited(edited(MANIFEST, "trigger.body", NESTED_BODY), "business_key", business_key)
    with pytest.raises(ConfigError, match=r"field 'business_key': .*" + message):
        load_manifest(write_case(tmp_path, manifest))


def test_a_business_key_the_body_lacks_names_the_field_holding_the_key(tmp_path: Path) -> None:
    manifest = edited(MANIFEST, "business_key", "orderId")
    with pytest.raises(ConfigError) as caught:
        load_manifest(write_case(tmp_path, manifest))
    assert str(caught.value) == (
        f"{tmp_path / 'pay' / 'manifest.json'}: field 'business_key': trigger.body has no field "
        "'orderId'; did you mean 'order_id' (which holds '{key}')? set business_key to it"
    )


def test_a_business_key_no_field_holds_says_to_add_it(tmp_path: Path) -> None:
    body = {"amount": 1, "tags": ["a"]}
    manifest = edited(edited(MANIFEST, "trigger.body", body), "business_key", "orderId")
    with pytest.raises(ConfigError, match=r"field 'business_key': (.*)") as caught:
        load_manifest(write_case(tmp_path, manifest))
    assert str(caught.value).split("field 'business_key': ")[1] == (
        "trigger.body has no field 'orderId'; add it to trigger.body with the value '{key}', or "
        "set business_key to the field that carries the key (the provider counts commits per "
        "reference, and the workflow must send the business key as that reference)"
    )


def test_a_get_webhooks_query_field_holding_the_key_is_named() -> None:
    doc = {
        "name": "pay",
        "promise": "none",
        "effect": "charges",
        "workflow": "workflow.json",
        "trigger": {"method": "GET", "path": "pay", "body": {}, "query": {"ref": "{key}"}},
        "business_key": "reference",
    }
    with pytest.raises(
        ConfigError,
        match=r"trigger.body and trigger.query have no field 'reference'; did you mean 'ref'",
    ):
        mm.parse(doc, Path("manifest.json"))


# -- the warnings --------------------------------------------------------------------------------


def test_a_workflow_calling_an_unmapped_host_hears_which_to_map(tmp_path: Path) -> None:
    elsewhere = edited(PROVIDER_CALL, "parameters.url", "https://api.example.com/v1/charges")
    wut = load_manifest(write_case(tmp_path, workflow=calling(elsewhere)))
    (line,) = wut.warnings
    assert line.startswith(f"{tmp_path / 'pay' / 'manifest.json'}: node 'Charge' calls ")
    assert "api.example.com but field 'upstreams' does not map it" in line
    assert "$env" not in line


def test_a_workflow_that_calls_nothing_warns(tmp_path: Path) -> None:
    nowhere = edited(PROVIDER_CALL, "parameters.url", "={{ $json.url }}")
    wut = load_manifest(write_case(tmp_path, workflow=calling(nowhere)))
    (line,) = wut.warnings
    assert line.startswith(f"{tmp_path / 'pay' / 'workflow.json'}: no node calls the provider")
    assert "'upstreams'" in line and "/v1/charges'" in line


@pytest.mark.parametrize(
    "body",
    [
        "={{ JSON.stringify({ reference: 'order-' + $json.body.order_id }) }}",
        "={{ JSON.stringify({ reference: $json.body.event_id }) }}",
        "={{ JSON.stringify({ amount: 1 }) }}",
    ],
)
def test_a_workflow_that_never_sends_the_key_as_reference_warns(tmp_path: Path, body: str) -> None:
    wut = load_manifest(write_case(tmp_path, workflow=calling(with_body(body))))
    (line,) = wut.warnings
    assert "never sends the business key (trigger.body.order_id) as the provider's" in line
    assert "reference: $json.body.order_id" in line


@pytest.mark.parametrize(
    "sends",
    [
        with_body("={{ JSON.stringify({ reference: $json.body.order_id }) }}"),
        with_body('={{ JSON.stringify({ "reference": $json["body"]["order_id"] }) }}'),
        with_body("={{ JSON.stringify({ reference: String(body.order_id) }) }}"),
        with_body("={{ { reference: $('Webhook').first().json.body.order_id } }}"),
        edited(
            PROVIDER_CALL,
            "parameters.bodyParameters",
            {"parameters": [{"name": "reference", "value": "={{ $json.body.order_id }}"}]},
        ),
    ],
)
def test_the_ways_of_sending_the_key_as_reference_do_not_warn(
    tmp_path: Path, sends: dict[str, Any]
) -> None:
    assert load_manifest(write_case(tmp_path, workflow=calling(sends))).warnings == ()


def test_a_negative_control_declares_its_bug_instead_of_warning(tmp_path: Path) -> None:
    control = {"bug": "never charges", "caught_by": {"retry-no_fault-none": "NOT-DONE"}}
    manifest = edited(edited(MANIFEST, "negative_control", control), "promise", "exactly_once")
    assert load_manifest(write_case(tmp_path, manifest)).warnings == ()


def test_discover_emits_the_warnings(tmp_path: Path) -> None:
    write_case(tmp_path)  # the bare test workflow calls nothing
    with pytest.warns(ManifestWarning, match="no node calls the provider"):
        discover(tmp_path)
    lines: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # with a callback, nothing goes to warnings
        discover(tmp_path, on_warning=lines.append)
    assert len(lines) == 1 and "no node calls the provider" in lines[0]


def test_list_prints_a_warning_line(tmp_path: Path) -> None:
    write_case(tmp_path)
    result = CliRunner().invoke(main, ["list", "--workflows", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "warning: " in result.output and "no node calls the provider" in result.output
    assert "pay-retry-no_fault-none" in result.output
    # How it was read: the bare workflow calls nothing to place its answer after.
    assert "pay answers its sender at a moment the harness cannot place" in result.output


def test_the_bundled_workflows_do_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", ManifestWarning)
        found = discover(BUNDLED_WORKFLOWS)
    assert found and all(w.warnings == () for w in found)


# -- the JSON Schema -------------------------------------------------------------------------


def test_schema_command_prints_a_schema_every_bundled_manifest_meets() -> None:
    result = CliRunner().invoke(main, ["schema"])
    assert result.exit_code == 0, result.output
    schema = json.loads(result.output)
    assert schema == json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for manifest in sorted(BUNDLED_WORKFLOWS.glob("*/manifest.json")):
        errors = [e.message for e in validator.iter_errors(json.loads(manifest.read_text()))]
        assert errors == [], manifest
    trigger = schema["$defs"]["Trigger"]["properties"]
    assert {"method", "path", "body", "headers", "query"} <= set(trigger)
    assert "JSON pointer" in schema["properties"]["business_key"]["description"]


def test_schema_catches_what_the_loader_refuses() -> None:
    validator = jsonschema.Draft202012Validator(json_schema())
    assert not validator.is_valid(edited(MANIFEST, "promis", "none"))
    assert not validator.is_valid(edited(MANIFEST, "effect", "sms"))
    assert not validator.is_valid(edited(MANIFEST, "trigger.body", ...))


def test_a_schema_reference_in_the_manifest_is_allowed(tmp_path: Path) -> None:
    manifest = {"$schema": "./manifest.schema.json", **MANIFEST}
    assert load_manifest(write_case(tmp_path, manifest)).name == "pay"


# -- seeds ----------------------------------------------------------------------------------


def _stripe_export_with(tmp_path: Path, seed: list[dict[str, Any]]) -> Path:
    """The bundled Stripe export, copied, its manifest given these seeds."""
    import shutil

    for folder in ("stripe_idempotent", "_ledgers"):
        shutil.copytree(BUNDLED_WORKFLOWS / folder, tmp_path / folder)
    manifest_path = tmp_path / "stripe_idempotent" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest_path.write_text(json.dumps({**manifest, "seed": seed}))
    return manifest_path.parent


def test_seeds_render_like_the_trigger(tmp_path: Path) -> None:
    charge = {"id": "ch_{key}", "amount": 1250, "currency": "eur", "tags": ["{event_id}"]}
    seed = {"upstream": "api.stripe.com", "path": "/v1/charges", "body": charge}
    wut = load_manifest(_stripe_export_with(tmp_path, [seed]))
    [rendered] = wut.render_seeds("o-7", "evt-9")
    assert (rendered.method, rendered.upstream, rendered.path) == (
        "POST",
        "api.stripe.com",
        "/v1/charges",
    )
    assert rendered.body == {"id": "ch_o-7", "amount": 1250, "currency": "eur", "tags": ["evt-9"]}
    assert wut.seeds[0].body["id"] == "ch_{key}"  # the template stays for the next case


def test_a_seed_for_a_host_that_is_no_upstream_is_refused(tmp_path: Path) -> None:
    seed = {"upstream": "api.example.com", "path": "/v1/charges"}
    with pytest.raises(ConfigError) as refused:
        load_manifest(_stripe_export_with(tmp_path, [seed]))
    assert "seed.0.upstream" in str(refused.value)
    assert "'api.stripe.com'" in str(refused.value)


def test_list_says_what_each_case_seeds(tmp_path: Path) -> None:
    seed = {"upstream": "api.stripe.com", "path": "/v1/charges", "body": {"id": "ch_{key}"}}
    _stripe_export_with(tmp_path, [seed])
    result = CliRunner().invoke(main, ["list", "--workflows", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "stripe_idempotent seeds POST api.stripe.com/v1/charges before each case" in (
        result.output
    )


def test_key_number_is_one_number_per_key_in_trigger_and_seeds(tmp_path: Path) -> None:
    """Pipedrive's and HubSpot's ids are numbers: '{key_number}' alone is a JSON number, the
    same for the trigger and the seeds of one case, another for another case."""
    deal = {"id": "{key_number}", "title": "Order {key}"}
    seed = {"upstream": "api.stripe.com", "path": "/v1/charges", "body": deal}
    directory = _stripe_export_with(tmp_path, [seed])
    manifest_path = directory / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["trigger"]["body"]["deal_id"] = "{key_number}"
    manifest["trigger"]["body"]["note"] = "deal {key_number}"
    manifest_path.write_text(json.dumps(manifest))
    wut = load_manifest(directory)
    body = wut.render_body("o-7", "e-1")
    [rendered] = wut.render_seeds("o-7", "e-1")
    assert isinstance(body["deal_id"], int) and rendered.body["id"] == body["deal_id"]
    assert body["note"] == f"deal {body['deal_id']}"
    assert wut.render_body("o-8", "e-1")["deal_id"] != body["deal_id"]
