"""`up` to ready: each part's own start, and the whole, for a fresh n8n database (migrated
at start, main before the workers) and for one copied from the migrated template (main and
workers together); interleaved, so both see the same load on a shared machine.

    python bench/stack_up.py                 # 3 bring-ups of each kind
    python bench/stack_up.py --runs 5 --cold # also the first bring-up of all, which makes
                                             # the template (in a scratch cache)

"n8n boot" is the time n8n's own processes took to get ready (main, then workers for a
fresh database; the slowest of them when they start together); harness/n8n is the whole
`up` over it. Writes bench/results/stack_up.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import load, table, write_result

from harness.stack.install import DEFAULT_N8N_VERSION, Installation, Installer
from harness.stack.stack import Stack, StackConfig


def bring_up(inst: Installation, config: StackConfig, mode: str) -> dict[str, Any]:
    before = load()
    started = time.monotonic()
    stack = Stack.start(inst, config)
    wall = time.monotonic() - started
    try:
        timings = dict(stack.timings)
    finally:
        stack.stop()
    workers = [v for k, v in timings.items() if k.startswith(("worker", "webhook"))]
    if mode == "fresh":
        n8n_boot = timings["main"] + max(workers)
    else:
        n8n_boot = max([timings["main"], *workers])
    return {
        "mode": mode,
        "up_s": round(wall, 2),
        "main_s": round(timings["main"], 2),
        "slowest_worker_s": round(max(workers), 2),
        "n8n_boot_s": round(n8n_boot, 2),
        "harness_over_n8n": round(wall / n8n_boot, 2),
        "template_made_s": round(timings.get("template made (once)", 0.0), 2),
        "load_before": before,
        "load_after": load(),
        "timings_s": {k: round(v, 2) for k, v in timings.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=3, help="bring-ups of each kind")
    parser.add_argument("--cold", action="store_true", help="also make the template from nothing")
    parser.add_argument("--n8n-version", default=DEFAULT_N8N_VERSION)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    started = time.monotonic()
    inst = Installer(n8n_version=args.n8n_version).install()
    install_s = time.monotonic() - started
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="n8n-chaos-bench-runs-") as runs:
        base = StackConfig(workers=args.workers, n8n_version=args.n8n_version, runs_root=Path(runs))
        if args.cold:
            scratch = Path(tempfile.mkdtemp(prefix="n8n-chaos-bench-cache-", dir="/var/tmp"))
            scratch.chmod(0o755)
            try:
                cold_inst = dataclasses.replace(inst, cache_dir=scratch)
                results.append(bring_up(cold_inst, base, "cold: template made first"))
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
        for _ in range(args.runs):
            results.append(bring_up(inst, dataclasses.replace(base, db_template=False), "fresh"))
            results.append(bring_up(inst, base, "template"))

    rows = [
        (
            r["mode"],
            r["up_s"],
            r["main_s"],
            r["slowest_worker_s"],
            r["n8n_boot_s"],
            r["harness_over_n8n"],
            f"{r['load_before']}/{r['load_after']}",
        )
        for r in results
    ]
    print(f"n8n {args.n8n_version}, {args.workers} workers; install (cached) {install_s:.2f} s")
    print(
        table(
            ["bring-up", "up s", "main s", "worker s", "n8n boot s", "harness/n8n", "load"],
            rows,
        )
    )
    summary = {}
    for mode in ("fresh", "template"):
        ups = [r["up_s"] for r in results if r["mode"] == mode]
        mains = [r["main_s"] for r in results if r["mode"] == mode]
        summary[mode] = {
            "up_median_s": statistics.median(ups),
            "main_median_s": statistics.median(mains),
        }
        up, main_ = statistics.median(ups), statistics.median(mains)
        print(f"median {mode:8}: up {up:.1f} s, main {main_:.1f} s")
    path = write_result(
        "stack_up",
        {
            "n8n_version": args.n8n_version,
            "workers": args.workers,
            "install_cached_s": round(install_s, 2),
            "summary": summary,
            "runs": results,
        },
    )
    print(f"written: {path}")


if __name__ == "__main__":
    main()
