"""Which node made an n8n execution fail, and its error, read from the execution's data as the
public API returns it (``GET /api/v1/executions/{id}?includeData=true``).

A workflow that fails on its own (a node that throws on every request) gets a verdict naming
that node and its message, not a harness error: this is where the name and message come from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

FAILED_STATUSES = ("error", "crashed", "failed")


@dataclass(frozen=True)
class NodeFailure:
    """The node an execution failed at (None: no node, e.g. n8n's stall sweep gave the
    execution up), n8n's message and (if any) its longer description."""

    node: str | None
    message: str
    description: str | None = None

    def line(self) -> str:
        detail = f" ({_plain(self.description)})" if self.description else ""
        where = f"node {self.node!r} failed" if self.node is not None else "failed outside any node"
        gloss = next((f" [{g}]" for said, g in _GLOSSES.items() if said in self.message), "")
        return f"{where}: {_plain(self.message)}{detail}{gloss}"


# n8n's words that send a reader the wrong way, and what they mean in a case.
_GLOSSES = {
    # execution-recovery.service.ts: WorkflowCrashedError / NodeCrashedError.
    "possible out-of-memory issue": "n8n's recovery says this of every execution whose "
    "process ended mid-run: a kill, a lost Redis link, not only memory",
    # scaling: a job Bull found stalled past QUEUE_WORKER_MAX_STALLED_COUNT.
    "failed to be processed too many times": "n8n's stall sweep gave its job up: the worker "
    "running it died, paused or lost Redis (n8n's retry of such an execution says it again)",
}


def node_failure(execution: dict[str, Any]) -> NodeFailure | None:
    """The failing node of a failed execution; None for one that did not fail (a node whose
    error the workflow continued past, continueOnFail, is no failure of the execution)."""
    data = execution.get("data")
    result = data.get("resultData", {}) if isinstance(data, dict) else {}
    error = result.get("error") if isinstance(result.get("error"), dict) else None
    status = execution.get("status")
    if error is None and status not in FAILED_STATUSES:
        return None
    run_error = _last_node_error(result.get("runData"))
    node = _name(error.get("node")) if error is not None else None
    if node is None and run_error is not None:
        node = run_error[0]
    node = node or result.get("lastNodeExecuted")
    source = error if error is not None else (run_error[1] if run_error is not None else {})
    message = source.get("message") or (f"execution {status}" if status else "execution failed")
    description = source.get("description")
    return NodeFailure(None if node is None else str(node), str(message), _text(description))


def _last_node_error(run_data: Any) -> tuple[str, dict[str, Any]] | None:
    """The error of the node that ran last among those whose run ended in an error."""
    found: list[tuple[float, str, dict[str, Any]]] = []
    if not isinstance(run_data, dict):
        return None
    for node, runs in run_data.items():
        for run in runs if isinstance(runs, list) else []:
            if isinstance(run, dict) and isinstance(run.get("error"), dict):
                found.append((float(run.get("startTime") or 0), str(node), run["error"]))
    if not found:
        return None
    _, node, error = max(found, key=lambda item: item[0])
    return node, error


def _name(node: Any) -> str | None:
    if isinstance(node, dict) and isinstance(node.get("name"), str):
        return str(node["name"])
    return node if isinstance(node, str) else None


_MARKUP = re.compile(r"<[^>]*>")


def _plain(message: str) -> str:
    """n8n's message or description as one line of text: an upstream's HTML error page (a
    proxy's 502) quoted in it reads as its text, without tags or line breaks."""
    return " ".join(_MARKUP.sub(" ", message).split())


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
