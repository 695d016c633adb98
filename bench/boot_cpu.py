"""What one n8n process's boot costs in CPU (with its task runner: from start until ready and
its runner up), for n8n settings side by side: one stack, the process restarted in place with
each variant's settings in turn, so every variant sees the same machine.

    python bench/boot_cpu.py --role main --compare editor   # main with its editor against none
    python bench/boot_cpu.py --role worker --compare modules --rounds 7

A kill case boots a worker, a Redis outage's heal boots main and the workers: on two cores
the matrix's wall time follows these seconds. The variants are idle_cpu.py's comparisons.
Writes bench/results/boot_cpu.json (one entry per role and comparison).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from _common import descendants, table, write_entry
from cpu_by_part import cpu_of
from idle_cpu import COMPARISONS

from harness.stack.install import DEFAULT_N8N_VERSION, Installer
from harness.stack.readiness import wait_ready
from harness.stack.stack import Stack, StackConfig

RUNNER_UP_S = 4.0  # a task runner starts after its process is ready; no signal says it is up


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--role", choices=("main", "worker"), default="worker")
    parser.add_argument("--compare", choices=sorted(COMPARISONS), default="modules")
    parser.add_argument("--rounds", type=int, default=5, help="boots of each variant")
    parser.add_argument("--n8n-version", default=DEFAULT_N8N_VERSION)
    args = parser.parse_args()

    inst = Installer(n8n_version=args.n8n_version).install()
    variants = COMPARISONS[args.compare]
    boots: dict[str, list[float]] = {name: [] for name in variants}
    with tempfile.TemporaryDirectory(prefix="n8n-chaos-bench-runs-") as runs:
        config = StackConfig(n8n_version=args.n8n_version, workers=1, runs_root=Path(runs))
        stack = Stack.start(inst, config)
        try:
            proc = stack.main if args.role == "main" else stack.workers[0]
            base = dict(proc.process.env)
            for _ in range(args.rounds):
                for name, env in variants.items():
                    proc.process.stop()
                    proc.process.env = {**base, **env}
                    proc.process.start()
                    wait_ready(proc.readiness(), config.ready_timeout_s)
                    time.sleep(RUNNER_UP_S)
                    assert proc.pid is not None
                    boots[name].append(round(sum(cpu_of(descendants([proc.pid])).values()), 2))
                    print(f"{name}: {boots[name][-1]} CPU s", flush=True)
        finally:
            stack.stop()
    print(f"n8n {args.n8n_version}, {args.role} boots, CPU s (process and task runner)")
    rows = [(n, statistics.median(b), min(b), max(b), len(b)) for n, b in boots.items()]
    print(table(["variant", "median", "min", "max", "boots"], rows))
    at = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    entry = {"at": at, "n8n_version": args.n8n_version, "boots": boots}
    key = f"{args.role}-{args.compare}"
    print(f"written: {write_entry('boot_cpu', 'comparisons', key, entry)}")


if __name__ == "__main__":
    main()
