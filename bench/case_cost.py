"""Where each second of a case goes: median per scenario over its runs, split by phase, from
the ``phases`` every case's evidence.json records ({"name", "started_at", "ended_at"}).

    python bench/case_cost.py                          # the latest run's cases
    python bench/case_cost.py .n8n-chaos/runs/<run>    # a given run (or invocation) folder
    python bench/case_cost.py --run -k "payment_idempotent and worker_kill" --repeat 5
                                                       # run those cases 5 times first

A scenario is ``<delivery>-<fault>-<crash point>`` (the workflow and the -rN repeat left
out). Writes bench/results/case_cost.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from _common import load, table, write_result

from harness.stack.run import default_runs_root


def evidence_files(run_dir: Path) -> list[Path]:
    seen: dict[Path, Path] = {}
    for path in run_dir.rglob("evidence.json"):
        seen.setdefault(path.resolve(), path)  # <invocation>/cases/* links to gwN/cases/*
    return sorted(seen)


def scenario(doc: dict[str, Any]) -> str:
    parts = [str(doc.get(k)) for k in ("delivery", "fault", "crashpoint") if doc.get(k)]
    return "-".join(parts) or str(doc.get("case"))


def summarize(run_dir: Path) -> dict[str, Any]:
    per: dict[str, list[dict[str, float]]] = defaultdict(list)
    for path in evidence_files(run_dir):
        doc = json.loads(path.read_text())
        phases = doc.get("phases") or []
        if not phases or not doc.get("ended_at"):
            continue
        split = {
            p["name"]: p["ended_at"] - p["started_at"]
            for p in phases
            if p.get("ended_at") is not None
        }
        split["total"] = doc["ended_at"] - doc["started_at"]
        per[scenario(doc)].append(split)
    out: dict[str, Any] = {}
    for name, runs in sorted(per.items()):
        names = sorted({k for r in runs for k in r})
        out[name] = {
            "runs": len(runs),
            "median_s": {
                k: round(statistics.median(r.get(k, 0.0) for r in runs), 2) for k in names
            },
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("run_dir", nargs="?", type=Path, default=None)
    parser.add_argument("--run", action="store_true", help="run the cases first")
    parser.add_argument("-k", dest="keyword", default=None, help="which cases (with --run)")
    parser.add_argument("--repeat", type=int, default=5, help="runs per case (with --run)")
    args = parser.parse_args()

    load_before = load()
    run_dir = args.run_dir
    if args.run:
        runs = Path(tempfile.mkdtemp(prefix="n8n-chaos-bench-cases-"))
        argv = [sys.executable, "-m", "harness", "run", "--alluredir", str(runs / "allure")]
        argv += ["--repeat", str(args.repeat)] + (["-k", args.keyword] if args.keyword else [])
        started = time.monotonic()
        subprocess.run(argv, env={**os.environ, "N8N_CHAOS_RUNS": str(runs)}, check=False)
        print(f"ran in {time.monotonic() - started:.0f} s")
        run_dir = runs / "latest"
    run_dir = (run_dir or default_runs_root() / "latest").resolve()
    summary = summarize(run_dir)
    if not summary:
        sys.exit(f"no evidence.json with phases under {run_dir}")
    phases = ["prepare", "deliver", "await fault", "heal", "settle", "later deliveries", "collect"]
    extra = sorted({k for s in summary.values() for k in s["median_s"]} - {*phases, "total"})
    columns = [p for p in phases if any(p in s["median_s"] for s in summary.values())] + extra
    rows = [
        (name, s["runs"], s["median_s"]["total"], *(s["median_s"].get(c, 0.0) for c in columns))
        for name, s in summary.items()
    ]
    print(f"{run_dir} (median seconds per scenario; load {load_before}/{load()})")
    print(table(["scenario", "runs", "total", *columns], rows))
    path = write_result(
        "case_cost",
        {
            "run_dir": str(run_dir),
            "load_before": load_before,
            "load_after": load(),
            "scenarios": summary,
        },
    )
    print(f"written: {path}")


if __name__ == "__main__":
    main()
