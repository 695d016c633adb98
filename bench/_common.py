"""What every bench shares: the machine's load next to each figure, the process tree's
memory, a small table on stdout and a JSON file under bench/results/.

This machine is shared (other users run stacks on it too): every figure carries the 1-minute
load average before and after it, so a figure taken under load reads as such.
"""

from __future__ import annotations

import json
import os
import platform
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def load() -> float:
    """The 1-minute load average."""
    return round(os.getloadavg()[0], 2)


def machine() -> dict[str, Any]:
    mem_kb = 0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            mem_kb = int(line.split()[1])
    return {
        "cpus": os.cpu_count(),
        "memory_gb": round(mem_kb / 1024 / 1024, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "note": "shared machine: other users' stacks ran meanwhile; see load_before/after",
    }


def write_result(name: str, data: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    doc = {"bench": name, "at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "machine": machine()}
    path.write_text(json.dumps({**doc, **data}, indent=2) + "\n")
    return path


def write_entry(name: str, group: str, key: str, entry: dict[str, Any]) -> Path:
    """Write one entry of a result file that keeps one per key (a label, a comparison): the
    other keys' entries stay as an earlier run wrote them."""
    path = RESULTS / f"{name}.json"
    entries = json.loads(path.read_text()).get(group, {}) if path.is_file() else {}
    entries[key] = entry
    return write_result(name, {group: entries})


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(h) for h in headers], *[[_fmt(c) for c in row] for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value)


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def descendants(roots: Iterable[int]) -> set[int]:
    """The processes and all their descendants (an n8n process's task runner with it)."""
    tree = _children()
    found, todo = set(), list(roots)
    while todo:
        pid = todo.pop()
        found.add(pid)
        todo += tree.get(pid, [])
    return found


def tree_rss_mb(root: int) -> float:
    """Resident memory of a process and all its descendants, in MB."""
    total_kb = 0
    for pid in descendants([root]):
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total_kb += int(line.split()[1])
        except OSError:
            continue
    return total_kb / 1024


class PeakMemory:
    """Samples a process tree's resident memory once a second; ``peak_mb`` is the max."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.peak_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            self.peak_mb = max(self.peak_mb, tree_rss_mb(self.root))
