"""When a workflow's sender gets its answer, read from the workflow's JSON: whether its calls
to services give up before a slow answer comes, and whether its answer waits for the writes
that n8n and the ledger make after the effect. A naive workflow is caught by a fault that
loses the sender's answer only where the answer is in fact lost (harness.matrix.cases).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from harness.workflow import workflow_json as wj
from harness.workflow.subworkflows import EXECUTE_WORKFLOW_NODE_TYPE

HTTP_REQUEST_NODE_TYPE = "n8n-nodes-base.httpRequest"
RESPOND_NODE_TYPE = "n8n-nodes-base.respondToWebhook"
# Nodes that write to Postgres: the ledger's writes, held with n8n's own by a crash window.
_WRITING_NODE_TYPES = frozenset({"n8n-nodes-base.postgres"})
# Credentials of the stack's own parts, not of a service the node calls.
_STACK_CREDENTIALS = frozenset({"postgres", "redis"})


def call_timeout_s(workflow: dict[str, Any]) -> float | None:
    """The longest timeout of the nodes that call a service (the HTTP Request node's and a
    service node's ``options.timeout``, in ms), or None when one of them has none: n8n's
    service nodes wait minutes for an answer unless told otherwise."""
    timeouts = [_timeout_s(node) for node in _service_nodes(workflow)]
    if not timeouts or None in timeouts:
        return None
    return max(t for t in timeouts if t is not None)


def answers_after_writes(workflow: dict[str, Any], response_mode: str) -> bool:
    """Whether the sender's answer comes only after the writes that follow the effect:
    ``lastNode`` answers with the finished execution; ``responseNode`` only when no Respond
    to Webhook node can be reached from a service call without passing a Postgres node (a
    worker hands that answer to main over Redis, not through its database)."""
    if response_mode == "lastNode":
        return True
    if response_mode != "responseNode":
        return False  # answered on receipt: no later window can lose it
    by_name = {str(n.get("name")): n for n in _nodes(workflow)}
    following = _successors(workflow)
    seen: set[str] = set()
    todo = calls(workflow)
    if not todo:
        return False  # no call seen: whether the answer waits is not known, so it may not
    while todo:
        name = todo.pop()
        for after in following.get(name, ()):
            node = by_name.get(after, {})
            if _acknowledges(node):
                return False
            if after not in seen and node.get("type") not in _WRITING_NODE_TYPES:
                seen.add(after)
                todo.append(after)
    return True


def calls(workflow: dict[str, Any]) -> list[str]:
    """The nodes the answer is placed after: service calls, and the Execute Workflow nodes
    (a sub-workflow's calls come back to the node that called it)."""
    callers = (n for n in _nodes(workflow) if n.get("type") == EXECUTE_WORKFLOW_NODE_TYPE)
    return [str(n.get("name")) for n in (*_service_nodes(workflow), *callers)]


def answers_before_calls(workflow: dict[str, Any], trigger: str) -> bool:
    """Whether a Respond to Webhook node answers the sender before any service call: it is
    reached from the ``trigger`` node past no service call (nor sub-workflow), and a service
    call comes after it. Its 2xx then says "accepted", not "done" (acknowledge first)."""
    by_name = {str(n.get("name")): n for n in _nodes(workflow)}
    calling = {str(n.get("name")) for n in _service_nodes(workflow)}
    calling |= {name for name, n in by_name.items() if n.get("type") == EXECUTE_WORKFLOW_NODE_TYPE}
    following = _successors(workflow)
    responds = [
        name
        for name in _reached(following, [trigger], stop=calling)
        if _acknowledges(by_name.get(name, {}))
    ]
    return any(calling & _reached(following, [name], stop=set()) for name in responds)


def _acknowledges(node: dict[str, Any]) -> bool:
    """A Respond to Webhook node that may answer 2xx: one set to answer 4xx or 5xx (the
    "retry later" of an error branch, a rejection) tells the sender nothing was done."""
    if node.get("type") != RESPOND_NODE_TYPE:
        return False
    parameters = node.get("parameters")
    options = parameters.get("options") if isinstance(parameters, dict) else None
    code = options.get("responseCode") if isinstance(options, dict) else None
    if isinstance(code, str) and code.strip().isdigit():
        code = int(code)
    # Absent: n8n answers 200; an expression may be anything, so it may be a 2xx.
    return not isinstance(code, int) or isinstance(code, bool) or 200 <= code < 300


def _reached(following: dict[str, list[str]], start: list[str], stop: set[str]) -> set[str]:
    """The nodes reached from ``start`` (without it), not going on past a node in ``stop``."""
    seen: set[str] = set()
    todo = list(start)
    while todo:
        for after in following.get(todo.pop(), ()):
            if after not in seen:
                seen.add(after)
                if after not in stop:
                    todo.append(after)
    return seen


def _nodes(workflow: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for node in workflow.get("nodes") or []:
        if isinstance(node, dict) and not node.get("disabled", False):
            yield node


def _service_nodes(workflow: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The HTTP Request nodes, and the nodes with a credential of a service."""
    for node in _nodes(workflow):
        credentials = node.get("credentials")
        named = set(credentials) if isinstance(credentials, dict) else set()
        if node.get("type") == HTTP_REQUEST_NODE_TYPE or named - _STACK_CREDENTIALS:
            yield node


def _timeout_s(node: dict[str, Any]) -> float | None:
    parameters = node.get("parameters")
    options = parameters.get("options") if isinstance(parameters, dict) else None
    timeout = options.get("timeout") if isinstance(options, dict) else None
    if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0:
        return None  # absent, or an expression: n8n's own default, minutes
    return float(timeout) / 1000


def _successors(workflow: dict[str, Any]) -> dict[str, list[str]]:
    """Each node's name -> the nodes its outputs connect to (every output, every branch)."""
    connections = workflow.get("connections")
    return {
        str(source): [str(t) for t in wj.connection_targets(outputs) if t is not None]
        for source, outputs in (connections if isinstance(connections, dict) else {}).items()
    }
