"""Internal: The fault journal: what the harness did to the stack, and when (wall clock and
monotonic).

Faults and crash points write here; the oracle reads it to decide whether the fault landed
in its window. Nothing else is shared between the two sides.
"""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any


def since(origin: float | None, moment: float | None) -> str:
    """How long after a fact's first moment (printed as epoch seconds, to line up with the
    logs) a later one came: "0.132 s", for "... 0.132 s later"; the gaps read at a glance."""
    if origin is None or moment is None:
        return "an unknown time"
    return f"{moment - origin:.3f} s"


@dataclass(frozen=True)
class JournalEntry:
    at: float  # time.time(), to line up with provider and n8n timestamps
    kind: str  # e.g. "fault.inject", "fault.heal", "crashpoint.reached", "crashpoint.landed"
    what: str
    data: dict[str, Any] = field(default_factory=dict)


class Journal:
    def __init__(self) -> None:
        self._entries: list[JournalEntry] = []
        self._lock = threading.Lock()

    def record(self, kind: str, what: str, **data: Any) -> JournalEntry:
        entry = JournalEntry(at=time.time(), kind=kind, what=what, data=data)
        with self._lock:
            self._entries.append(entry)
        return entry

    @property
    def entries(self) -> list[JournalEntry]:
        with self._lock:
            return list(self._entries)

    def has(self, kind: str, what: str | None = None) -> bool:
        return any(e.kind == kind and (what is None or e.what == what) for e in self.entries)

    def to_json(self) -> list[dict[str, Any]]:
        return [asdict(e) for e in self.entries]
