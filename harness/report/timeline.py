"""Internal: A case's timeline from its saved evidence: what happened, on which lane, when.

``events(doc)`` turns an ``evidence.json`` (see ``harness.engine.runner._finish``) into a list of
events in seconds from the case's start, one lane per actor:

    phase     the runner's phases (prepare, deliver, strike, heal, settle, ...)
    sender    every attempt of the event's sender, with its outcome (ok / fail / info)
    journal   what the harness did or saw: fault inject/heal, crash point target, findings
    requests  every request of n8n's processes that the intercepting proxy saw (reads and
              lookups included; cases that shared the stack add theirs), with its answer
    provider  the provider's attempts for the key (with their outcome) and its commits
    n8n       the executions the case caused, from start to stop, with their status

Both the terminal (``n8n-chaos show``) and the report draw from it; it reads plain JSON and
tolerates evidence cut short by a harness that died mid-case (missing keys are skipped).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

LANES = ("phase", "sender", "journal", "requests", "provider", "n8n")

# Journal data fields too long or too internal for a one-line label.
_SKIPPED_DATA = frozenset({"body", "message", "note"})


@dataclass(frozen=True)
class TimelineEvent:
    at: float  # seconds from the case's start
    lane: str  # one of LANES
    label: str
    outcome: str | None = None  # ok / fail / info, committed, success, error, ...
    until: float | None = None  # the end of an interval (seconds from the start), if any

    @property
    def duration(self) -> float | None:
        return None if self.until is None else self.until - self.at


@dataclass(frozen=True)
class Window:
    """A fault's window: injected at ``start``, healed at ``end`` (None: never healed)."""

    fault: str
    start: float
    end: float | None


def case_start(doc: Mapping[str, Any]) -> float:
    """The wall-clock time the case started (the zero of its timeline)."""
    starts = [float(doc["started_at"])] if doc.get("started_at") is not None else []
    starts += [float(p["started_at"]) for p in doc.get("phases") or [] if p.get("started_at")]
    return min(starts) if starts else 0.0


def events(doc: Mapping[str, Any]) -> list[TimelineEvent]:
    """Every event of one case's evidence, ordered by time (then by lane)."""
    zero = case_start(doc)
    found = [
        *_phases(doc, zero),
        *_sender(doc, zero),
        *_journal(doc, zero),
        *_requests(doc, zero),
        *_provider(doc, zero),
        *_executions(doc, zero),
    ]
    return sorted(found, key=lambda e: (e.at, LANES.index(e.lane)))


def fault_windows(doc: Mapping[str, Any]) -> list[Window]:
    """Each ``fault.inject`` paired with the next ``fault.heal`` of the same fault."""
    zero = case_start(doc)
    windows: list[Window] = []
    open_at: dict[str, float] = {}
    for entry in sorted(doc.get("journal") or [], key=lambda j: float(j["at"])):
        what, at = str(entry.get("what")), float(entry["at"]) - zero
        if entry.get("kind") == "fault.inject":
            open_at.setdefault(what, at)
        elif entry.get("kind") == "fault.heal" and what in open_at:
            windows.append(Window(what, open_at.pop(what), at))
    windows += [Window(what, start, None) for what, start in open_at.items()]
    return sorted(windows, key=lambda w: w.start)


def _phases(doc: Mapping[str, Any], zero: float) -> Iterable[TimelineEvent]:
    for phase in doc.get("phases") or []:
        ended = phase.get("ended_at")
        yield TimelineEvent(
            float(phase["started_at"]) - zero,
            "phase",
            str(phase["name"]),
            None if ended is not None else "unfinished",
            None if ended is None else float(ended) - zero,
        )


def _sender(doc: Mapping[str, Any], zero: float) -> Iterable[TimelineEvent]:
    for attempt in doc.get("history") or []:
        status = attempt.get("status")
        answer = f"HTTP {status}" if status is not None else _first_words(attempt.get("detail"))
        yield TimelineEvent(
            float(attempt["started_at"]) - zero,
            "sender",
            f"{attempt.get('delivery', '?')} #{attempt.get('number', '?')}: {answer}",
            str(attempt.get("outcome")),
            float(attempt["ended_at"]) - zero if attempt.get("ended_at") else None,
        )


