"""Internal: The workflows a workflow under test calls, found from the files themselves.

An Execute Workflow node (``n8n-nodes-base.executeWorkflow``, every typeVersion) whose source
is the database names another workflow by id: ``workflowId`` is a plain string (typeVersion 1)
or a resource locator ``{"__rl": true, "value": "<id>", "mode": "list" | "id"}``. A workflow's
``settings.errorWorkflow`` names its Error Workflow the same way. Those workflows are its
companions: deployed beside it with the ids it names (the file is never edited), recursively
(a sub-workflow's own sub-workflows and Error Workflow are companions too).

``exports_by_id(folder)`` reads a folder of n8n exports (one JSON per workflow, each with its
``id``, as ``n8n export:workflow --all --separate`` writes them); ``companions`` resolves the
ids against it. An id no file holds is a ``ConfigError`` naming the node, the id and the fix.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import ConfigError
from harness.workflow.workflow_json import single_workflow

EXECUTE_WORKFLOW_NODE_TYPE = "n8n-nodes-base.executeWorkflow"
DATABASE_SOURCE = "database"  # the node's default source


@dataclass(frozen=True)
class Export:
    """One workflow file of a folder of exports."""

    path: Path
    workflow: dict[str, Any] = field(hash=False, repr=False)

    @property
    def id(self) -> str:
        return str(self.workflow.get("id") or "")

    @property
    def name(self) -> str:
        return str(self.workflow.get("name") or self.path.stem)


@dataclass(frozen=True)
class CalledWorkflow:
    """A workflow deployed beside the one under test with the id its caller names."""

    id: str
    export: Export
    # How the caller names it: "node 'Charge customer' of <file>" or "settings.errorWorkflow".
    named_by: str

    @property
    def workflow(self) -> dict[str, Any]:
        return self.export.workflow

    @property
    def name(self) -> str:
        return self.export.name


def exports_by_id(folder: Path) -> dict[str, Export]:
    """Every n8n workflow export in ``folder`` that carries an id (other JSON is skipped)."""
    found: dict[str, Export] = {}
    for path in sorted(folder.glob("*.json")):
        try:
            doc = single_workflow(json.loads(path.read_text(encoding="utf-8")), path)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, ConfigError):
            continue
        if not isinstance(doc, dict) or not isinstance(doc.get("nodes"), list):
            continue
        export = Export(path, doc)
        if export.id:
            found.setdefault(export.id, export)
    return found


def called_ids(workflow: dict[str, Any], where: str) -> list[tuple[str, str]]:
    """(node name, workflow id) of each enabled Execute Workflow node that loads its
    sub-workflow from the database. An id given as an expression cannot be resolved from
    the file: a ``ConfigError``."""
    found = []
    for node in workflow.get("nodes", []):
        if not isinstance(node, dict) or node.get("type") != EXECUTE_WORKFLOW_NODE_TYPE:
            continue
        if node.get("disabled", False):
            continue
        params = node.get("parameters") if isinstance(node.get("parameters"), dict) else {}
        assert isinstance(params, dict)
        if params.get("source", DATABASE_SOURCE) != DATABASE_SOURCE:
            continue  # a JSON parameter, a local file or a URL: nothing to deploy
        raw = params.get("workflowId")
        value = raw.get("value") if isinstance(raw, dict) else raw
        name = str(node.get("name"))
        if not isinstance(value, str | int) or not str(value).strip():
            raise ConfigError(
                f"{where}: node {name!r} (Execute Workflow) names no workflow id; pick the "
                "sub-workflow in the node (From list or By ID) and export again"
            )
        text = str(value).strip()
        if text.startswith("=") or "{{" in text:
            raise ConfigError(
                f"{where}: node {name!r} (Execute Workflow) takes its workflow id from the "
                f"expression {text!r}; the harness deploys only sub-workflows named by a fixed "
                "id: choose it From list or By ID"
            )
        found.append((name, text))
    return found


def detached_calls(workflow: dict[str, Any]) -> list[str]:
    """The enabled Execute Workflow nodes that do not wait for their sub-workflow
    (``options.waitForSubWorkflow`` false): the caller goes on, and may answer, first."""
    found = []
    for node in workflow.get("nodes", []):
        if not isinstance(node, dict) or node.get("type") != EXECUTE_WORKFLOW_NODE_TYPE:
            continue
        params = node.get("parameters") if isinstance(node.get("parameters"), dict) else {}
        options = params.get("options") if isinstance(params, dict) else None
        waits = options.get("waitForSubWorkflow", True) if isinstance(options, dict) else True
        if waits is False and not node.get("disabled", False):
            found.append(str(node.get("name")))
    return found


def error_workflow_id(workflow: dict[str, Any]) -> str | None:
    """The id ``settings.errorWorkflow`` names, if any."""
    settings = workflow.get("settings")
    value = settings.get("errorWorkflow") if isinstance(settings, dict) else None
    return str(value) if isinstance(value, str | int) and str(value).strip() else None


def companions(
    workflow: dict[str, Any],
    path: Path,
    exports: dict[str, Export],
    folder: Path,
    *,
    with_error_workflow: bool = True,
) -> list[CalledWorkflow]:
    """The workflows ``workflow`` (the file at ``path``) calls, recursively, leaves first
    (each is deployed before its callers). ``with_error_workflow`` False leaves the top
    workflow's ``settings.errorWorkflow`` alone (the manifest names that Error Workflow)."""
    ordered: dict[str, CalledWorkflow] = {}
    own_id = str(workflow.get("id") or "")

    def visit(current: dict[str, Any], where: Path, top: bool, trail: tuple[str, ...]) -> None:
        named = [
            (f"node {node!r} of {where}", wid) for node, wid in called_ids(current, str(where))
        ]
        error_id = error_workflow_id(current)
        if error_id is not None and (with_error_workflow or not top):
            named.append((f"settings.errorWorkflow of {where}", error_id))
        for named_by, wid in named:
            if wid == own_id or wid in trail or wid in ordered:
                continue  # itself, a cycle, or already found
            export = exports.get(wid)
            if export is None:
                raise ConfigError(
                    f"{named_by} names workflow id {wid!r}, which no file in {folder} holds; "
                    f"export that workflow there (n8n export:workflow --id={wid} "
                    f"--output={folder / (wid + '.json')}) or fix the id in the node"
                )
            visit(export.workflow, export.path, False, (*trail, wid))
            ordered.setdefault(wid, CalledWorkflow(wid, export, named_by))

    visit(workflow, path, True, (own_id,))
    return list(ordered.values())
