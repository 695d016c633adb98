"""The boundaries of one run of a workflow, assembled from what outside parts recorded.

Pure: ``assemble`` reads n8n's execution data (``runData[node][i].startTime`` and
``executionTime``, in ms), the intercepting proxy's journal and the provider's attempt log,
and returns the run's nodes, its outbound requests (each attributed to the node whose run
interval holds it) and its boundaries in order. Saved traces are re-read with
``Trace.from_json``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

# The provider's and the proxy's clocks are this machine's; n8n's are in ms. A request is
# attributed to a node whose interval, widened by this much, holds its start.
ATTRIBUTION_SLACK_S = 0.05
# Node types whose run writes to a database: a ledger write of the workflow.
LEDGER_NODE_TYPES = frozenset({"n8n-nodes-base.postgres", "n8n-nodes-base.mySql"})

BoundaryKind = Literal["request", "node_gap"]


@dataclass(frozen=True)
class NodeRun:
    """One run of a node, as n8n's execution data records it (times in seconds)."""

    name: str
    type: str
    run_index: int
    start: float
    end: float
    status: str = ""

    @property
    def ledger_write(self) -> bool:
        return self.type in LEDGER_NODE_TYPES


@dataclass(frozen=True)
class ProviderAttempt:
    """One effect request as the provider logged it (``fake_providers.payment.Attempt``)."""

    id: int
    effect: str
    reference: str | None
    received_at: float
    outcome: str


@dataclass(frozen=True)
class Request:
    """One outbound request of the run: what the proxy saw and/or what the provider logged."""

    time: float
    method: str
    host: str
    path: str
    status: int | None
    node: str | None  # the node that sent it (None: no node's interval holds it)
    effect: str | None = None  # the provider's effect kind when it is an effect request
    effect_index: int | None = None  # 1-based among the run's effect requests

    @property
    def route(self) -> str:
        return f"{self.method} {self.host}{self.path}"


@dataclass(frozen=True)
class Boundary:
    """A place to strike: around the ``effect_index``-th effect request (``request``), or
    between two nodes that ran one after the other (``node_gap``)."""

    id: str  # "r1", "g3": stable within a trace
    kind: BoundaryKind
    after_node: str | None  # the node that ran last before the boundary
    before_node: str | None  # the node that runs next
    request: Request | None = None

    def describe(self) -> str:
        if self.request is not None:
            r = self.request
            return f"request {r.effect_index} {r.route} ({r.effect}) sent by node {r.node!r}"
        return f"after node {self.after_node!r} ended and before {self.before_node!r} started"


@dataclass(frozen=True)
class Trace:
    workflow: str
    key: str
    execution_ids: list[str]
    nodes: list[NodeRun]
    requests: list[Request]
    boundaries: list[Boundary] = field(default_factory=list)
    control_verdict: str = ""

    @property
    def effect_requests(self) -> list[Request]:
        return [r for r in self.requests if r.effect_index is not None]

    def node_names(self) -> list[str]:
        """The nodes in the order they first ran (the strip the report draws)."""
        seen: list[str] = []
        for node in self.nodes:
            if node.name not in seen:
                seen.append(node.name)
        return seen

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Trace:
        requests = [Request(**r) for r in doc["requests"]]
        boundaries = [
            Boundary(**{**b, "request": Request(**b["request"]) if b.get("request") else None})
            for b in doc.get("boundaries", [])
        ]
        return cls(
            workflow=doc["workflow"],
            key=doc["key"],
            execution_ids=list(doc["execution_ids"]),
            nodes=[NodeRun(**n) for n in doc["nodes"]],
            requests=requests,
            boundaries=boundaries,
            control_verdict=doc.get("control_verdict", ""),
        )


def node_runs(execution: Mapping[str, Any], node_types: Mapping[str, str]) -> list[NodeRun]:
    """Every node run of one execution (``GET /executions/{id}?includeData=true``), by start."""
    data = execution.get("data")
    result = data.get("resultData", {}) if isinstance(data, dict) else {}
    run_data = result.get("runData") if isinstance(result, dict) else None
    runs: list[NodeRun] = []
    for name, entries in (run_data or {}).items():
        for index, entry in enumerate(entries if isinstance(entries, list) else []):
            if not isinstance(entry, dict) or entry.get("startTime") is None:
                continue
            start = float(entry["startTime"]) / 1000
            took = float(entry.get("executionTime") or 0) / 1000
            runs.append(
                NodeRun(
                    name=str(name),
                    type=node_types.get(str(name), ""),
                    run_index=index,
                    start=start,
                    end=start + took,
                    status=str(entry.get("executionStatus") or ""),
                )
            )
    return sorted(runs, key=lambda n: (n.start, n.end))