def _journal(doc: Mapping[str, Any], zero: float) -> Iterable[TimelineEvent]:
    for entry in doc.get("journal") or []:
        data = entry.get("data") or {}
        details = ", ".join(f"{k}={_short(v)}" for k, v in data.items() if k not in _SKIPPED_DATA)
        label = f"{entry.get('kind')} {entry.get('what')}" + (f" ({details})" if details else "")
        yield TimelineEvent(float(entry["at"]) - zero, "journal", label)


def _requests(doc: Mapping[str, Any], zero: float) -> Iterable[TimelineEvent]:
    for seen in doc.get("intercepted") or []:
        if seen.get("time") is None or seen.get("outcome") == "loopback":
            continue
        label = f"{seen.get('method')} {seen.get('host')}{seen.get('path')}"
        answer = f"HTTP {seen['status']}" if seen.get("status") is not None else "no answer"
        label += f" -> {answer} (by {seen.get('listener')})"
        yield TimelineEvent(float(seen["time"]) - zero, "requests", label, seen.get("outcome"))


def _provider(doc: Mapping[str, Any], zero: float) -> Iterable[TimelineEvent]:
    for attempt in doc.get("provider_attempts") or []:
        if attempt.get("received_at") is None:
            continue
        key = attempt.get("idempotency_key")
        label = f"attempt {attempt.get('attempt_no', '?')} {attempt.get('effect', '')}".rstrip()
        label += f" key={key}" if key else " (no idempotency key)"
        if attempt.get("http_status") is not None:
            label += f" -> HTTP {attempt['http_status']}"
        label += _read_from(attempt)
        if attempt.get("preview"):
            label += f" body {attempt['preview']}"
        yield _span(attempt, ("received_at", "finished_at"), zero, "provider", label, "outcome")
    evidence = doc.get("evidence") or {}
    by_effect = {a.get("effect_id"): a for a in doc.get("provider_attempts") or []}
    for stray, commits in ((False, evidence.get("commits")), (True, evidence.get("stray_commits"))):
        for commit in commits or []:
            label = f"commit {commit.get('effect_id')} ({commit.get('effect', 'charge')})"
            if stray:  # another reference or effect kind: say which, and where it was read
                label = f"stray {label[:-1]}, ref {commit.get('reference')!r})"
                note = (by_effect.get(commit.get("effect_id")) or {}).get("reference_note")
                label += f" read from {note}" if note else ""
            yield TimelineEvent(
                float(commit["committed_at"]) - zero,
                "provider",
                label,
                "stray" if stray else "committed",
            )


def _read_from(attempt: Mapping[str, Any]) -> str:
    """`` ref 'ord-1' from json /order/id``, or where an empty one was looked for and what
    was there (an upstream fake's attempt; the bundled API's carry no note)."""
    note = attempt.get("reference_note")
    if not note:
        return ""
    return f" ref {attempt.get('reference') or ''!r} from {note}"


def _executions(doc: Mapping[str, Any], zero: float) -> Iterable[TimelineEvent]:
    for row in doc.get("executions") or []:
        if row.get("started_at") is None:
            continue
        label = f"execution {row.get('id')} ({row.get('mode')})"
        if row.get("workflow"):
            label += f" of {row['workflow']!r}"
        if row.get("retry_of"):
            label += f" retry of {row['retry_of']}"
        yield _span(row, ("started_at", "stopped_at"), zero, "n8n", label, "status")


def _span(
    row: Mapping[str, Any], times: tuple[str, str], zero: float, lane: str, label: str, state: str
) -> TimelineEvent:
    """An event from ``row[start]`` to ``row[end]`` (open-ended while ``end`` is missing),
    its state read from ``row[state]``."""
    start, end = times
    ended = row.get(end)
    return TimelineEvent(
        float(row[start]) - zero,
        lane,
        label,
        str(row.get(state)),
        None if ended is None else float(ended) - zero,
    )


def _first_words(detail: Any, limit: int = 60) -> str:
    text = str(detail or "no answer").splitlines()[0] if detail else "no answer"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _short(value: Any, limit: int = 40) -> str:
    if isinstance(value, float):
        return f"{value:.2f}"
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render(items: Iterable[TimelineEvent]) -> list[str]:
    """Plain text lines: ``  +12.345 s  lane      label  [outcome]  (lasted 1.2 s)``."""
    lines = []
    for e in items:
        line = f"{e.at:+9.3f} s  {e.lane:<8}  {e.label}"
        if e.outcome:
            line += f"  [{e.outcome}]"
        if e.duration is not None:
            line += f"  ({e.duration:.2f} s, until {e.until:+.3f})"
        lines.append(line)
    return lines
