"""Sub-workflows and project folders: the workflows an Execute Workflow node or
settings.errorWorkflow names are found among the folder's exports, recursively, leaves first;
an id no file holds is one line naming the node, the id and the fix; a project manifest
judges several exports of one folder with shared defaults and the deployment's env."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from harness.errors import ConfigError
from harness.front.cli import main as cli
from harness.workflow import subworkflows as sw
from harness.workflow import workflow_hosts as wh
from harness.workflow.manifest import PROJECT_FILE, deployment_env, discover, load_project

BUNDLED = Path(__file__).resolve().parents[2] / "workflows_under_test" / "subflow_checkout"
NAIVE_PARENT, NAIVE_SUB = "Ck7Qw2Lp9Xa4Rn1T", "Cn4Tr8Hw2Jq6Lm3P"


def call_node(name: str, workflow_id: Any, **more: Any) -> dict[str, Any]:
    return {
        "name": name,
        "type": sw.EXECUTE_WORKFLOW_NODE_TYPE,
        "typeVersion": 1.2,
        "parameters": {"workflowId": workflow_id, **more},
    }


def export(wid: str, *nodes: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"id": wid, "name": f"wf {wid}", "nodes": list(nodes), "connections": {}, **more}


def write(folder: Path, *workflows: dict[str, Any]) -> dict[str, sw.Export]:
    folder.mkdir(exist_ok=True)
    for workflow in workflows:
        (folder / f"{workflow['id']}.json").write_text(json.dumps(workflow))
    return sw.exports_by_id(folder)


@pytest.mark.parametrize(
    "workflow_id",
    [
        "Sub1",
        {"__rl": True, "value": "Sub1", "mode": "list"},
        {"__rl": True, "value": "Sub1", "mode": "id"},
    ],
)
def test_every_form_of_workflow_id_names_the_sub_workflow(workflow_id: Any) -> None:
    parent = export("Top", call_node("Charge", workflow_id))
    assert sw.called_ids(parent, "top.json") == [("Charge", "Sub1")]


def test_other_sources_and_disabled_nodes_deploy_nothing() -> None:
    parent = export(
        "Top",
        call_node("Inline", "", source="parameter", workflowJson="{}"),
        {**call_node("Off", "Sub1"), "disabled": True},
    )
    assert sw.called_ids(parent, "top.json") == []


def test_an_expression_id_is_one_line_naming_the_node() -> None:
    parent = export("Top", call_node("Charge", {"__rl": True, "value": "={{ $json.wf }}"}))
    with pytest.raises(ConfigError, match=r"node 'Charge' .*expression.*From list or By ID"):
        sw.called_ids(parent, "top.json")


def test_companions_come_leaves_first_with_error_workflows_and_without_cycles(
    tmp_path: Path,
) -> None:
    exports = write(
        tmp_path,
        export("Top", call_node("Charge", "Mid"), settings={"errorWorkflow": "Err"}),
        export("Mid", call_node("Deeper", "Leaf"), call_node("Back", "Top")),
        export("Leaf", call_node("Self", "Leaf")),
        export("Err"),
    )
    top = exports["Top"]
    found = sw.companions(top.workflow, top.path, exports, tmp_path)
    assert [c.id for c in found] == ["Leaf", "Mid", "Err"]
    assert "node 'Charge'" in found[1].named_by
    assert [
        c.id
        for c in sw.companions(top.workflow, top.path, exports, tmp_path, with_error_workflow=False)
    ] == ["Leaf", "Mid"]


def test_an_id_the_folder_does_not_hold_names_node_id_and_fix(tmp_path: Path) -> None:
    exports = write(tmp_path, export("Top", call_node("Charge customer", "Gone42")))
    top = exports["Top"]
    with pytest.raises(ConfigError) as caught:
        sw.companions(top.workflow, top.path, exports, tmp_path)
    line = str(caught.value)
    assert "\n" not in line
    assert "node 'Charge customer'" in line and "'Gone42'" in line
    assert "n8n export:workflow --id=Gone42" in line


def test_an_export_wrapping_one_workflow_is_found_by_its_id(tmp_path: Path) -> None:
    (tmp_path / "leaf.json").write_text(json.dumps([export("Leaf")]))
    (tmp_path / "api.json").write_text(json.dumps({"data": export("Api")}))
    (tmp_path / "both.json").write_text(json.dumps([export("A"), export("B")]))  # not one
    assert sorted(sw.exports_by_id(tmp_path)) == ["Api", "Leaf"]


def test_the_bundled_project_loads_both_workflows_with_their_sub_workflows() -> None:
    found = {w.name: w for w in load_project(BUNDLED)}
    assert set(found) == {"subflow_checkout_naive", "subflow_checkout_idempotent"}
    naive = found["subflow_checkout_naive"]
    assert [c.id for c in naive.called] == [NAIVE_SUB]
    assert naive.env == {"PAYMENTS_API_URL": "https://api.stripe.com"}
    assert naive.negative_control is not None
    assert found["subflow_checkout_idempotent"].ledger_state_query is not None
    assert naive.warnings == ()


def project_copy(tmp_path: Path, change: Any = None) -> Path:
    folder = Path(shutil.copytree(BUNDLED, tmp_path / "checkout"))
    shutil.copytree(BUNDLED.parent / "_ledgers", tmp_path / "_ledgers")  # its shared schema
    if change is not None:
        doc = json.loads((folder / PROJECT_FILE).read_text())
        change(doc)
        (folder / PROJECT_FILE).write_text(json.dumps(doc))
    return folder


def test_a_missing_sub_workflow_export_fails_the_cli_with_exit_2(tmp_path: Path) -> None:
    folder = project_copy(tmp_path)
    (folder / f"{NAIVE_SUB}.json").unlink()
    result = CliRunner().invoke(cli, ["list", "--workflows", str(folder)])
    assert result.exit_code == 2
    out = " ".join(result.output.split())
    assert "error:" in out and "node 'Charge customer'" in out and NAIVE_SUB in out


def test_a_project_entry_naming_no_export_lists_the_exports(tmp_path: Path) -> None:
    def unknown(doc: dict[str, Any]) -> None:
        doc["workflows"]["subflow_checkout_naive"]["workflow"] = "Checkout (typo)"

    with pytest.raises(ConfigError, match=r"workflows.subflow_checkout_naive: field 'workflow'"):
        load_project(project_copy(tmp_path, unknown))


def test_an_env_host_nobody_maps_is_a_warning_and_an_unset_env_too(tmp_path: Path) -> None:
    def elsewhere(doc: dict[str, Any]) -> None:
        doc["env"] = {"PAYMENTS_API_URL": "https://payments.example.com"}
        del doc["workflows"]["subflow_checkout_naive"]["negative_control"]  # it keeps quiet

    naive = {w.name: w for w in load_project(project_copy(tmp_path, elsewhere))}
    lines = " ".join(naive["subflow_checkout_naive"].warnings)
    assert "calls payments.example.com" in lines

    def unset(doc: dict[str, Any]) -> None:
        doc["env"] = {}
        del doc["workflows"]["subflow_checkout_naive"]["negative_control"]

    naive = {w.name: w for w in load_project(project_copy(tmp_path / "b", unset))}
    assert "$env.PAYMENTS_API_URL" in " ".join(naive["subflow_checkout_naive"].warnings)


def test_deployment_values_resolve_in_urls() -> None:
    deployment = wh.Deployment({"SUPABASE_URL": "https://abc.supabase.co"}, {"API": "https://x.io"})
    assert deployment.resolve("={{ $env.SUPABASE_URL }}/rest/v1/orders") == (
        "https://abc.supabase.co/rest/v1/orders"
    )
    assert deployment.resolve("={{ $vars['API'] }}/v2") == "https://x.io/v2"
    assert deployment.resolve("={{ $env.OTHER }}/x") == "={{ $env.OTHER }}/x"


def test_one_stack_refuses_two_values_for_one_variable(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    project_copy(root)

    def other(doc: dict[str, Any]) -> None:
        doc["env"] = {"PAYMENTS_API_URL": "https://api.other.com"}
        doc["workflows"] = {f"{name}_2": entry for name, entry in doc["workflows"].items()}

    shutil.move(str(project_copy(tmp_path / "b", other)), root / "other")
    with pytest.raises(ConfigError, match=r"env.PAYMENTS_API_URL.*one stack runs both"):
        discover(root, lambda _: None)


def test_secrets_are_generated_once_per_process(tmp_path: Path) -> None:
    def secret(doc: dict[str, Any]) -> None:
        doc["variables"] = {"SIGNING_KEY": "secret"}

    folder = project_copy(tmp_path, secret)
    first, second = load_project(folder)[0], load_project(folder)[0]
    assert first.variables["SIGNING_KEY"] != "secret"
    assert first.variables == second.variables
    env, variables = deployment_env([first, second])
    assert variables == first.variables and env == first.env


def test_a_sub_workflow_run_without_waiting_acknowledges_early(tmp_path: Path) -> None:
    def detach(doc: dict[str, Any]) -> None:
        del doc["workflows"]["subflow_checkout_naive"]["negative_control"]

    folder = project_copy(tmp_path, detach)
    parent = folder / f"{NAIVE_PARENT}.json"
    workflow = json.loads(parent.read_text())
    for node in workflow["nodes"]:
        if node["type"] == sw.EXECUTE_WORKFLOW_NODE_TYPE:
            node["parameters"]["options"]["waitForSubWorkflow"] = False
    parent.write_text(json.dumps(workflow))
    naive = {w.name: w for w in load_project(folder)}["subflow_checkout_naive"]
    assert naive.acknowledges_early is False
    assert "without waiting for it" in " ".join(naive.warnings)

    project = json.loads((folder / PROJECT_FILE).read_text())
    project["workflows"]["subflow_checkout_naive"]["acknowledge"] = "early"
    (folder / PROJECT_FILE).write_text(json.dumps(project))
    naive = {w.name: w for w in load_project(folder)}["subflow_checkout_naive"]
    assert naive.acknowledges_early is True
    assert "without waiting" not in " ".join(naive.warnings)
