"""Wall time of part of the crash matrix: serial, N stacks side by side (pytest-xdist), and
N shards (run one after another here; on CI each is its own machine, so the simulated wall
time is the slowest shard).

    python bench/matrix.py -k "payment_idempotent and (worker_kill or no_fault)"
    python bench/matrix.py -k "payment_naive" --jobs 1 2 3 --shards 2

Each configuration starts its own stacks (bring-up included in its wall time); peak memory
is the resident memory of the whole process tree (pytest, its workers, every stack).
Writes bench/results/matrix.json.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import PeakMemory, load, table, write_result

import harness.front.suite


def pytest_run(keyword: str, extra: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    runs = Path(tempfile.mkdtemp(prefix="n8n-chaos-bench-matrix-"))
    argv = [sys.executable, "-m", "pytest", harness.front.suite.__file__, "-p", "no:cacheprovider"]
    argv += ["-q", "-k", keyword, *extra]
    before = load()
    started = time.monotonic()
    proc = subprocess.Popen(
        argv,
        env={**os.environ, **(env or {}), "N8N_CHAOS_RUNS": str(runs)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    with PeakMemory(proc.pid) as memory:
        output, _ = proc.communicate()
    wall = time.monotonic() - started
    last = [line for line in output.splitlines() if line.strip()][-1:] or [""]
    counts = {k: int(v) for v, k in re.findall(r"(\d+) (passed|failed|error|deselected)", last[0])}
    return {
        "args": extra,
        "wall_s": round(wall, 1),
        "peak_mb": round(memory.peak_mb),
        "exit": proc.returncode,
        "outcome": last[0].strip("= "),
        "counts": counts,
        "load_before": before,
        "load_after": load(),
        "runs_dir": str(runs),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("-k", dest="keyword", required=True, help="which cases")
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--shards", type=int, default=2, help="0 to skip the shard figure")
    args = parser.parse_args()

    results: list[dict[str, Any]] = []
    for jobs in args.jobs:
        result = pytest_run(args.keyword, ["-n", str(jobs)] if jobs > 1 else [])
        result["config"] = "serial (1 stack)" if jobs == 1 else f"{jobs} stacks (-n {jobs})"
        results.append(result)
        print(f"{result['config']}: {result['wall_s']} s, {result['outcome']}", flush=True)
    if args.shards > 1:
        shard_results = []
        for index in range(1, args.shards + 1):
            shard = pytest_run(args.keyword, [f"--shard={index}/{args.shards}"])
            print(f"shard {index}/{args.shards}: {shard['wall_s']} s, {shard['outcome']}")
            shard_results.append(shard)
        slowest = max(shard_results, key=lambda r: r["wall_s"])
        results.append(
            {
                **slowest,
                "config": f"{args.shards} shards (slowest; CI machines)",
                "shards": shard_results,
                "load_before": min(r["load_before"] for r in shard_results),
                "load_after": max(r["load_after"] for r in shard_results),
            }
        )
    serial = next((r["wall_s"] for r in results if r["config"].startswith("serial")), None)
    rows = [
        (
            r["config"],
            r["wall_s"],
            f"{serial / r['wall_s']:.2f}x" if serial else "-",
            r["peak_mb"],
            r["outcome"],
            f"{r['load_before']}/{r['load_after']}",
        )
        for r in results
    ]
    print(f"cases: -k {args.keyword!r}")
    print(table(["configuration", "wall s", "speed-up", "peak MB", "outcome", "load"], rows))
    path = write_result("matrix", {"keyword": args.keyword, "results": results})
    print(f"written: {path}")


if __name__ == "__main__":
    main()
