"""Reading a probe's recorded evidence (``ProbeWorld.evidence``, as saved in findings.json):
the pure helpers each probe's ``judge(evidence)`` is built from, so an answer can be
re-derived from a saved report without a stack.

A probe records what only its run could measure (a kill's proof, a count from the logs) under
``evidence["observed"]``; the rest (status paths, provider commits, the timeline's waits)
is read from the general evidence.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

OBSERVED = "observed"
# Every status a probe may see its execution's row end in.
STATUSES = ("crashed", "error", "success", "running", "new", "waiting", "canceled", "unknown")
# What a sender may have seen (``sender_seen``), the words of the answers that say it.
SENDER_WORDS = ("got 200", "got 500", "got another status", "got no answer")
COUNTS = ("none", "one", "two", "more than two")
TIMES = ("never", "once", "twice or more")
CHARGE_RAN = ("charge never ran", "charge ran once", "charge ran twice or more")
# The choices of an answer that says how a run ended, in this order (``vocabulary(template,
# **RUN_WORDS)``): the row's final status, how often the charge ran, what the sender got.
RUN_WORDS = {"status": STATUSES, "ran": CHARGE_RAN, "sender": SENDER_WORDS}


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


def unkilled(evidence: dict[str, Any]) -> str:
    """Why a strike is void whose victim (observed) did not end by SIGKILL."""
    return f"{observed(evidence).get('victim')} did not end by SIGKILL"


def went(path: list[str]) -> str:
    """A status path as a ``why`` says it: ``new -> running -> crashed``."""
    return " -> ".join(path) or "(no status seen)"


def facts(evidence: dict[str, Any], *names: str) -> dict[str, Any]:
    """The named facts, in the order named: the general ones (``GENERAL``) read from the
    evidence of its ``execution``, any other from what the run observed."""
    seen, execution = observed(evidence), evidence.get("execution")
    return {
        name: GENERAL[name](evidence, execution) if name in GENERAL else seen.get(name)
        for name in names
    }


# The facts most probes give of their execution: its status path and final status, the
# provider's commits, how often a worker started it, how many rows the workflow has.
RUN_FACTS = ("execution", "status_path", "final_status", "commits", "worker_starts", "executions")

# How much of what happened a ``why`` counts (``tally``), each fact's unit.
UNITS = {
    "commits": "commit(s)",
    "attempts": "attempt(s)",
    "worker_starts": "worker start(s)",
    "worker_finishes": "worker finish(es)",
    "executions": "execution row(s)",
}


def tally(facts: dict[str, Any], *names: str) -> str:
    """``2 commit(s), 1 worker start(s)``: the named counts of ``facts``, in that order."""
    return ", ".join(f"{facts[name]} {UNITS[name]}" for name in names)


def course(facts: dict[str, Any], *counts: str) -> str:
    """``execution 7 went new -> success; 1 commit(s)``: a run as ``why``s tell it (``tally``)."""
    went_by = f"execution {facts['execution']} went {went(facts['status_path'])}"
    return f"{went_by}; {tally(facts, *counts)}" if counts else went_by


def count_word(n: int) -> str:
    return COUNTS[min(n, 3)]


def times(n: int) -> str:
    return TIMES[min(n, 2)]


def charge_ran(commits: int) -> str:
    return CHARGE_RAN[min(commits, 2)]


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


GENERAL: dict[str, Callable[[dict[str, Any], Any], Any]] = {
    "execution": lambda evidence, execution: execution,
    "status_path": status_path,
    "final_status": final_status,
    "commits": lambda evidence, _: commit_count(evidence),
    "attempts": lambda evidence, _: attempt_count(evidence),
    "executions": lambda evidence, _: len(rows(evidence)),
    "sender": lambda evidence, _: sender_seen(evidence.get("sender")),
    "sender_error": lambda evidence, _: (evidence.get("sender") or {}).get("error"),
}
