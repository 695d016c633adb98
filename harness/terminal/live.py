"""The live line: every case in progress with its phase and how long it has run.

Drawn with rich's ``Live`` on the real terminal only (a duplicate of the terminal's file
descriptor, so pytest's output capture during a test does not swallow it). Phases come from
the runner's observers in this process, or, under pytest-xdist where the cases run in worker
processes, from each case's ``evidence.json``, which the runner rewrites at every phase.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.text import Text

PHASE_POLL_S = 1.0  # how often a worker's evidence file is read for its phase


@dataclass
class InProgress:
    case_id: str
    started: float  # time.monotonic() at the case's start
    phases: list[tuple[str, float]] = field(default_factory=list)  # (name, time.time())


PhaseLookup = Callable[[str], tuple[str, float] | None]


class PhaseFromEvidence:
    """The innermost open phase of a case, from ``<invocation>/*/cases/<id>/evidence.json``
    (read at most once a second per case)."""

    def __init__(self, invocation: Path) -> None:
        self.invocation = invocation
        self._seen: dict[str, tuple[float, tuple[str, float] | None]] = {}

    def __call__(self, case_id: str) -> tuple[str, float] | None:
        now = time.monotonic()
        cached = self._seen.get(case_id)
        if cached is not None and now - cached[0] < PHASE_POLL_S:
            return cached[1]
        found = None
        for path in self.invocation.glob(f"*/cases/{case_id}/evidence.json"):
            found = open_phase(path)
        self._seen[case_id] = (now, found)
        return found


def open_phase(path: Path) -> tuple[str, float] | None:
    try:
        phases = json.loads(path.read_text()).get("phases") or []
    except (OSError, ValueError):
        return None  # a file being replaced, or not written yet: next poll
    open_ones = [p for p in phases if p.get("ended_at") is None]
    return (str(open_ones[-1]["name"]), float(open_ones[-1]["started_at"])) if open_ones else None


class LiveLine:
    """The cases in progress (``start``/``phase``/``end``) and the lines of ended cases
    (``print``), on one console; ``enabled=False`` keeps the bookkeeping but draws nothing."""

    def __init__(self, console: Console | None, lookup: PhaseLookup | None = None) -> None:
        self.console = console
        self.lookup = lookup
        self.done = 0
        self.total: int | None = None
        self._cases: dict[str, InProgress] = {}
        self._lock = threading.Lock()
        self._live: Live | None = None

    def start(self, key: str, case_id: str) -> None:
        with self._lock:
            self._cases[key] = InProgress(case_id, time.monotonic())
        if self._live is None and self.console is not None:
            self._live = Live(
                get_renderable=self.renderable,
                console=self.console,
                refresh_per_second=2,
                transient=True,
            )
            self._live.start()

    def end(self, key: str) -> None:
        with self._lock:
            if self._cases.pop(key, None) is not None:
                self.done += 1

    @contextmanager
    def phase(self, case_id: str, name: str) -> Iterator[None]:
        """A ``PhaseObserver`` for cases run in this process."""
        with self._lock:
            found = [c for c in self._cases.values() if c.case_id == case_id]
            entry = (name, time.time())
            for case in found:
                case.phases.append(entry)
        try:
            yield
        finally:
            with self._lock:
                for case in found:
                    if entry in case.phases:
                        case.phases.remove(entry)  # back to the enclosing phase

    def print(self, line: RenderableType) -> None:
        if self.console is not None:
            self.console.print(line, no_wrap=True, overflow="ellipsis", crop=True)

    def stop(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def renderable(self) -> RenderableType:
        with self._lock:
            cases = list(self._cases.values())
        now = time.monotonic()
        progress = f"{self.done}/{self.total}" if self.total else str(self.done)
        state = f"{len(cases)} running" if cases else "waiting (a stack starting or stopping)"
        lines = [Text(f"n8n-chaos: {progress} cases done, {state}", style="dim")]
        for case in sorted(cases, key=lambda c: c.started):
            line = Text("  ")
            line.append(case.case_id, style="bold")
            phase = case.phases[-1] if case.phases else None
            if phase is None and self.lookup is not None:
                phase = self.lookup(case.case_id)
            if phase is None:
                line.append("  setting up", style="yellow")
            else:
                line.append(f"  {phase[0]}", style="yellow")
                line.append(f" {max(0.0, time.time() - phase[1]):.0f} s")
            line.append(f"  (case {now - case.started:.0f} s)", style="dim")
            lines.append(line)
        return Group(*lines)


def tty_console(fileno: int) -> tuple[Console, IO[str]]:
    """A console on a duplicate of ``fileno`` (pytest redirects fd 1 while a test runs)."""
    import os

    stream = os.fdopen(os.dup(fileno), "w", buffering=1)
    return Console(file=stream, force_terminal=True, highlight=False, soft_wrap=False), stream
