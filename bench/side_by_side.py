"""The same selection of the matrix two ways, side by side (``--compare``):

- ``sharing``: cases that share a stack (harness.engine.batch) against every case alone;
- ``spare``: stacks with a spare worker (harness.stack.spare: a killed worker's place is taken
  by one booted ahead) against stacks without (the killed one boots again);

each with its wall time, the span from the first case's start to the last one's end (the
matrix time without the stack's bring-up), the sum of the cases' own seconds, and of those
the seconds spent waiting on n8n and the provider (every phase but prepare and collect: the
waits a case cannot do without, the floor of a run that overlaps nothing), and whether
every case got the same verdict both ways.

    python bench/side_by_side.py -k "payment_idempotent and (no_fault or provider or response_drop)"
    python bench/side_by_side.py -k "payment_idempotent" --jobs 1 2
    python bench/side_by_side.py --compare spare -k "worker_kill and payment"

Each run starts its own stacks (`n8n-chaos run --no-attach`). Writes
bench/results/shared_stack.json (sharing) or spare_worker.json (spare).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import PeakMemory, load, table, write_result

OWN_PHASES = frozenset({"prepare", "collect"})  # the harness's own work, not a wait
BENCH = str(Path(__file__).resolve().parent)
# bench/_config_plugin.py, loaded by the run's pytest, replaces the stack config's fields.
NO_SPARE = {
    "PYTHONPATH": ":".join(p for p in (BENCH, os.environ.get("PYTHONPATH")) if p),
    "PYTEST_ADDOPTS": f"{os.environ.get('PYTEST_ADDOPTS', '')} -p _config_plugin".strip(),
    "N8N_CHAOS_BENCH_CONFIG": json.dumps({"spare_worker": False}),
}
# --compare: (the result file, its two variants: (label, run's extra arguments, environment));
# the first variant of each is the baseline.
Variant = tuple[str, list[str], dict[str, str]]
COMPARISONS: dict[str, tuple[str, tuple[Variant, Variant]]] = {
    "sharing": ("shared_stack", (("alone", ["--alone"], {}), ("shared", [], {}))),
    "spare": ("spare_worker", (("no spare", [], NO_SPARE), ("spare", [], {}))),
}


def run(keyword: str, jobs: int, variant: Variant) -> dict[str, Any]:
    label, extra, env = variant
    runs = Path(tempfile.mkdtemp(prefix="n8n-chaos-bench-side-"))
    argv = [sys.executable, "-m", "harness", "run", "-j", str(jobs), "--no-attach"]
    argv += ["--runs-dir", str(runs), "-k", keyword, *extra]
    before = load()
    started = time.monotonic()
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env={**os.environ, **env}
    )
    with PeakMemory(proc.pid) as memory:
        output, _ = proc.communicate()
    wall = time.monotonic() - started
    cases = _cases(runs)
    starts = [c["started_at"] for c in cases.values()]
    ends = [c["ended_at"] for c in cases.values()]
    return {
        "jobs": jobs,
        "variant": label,
        "wall_s": round(wall, 1),
        "span_s": round(max(ends) - min(starts), 1) if cases else None,
        "case_s": round(sum(c["seconds"] for c in cases.values()), 1),
        "wait_s": round(sum(c["waits"] for c in cases.values()), 1),
        "verdicts": {k: c["verdict"] for k, c in sorted(cases.items())},
        "peak_mb": round(memory.peak_mb),
        "exit": proc.returncode,
        "summary": [line for line in output.splitlines() if " cases: " in line][-1:],
        "load_before": before,
        "load_after": load(),
        "runs_dir": str(runs),
    }


def _cases(runs: Path) -> dict[str, dict[str, Any]]:
    """Each case's evidence (the last try of a case the harness ran again)."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(runs.glob("*/**/cases/*/evidence.json")):
        doc = json.loads(path.read_text())
        if doc.get("ended_at") is None:
            continue
        phases = doc.get("phases") or []
        found[doc["case"]] = {
            "verdict": doc.get("verdict"),
            "started_at": doc["started_at"],
            "ended_at": doc["ended_at"],
            "seconds": doc["ended_at"] - doc["started_at"],
            "waits": sum(
                (p["ended_at"] or doc["ended_at"]) - p["started_at"]
                for p in phases
                if p["name"] not in OWN_PHASES
            ),
        }
    return found


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("-k", dest="keyword", required=True, help="which cases")
    parser.add_argument("--jobs", type=int, nargs="+", default=[1], help="stack counts")
    parser.add_argument("--compare", choices=sorted(COMPARISONS), default="sharing")
    args = parser.parse_args()
    name, variants = COMPARISONS[args.compare]
    results = []
    for jobs in args.jobs:
        for variant in variants:
            result = run(args.keyword, jobs, variant)
            results.append(result)
            print(f"{jobs} stack(s), {variant[0]}: {result['wall_s']} s")
    rows = []
    for r in results:
        base = variants[0][0]
        twin = next(t for t in results if t["jobs"] == r["jobs"] and t["variant"] == base)
        same = r["verdicts"] == twin["verdicts"]
        rows.append(
            (
                r["jobs"],
                r["variant"],
                r["wall_s"],
                r["span_s"],
                r["case_s"],
                r["wait_s"],
                len(r["verdicts"]),
                "-" if r is twin else ("same" if same else "DIFFERENT"),
                r["peak_mb"],
                f"{r['load_before']}/{r['load_after']}",
            )
        )
    print(f"cases: -k {args.keyword!r}")
    headers = ["stacks", args.compare, "wall s", "span s", "sum case s", "sum waits s", "cases"]
    print(table([*headers, "verdicts", "peak MB", "load"], rows))
    path = write_result(name, {"keyword": args.keyword, "results": results})
    print(f"written: {path}")


if __name__ == "__main__":
    main()
