"""What a stack costs in CPU: its bring-up (every process of it, task runners included, from
start until a minute after ready, when the spare has booted too) and then each part's CPU
seconds a minute while no case runs, for n8n settings side by side (stacks alternated, so
both see the same load on a shared machine).

    python bench/idle_cpu.py                        # N8N_METRICS on against off (the default)
    python bench/idle_cpu.py --compare main-runner  # main with a task runner against none
    python bench/idle_cpu.py --compare modules      # n8n's modules against the lean set
    python bench/idle_cpu.py --compare editor       # main with n8n's editor against without
    python bench/idle_cpu.py --seconds 120 --runs 3

A stack of the main job lives for the whole run and most of that time waits: what it burns
idle is paid per stack per minute. Writes bench/results/idle_cpu.json (one entry per
comparison).
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from _common import descendants, load, table, write_entry
from cpu_by_part import cpu_of

from harness.stack.install import DEFAULT_N8N_VERSION, Installer
from harness.stack.stack import Stack, StackConfig

# What can be compared: variant name -> the n8n settings it overrides.
COMPARISONS = {
    "metrics": {"metrics on": {"N8N_METRICS": "true"}, "metrics off (default)": {}},
    "main-runner": {
        "main starts a task runner (default)": {},
        "main starts none": {"OFFLOAD_MANUAL_EXECUTIONS_TO_WORKERS": "true"},
    },
    "editor": {
        "main with its editor": {"N8N_DISABLE_UI": "false"},
        "main without (default)": {},
    },
    "modules": {
        "n8n's modules (only the call-home one off)": {"N8N_DISABLED_MODULES": "mcp-registry"},
        "modules off the execution path off (default)": {},
    },
    "gc": {
        "V8's own GC settings (default)": {},
        "semi-space 16 MB": {"NODE_OPTIONS": "--max-semi-space-size=16"},
        "semi-space 32 MB": {"NODE_OPTIONS": "--max-semi-space-size=32"},
        "semi-space 64 MB": {"NODE_OPTIONS": "--max-semi-space-size=64"},
    },
}


def measure(stack: Stack, settle_s: float, seconds: float) -> dict[str, Any]:
    time.sleep(settle_s)  # no signal to wait on: the spare boots after the stack is ready
    pids = descendants(p.pid for p in stack.processes if p.pid is not None)
    booted = cpu_of(pids)
    load_before = load()
    time.sleep(seconds)  # the measured span itself: nothing to wait for
    after = cpu_of(pids)
    idle = Counter({part: (after[part] - booted[part]) * 60 / seconds for part in after})
    return {
        "processes": len(pids),
        "bring_up_cpu_s": round(sum(booted.values()), 2),
        "bring_up_by_part": {k: round(v, 2) for k, v in booted.most_common()},
        "by_part": {k: round(v, 3) for k, v in idle.most_common()},
        "total": round(sum(idle.values()), 3),
        "load_before": load_before,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--compare", choices=sorted(COMPARISONS), default="metrics")
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
            for name, env in COMPARISONS[args.compare].items():
                stack = Stack.start(inst, dataclasses.replace(base, n8n_env=env))
                try:
                    results.append({"variant": name, **measure(stack, args.settle, args.seconds)})
                finally:
                    stack.stop()
    parts = sorted({p for r in results for p in r["by_part"]})
    print(f"n8n {args.n8n_version}, 2 workers and a spare; idle: CPU s a minute")
    print(
        table(
            ["variant", "processes", "bring-up CPU s", "of it n8n's", *parts, "idle total", "load"],
            [
                (
                    r["variant"],
                    r["processes"],
                    r["bring_up_cpu_s"],
                    round(sum(v for k, v in r["bring_up_by_part"].items() if "n8n" in k), 2),
                    *(r["by_part"].get(p, 0.0) for p in parts),
                    r["total"],
                    r["load_before"],
                )
                for r in results
            ],
        )
    )
    at = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    entry = {"at": at, "n8n_version": args.n8n_version, "runs": results}
    print(f"written: {write_entry('idle_cpu', 'comparisons', args.compare, entry)}")


if __name__ == "__main__":
    main()
