"""What a ready stack costs while no case runs: each part's CPU seconds a minute, for n8n
settings side by side (stacks alternated, so both see the same load on a shared machine).

    python bench/idle_cpu.py                       # N8N_METRICS on against off (the default)
    python bench/idle_cpu.py --seconds 120 --runs 3

A stack of the main job lives for the whole run and most of that time waits: what it burns
idle is paid per stack per minute. Writes bench/results/idle_cpu.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from _common import descendants, load, table, write_result
from cpu_by_part import snapshot

from harness.stack.install import DEFAULT_N8N_VERSION, Installer
from harness.stack.stack import Stack, StackConfig

VARIANTS = {"metrics on": {"N8N_METRICS": "true"}, "metrics off (default)": {}}


def idle_minute(stack: Stack, seconds: float) -> Counter[str]:
    """CPU seconds a minute by part, over ``seconds`` of the stack's own processes."""
    pids = descendants(p.pid for p in stack.processes if p.pid is not None)
    before = snapshot()
    time.sleep(seconds)  # the measured span itself: nothing to wait for
    after = snapshot()
    by_part: Counter[str] = Counter()
    for pid, (part, cpu) in after.items():
        if pid in pids:
            by_part[part] += (cpu - before.get(pid, (part, 0.0))[1]) * 60 / seconds
    return by_part


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=60.0, help="measured span per stack")
    parser.add_argument("--settle", type=float, default=60.0, help="seconds after ready first")
    parser.add_argument("--runs", type=int, default=2, help="stacks of each variant")
    parser.add_argument("--n8n-version", default=DEFAULT_N8N_VERSION)
    args = parser.parse_args()

    inst = Installer(n8n_version=args.n8n_version).install()
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="n8n-chaos-bench-runs-") as runs:
        base = StackConfig(n8n_version=args.n8n_version, runs_root=Path(runs), spare_worker=True)
        for _ in range(args.runs):
            for name, env in VARIANTS.items():
                stack = Stack.start(inst, dataclasses.replace(base, n8n_env=env))
                try:
                    time.sleep(args.settle)  # the spare boots after the stack is ready: let it end
                    load_before = load()
                    by_part = idle_minute(stack, args.seconds)
                finally:
                    stack.stop()
                results.append(
                    {
                        "variant": name,
                        "by_part": {k: round(v, 3) for k, v in by_part.most_common()},
                        "total": round(sum(by_part.values()), 3),
                        "load_before": load_before,
                    }
                )
    parts = sorted({p for r in results for p in r["by_part"]})
    print(f"n8n {args.n8n_version}, 2 workers and a spare; CPU s a minute, idle")
    print(
        table(
            ["variant", *parts, "total", "load"],
            [
                (
                    r["variant"],
                    *(r["by_part"].get(p, 0.0) for p in parts),
                    r["total"],
                    r["load_before"],
                )
                for r in results
            ],
        )
    )
    path = write_result("idle_cpu", {"n8n_version": args.n8n_version, "runs": results})
    print(f"written: {path}")


if __name__ == "__main__":
    main()
