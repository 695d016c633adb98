"""Reading a probe's recorded evidence (``ProbeWorld.evidence``, as saved in findings.json):
the pure helpers each probe's ``judge(evidence)`` is built from, so an answer can be
re-derived from a saved report without a stack.

A probe records what only its run could measure (a kill's proof, a count from the logs) under
``evidence["observed"]``; the rest (status paths, provider commits, the timeline's waits)
is read from the general evidence.
"""

from __future__ import annotations

from typing import Any

OBSERVED = "observed"


def observed(evidence: dict[str, Any]) -> dict[str, Any]:
    return dict(evidence.get(OBSERVED) or {})


def reached(evidence: dict[str, Any], what: str) -> bool:
    """The run's wait for ``what`` ended with it reached (not given up)."""
    return any(
        e.get("event") == "reached" and e.get("what") == what for e in evidence.get("timeline", ())
    )


def status_path(evidence: dict[str, Any], execution: str | None) -> list[str]:
    """Every status the execution's row was seen in, in order."""
    steps = (evidence.get("status_paths") or {}).get(str(execution), [])
    return [str(step["status"]) for step in steps]


def final_status(evidence: dict[str, Any], execution: str | None) -> str:
    path = status_path(evidence, execution)
    return path[-1] if path else "unknown"


def run_facts(evidence: dict[str, Any], execution: str | None) -> dict[str, Any]:
    """The facts most probes give of their execution: its status path and final status, the
    provider's commits, how often a worker started it, how many rows the workflow has."""
    return {
        "execution": execution,
        "status_path": status_path(evidence, execution),
        "final_status": final_status(evidence, execution),
        "commits": commit_count(evidence),
        "worker_starts": observed(evidence).get("worker_starts"),
        "executions": len(rows(evidence)),
    }


def commit_count(evidence: dict[str, Any]) -> int:
    return len(evidence.get("provider_commits") or ())


def attempt_count(evidence: dict[str, Any]) -> int:
    return len(evidence.get("provider_attempts") or ())


def rows(evidence: dict[str, Any]) -> list[dict[str, Any]]:
    return list(evidence.get("execution_rows") or ())


def sender_seen(result: dict[str, Any] | None) -> str:
    """got 200 | got 500 | got another status | got no answer (a closed word), from what a
    ``Sender`` recorded (no status: it had no answer, or not yet)."""
    status = (result or {}).get("status")
    if status is None:
        return "got no answer"
    return f"got {int(status)}" if int(status) in (200, 500) else "got another status"


def overlapped(calls: list[dict[str, Any]]) -> bool:
    """Two calls were in flight at one instant (each sent before the other's answer)."""
    try:
        a, b = calls
        return bool(a["sent_at"] <= b["answered_at"] and b["sent_at"] <= a["answered_at"])
    except (KeyError, ValueError):
        return False
