"""Where the CPU goes while a command runs: every process's CPU seconds (user + system, read
from /proc every second, dead processes counted up to their last reading), summed by the part
of the stack it is, against the machine's CPU seconds in the same span.

    python bench/cpu_by_part.py -- python3 -m harness run --no-attach -k payment_idempotent
    python bench/cpu_by_part.py --label ci -- bash .ci/run

On two cores a run is CPU-bound long before it is bound by n8n's waits: this says which part
to make cheaper. Writes bench/results/cpu_by_part.json (one entry per label).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time
from collections import Counter
from pathlib import Path

from _common import table, write_entry

TICK = os.sysconf("SC_CLK_TCK")
# (part, a substring of the command line), first match wins.
PARTS = (
    ("n8n worker", "n8n worker"),
    ("n8n main", "n8n start"),
    ("n8n webhook", "n8n webhook"),
    ("n8n task runner", "task-runner"),
    ("postgres", "postgres"),
    ("redis", "redis-server"),
    ("toxiproxy", "toxiproxy-server"),
    ("intercepting proxy", "mitmdump"),
    ("intercepting proxy", "mitmproxy"),
    ("fake providers", "fake_providers"),
    ("docker", "docker"),
    ("docker", "containerd"),
    ("harness (python)", "python"),
    ("node (other)", "node"),
)


def part_of(cmdline: str) -> str:
    return next((part for part, needle in PARTS if needle in cmdline), "other")


def machine_cpu_s() -> float:
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    busy = sum(
        int(v) for i, v in enumerate(fields) if i not in (3, 4, 8, 9)
    )  # not idle, iowait; guest is in user
    return busy / TICK


def snapshot() -> dict[int, tuple[str, float]]:
    """pid -> (part, CPU seconds so far)."""
    seen = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        # A process that is exiting (a killed worker, a zombie) has an empty command line: ""
        # here, and the part it was seen as before is kept (see ``merge``).
        part = part_of(cmdline) if cmdline.strip() else ""
        seen[int(entry.name)] = (part, (int(fields[11]) + int(fields[12])) / TICK)
    return seen


def cpu_of(pids: set[int]) -> Counter[str]:
    """CPU seconds so far of these processes, by part."""
    by_part: Counter[str] = Counter()
    for pid, (part, cpu) in snapshot().items():
        if pid in pids:
            by_part[part] += cpu
    return by_part


def merge(last: dict[int, tuple[str, float]], now: dict[int, tuple[str, float]]) -> None:
    """Fold a snapshot into ``last``: a pid keeps the part it was first seen as, so a process's
    CPU at its death (its final reading, with its command line gone) stays with its part.
    Before this, n8n processes that died in a case (killed workers, stopped stacks) were
    counted as "other": a fifth of a CI run's CPU."""
    for pid, (part, cpu) in now.items():
        known = last.get(pid, ("", 0.0))[0]
        last[pid] = (known or part or "other", cpu)


def measure(command: list[str]) -> dict[str, object]:
    before = snapshot()
    machine_before, started = machine_cpu_s(), time.monotonic()
    last: dict[int, tuple[str, float]] = {}
    proc = subprocess.Popen(command)
    while proc.poll() is None:
        merge(last, snapshot())
        time.sleep(1.0)  # a sampling period, not a wait for anything
    merge(last, snapshot())
    by_part: dict[str, float] = {}
    for pid, (part, cpu) in last.items():
        base = before.get(pid, (part, 0.0))[1]  # running before the command: only the growth
        by_part[part] = by_part.get(part, 0.0) + max(0.0, cpu - base)
    return {
        "command": command,
        "exit": proc.returncode,
        "wall_s": round(time.monotonic() - started, 1),
        "machine_cpu_s": round(machine_cpu_s() - machine_before, 1),
        "cores": os.cpu_count(),
        "by_part": {k: round(v, 1) for k, v in sorted(by_part.items(), key=lambda kv: -kv[1])},
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--label", default="run", help="the entry's name in the results")
    parser.add_argument("command", nargs="+", help="the command, after --")
    args = parser.parse_args()
    result = measure(args.command)
    total = float(result["machine_cpu_s"])  # type: ignore[arg-type]
    by_part: dict[str, float] = result["by_part"]  # type: ignore[assignment]
    rows = [(part, cpu, f"{cpu / total:.0%}" if total else "-") for part, cpu in by_part.items()]
    print(f"wall {result['wall_s']} s, machine CPU {total} s of {result['cores']} cores")
    print(table(["part", "CPU s", "of the machine's"], rows))
    print(f"written: {write_entry('cpu_by_part', 'runs', args.label, result)}")


if __name__ == "__main__":
    main()
