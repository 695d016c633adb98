"""The matrix against its physical limit: how much of a run's wall time the cases' own waits
on n8n explain, and how far the wall is from the bound those waits set.

    python bench/irreducible.py                          # the latest run
    python bench/irreducible.py /var/tmp/n8n-chaos-ci/runs/<invocation>

From every case's evidence.json (its ``phases``):
- waits: the phases in which the case waits on n8n or on its fault's own time (the strike
  window, the answer, the heal, the quiet period, later deliveries, the reconciler): what
  n8n itself takes at the stack's timing settings, which no scheduling removes;
- own: the harness's own seconds inside a case (prepare, send, collect the evidence);
- outside cases: what the stacks spent between cases (start-up, deploy, reset, pytest),
  the stacks' wall times summed minus the case seconds.
The bound on N stacks is max(the longest case, case seconds / N): the wall no scheduling of
these cases can beat with N stacks. Writes bench/results/irreducible.json.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from _common import table, write_result
from case_cost import evidence_files

from harness.stack.run import default_runs_root

WAITS = ("strike", "await answer", "await fault", "heal", "settle", "later deliveries", "reconcile")
OWN = ("prepare", "collect")
STACK_COUNTS = (1, 2, 4, 6, 8, 12)


def seconds(phases: list[dict[str, Any]], names: tuple[str, ...]) -> float:
    return sum(p["ended_at"] - p["started_at"] for p in phases if p["name"] in names)


def measure(run_dir: Path) -> dict[str, Any]:
    cases = []
    for path in evidence_files(run_dir):
        doc = json.loads(path.read_text())
        phases = [p for p in doc.get("phases") or [] if p.get("ended_at") is not None]
        if not phases or not doc.get("ended_at"):
            continue
        deliver = seconds(phases, ("deliver",)) - seconds(phases, ("strike",))
        cases.append(
            {
                "case": doc.get("case"),
                "stack": path.parent.parent.parent.name,
                "started_at": doc["started_at"],
                "ended_at": doc["ended_at"],
                "total": doc["ended_at"] - doc["started_at"],
                "waits": seconds(phases, WAITS),
                "own": seconds(phases, OWN) + max(deliver, 0.0),
            }
        )
    if not cases:
        sys.exit(f"no evidence.json with phases under {run_dir}")
    stacks = sorted({c["stack"] for c in cases})
    wall = max(c["ended_at"] for c in cases) - min(c["started_at"] for c in cases)
    total = sum(c["total"] for c in cases)
    longest = max(cases, key=lambda c: c["total"])
    busy = sum(
        max(c["ended_at"] for c in cases if c["stack"] == s)
        - min(c["started_at"] for c in cases if c["stack"] == s)
        for s in stacks
    )
    return {
        "run_dir": str(run_dir),
        "cases": len(cases),
        "stacks": stacks,
        "wall_s": round(wall, 1),
        "case_s": round(total, 1),
        "waits_s": round(sum(c["waits"] for c in cases), 1),
        "own_s": round(sum(c["own"] for c in cases), 1),
        "outside_cases_s": round(max(busy - total, 0.0), 1),
        "longest": {"case": longest["case"], "s": round(longest["total"], 1)},
        "bound_s": {n: round(max(longest["total"], total / n), 1) for n in STACK_COUNTS},
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("run_dir", nargs="?", type=Path, default=None)
    args = parser.parse_args()
    run_dir = (args.run_dir or default_runs_root() / "latest").resolve()
    found = measure(run_dir)
    n = len([s for s in found["stacks"] if not s.endswith("-webhook")])  # xdist workers
    print(f"{run_dir}: {found['cases']} cases on {n} stacks ({', '.join(found['stacks'])})")
    print(
        table(
            ["wall", "case seconds", "of which waits on n8n", "harness's own", "outside cases"],
            [
                (
                    found["wall_s"],
                    found["case_s"],
                    found["waits_s"],
                    found["own_s"],
                    found["outside_cases_s"],
                )
            ],
        )
    )
    print(f"longest case: {found['longest']['case']} ({found['longest']['s']:.1f} s)")
    ratio = {n: f"{found['wall_s'] / found['bound_s'][n]:.2f}x"} if n in found["bound_s"] else {}
    rows = [(k, v, ratio.get(k, "")) for k, v in found["bound_s"].items()]
    print(table(["stacks", "bound s", "this run's wall / bound"], rows))
    print(f"written: {write_result('irreducible', found)}")


if __name__ == "__main__":
    main()