def attribute(at: float, nodes: Sequence[NodeRun]) -> str | None:
    """The node whose run holds ``at`` (the latest started one if several do); failing that,
    the nearest within ``ATTRIBUTION_SLACK_S`` (clocks and ms rounding)."""
    holding = [n for n in nodes if n.start <= at <= n.end]
    if holding:
        return max(holding, key=lambda n: n.start).name
    near = [
        (min(abs(at - n.start), abs(at - n.end)), n.name)
        for n in nodes
        if n.start - ATTRIBUTION_SLACK_S <= at <= n.end + ATTRIBUTION_SLACK_S
    ]
    return min(near)[1] if near else None


@dataclass(frozen=True)
class Seen:
    """One request line of the intercepting proxy's journal (its useful fields)."""

    time: float
    method: str
    host: str
    path: str
    status: int | None
    outcome: str


def requests_of(
    nodes: Sequence[NodeRun],
    seen: Iterable[Seen],
    attempts: Iterable[ProviderAttempt],
    key: str | None = None,
) -> list[Request]:
    """The run's outbound requests, oldest first. A provider effect attempt is matched with
    the proxy's latest unmatched line at or before it (the proxy forwards, then the provider
    receives); an attempt the proxy never saw (a workflow calling the bundled provider
    directly) is a request of its own."""
    lines = sorted((s for s in seen if s.outcome != "loopback"), key=lambda s: s.time)
    effects = sorted(
        (a for a in attempts if a.outcome not in ("processed", "seeded")),
        key=lambda a: a.received_at,
    )
    matched: dict[int, ProviderAttempt] = {}
    unmatched: list[ProviderAttempt] = []
    for attempt in effects:
        candidates = [
            i
            for i, s in enumerate(lines)
            if i not in matched and s.method != "GET" and s.time <= attempt.received_at + 0.01
        ]
        if candidates:
            matched[candidates[-1]] = attempt
        else:
            unmatched.append(attempt)
    found: list[tuple[float, str, str, str, int | None, ProviderAttempt | None]] = [
        (s.time, s.method, s.host, s.path, s.status, matched.get(i)) for i, s in enumerate(lines)
    ]
    found += [(a.received_at, "POST", "provider", f"/({a.effect})", None, a) for a in unmatched]
    found.sort(key=lambda f: f[0])
    requests: list[Request] = []
    index = 0
    for at, method, host, path, status, sent in found:
        effect_index = None
        # Only a request carrying the business key can be held by the provider's barriers
        # (armed by reference): the others are listed, with their effect, but not struck.
        if sent is not None and (key is None or sent.reference == key):
            index += 1
            effect_index = index
        requests.append(
            Request(
                time=at,
                method=method,
                host=host,
                path=path,
                status=status,
                node=attribute(at, nodes),
                effect=sent.effect if sent is not None else None,
                effect_index=effect_index,
            )
        )
    return requests


def boundaries_of(nodes: Sequence[NodeRun], requests: Sequence[Request]) -> list[Boundary]:
    """The places to strike, in the order the run met them: each effect request (around it:
    before it is sent, after the commit, after the answer), then each gap between two nodes
    that ran one after the other."""
    order = sorted(nodes, key=lambda n: n.start)
    following = {
        n.name: order[i + 1].name if i + 1 < len(order) else None for i, n in enumerate(order)
    }
    preceding = {n.name: order[i - 1].name if i > 0 else None for i, n in enumerate(order)}
    found: list[tuple[float, Boundary]] = []
    for r in requests:
        if r.effect_index is None:
            continue
        found.append(
            (
                r.time,
                Boundary(
                    id=f"r{r.effect_index}",
                    kind="request",
                    after_node=preceding.get(r.node) if r.node else None,
                    before_node=following.get(r.node) if r.node else None,
                    request=r,
                ),
            )
        )
    for i, (a, b) in enumerate(itertools.pairwise(order), start=1):
        found.append(
            (a.end, Boundary(id=f"g{i}", kind="node_gap", after_node=a.name, before_node=b.name))
        )
    return [b for _, b in sorted(found, key=lambda f: f[0])]


def assemble(
    workflow: str,
    key: str,
    executions: Sequence[Mapping[str, Any]],
    node_types: Mapping[str, str],
    seen: Iterable[Seen],
    attempts: Iterable[ProviderAttempt],
    control_verdict: str = "",
) -> Trace:
    """The trace of one run from its executions' data, the proxy's lines and the provider's
    attempts (all of the run's time window)."""
    nodes = sorted((n for e in executions for n in node_runs(e, node_types)), key=lambda n: n.start)
    requests = requests_of(nodes, seen, attempts, key)
    return Trace(
        workflow=workflow,
        key=key,
        execution_ids=[str(e.get("id")) for e in executions],
        nodes=nodes,
        requests=requests,
        boundaries=boundaries_of(nodes, requests),
        control_verdict=control_verdict,
    )
