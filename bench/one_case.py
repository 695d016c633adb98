"""One case at a desk: what a rerun costs on top of the case itself, side by side.

    python bench/one_case.py                # the default case, 3 warm runs of each mode
    python bench/one_case.py -k CASE --warm-runs 5

Modes, in one run on one machine:
- cold: `n8n-chaos run --no-attach -k CASE` (starts and stops a stack of its own);
- warm, in process: after `n8n-chaos up`, the run in the client's own process (what `run`
  does when no warm runner is live);
- warm, runner: the same run handed to `up`'s warm runner (harness.front.warm), the default.
Overhead is the wall time of the command minus the case's own seconds (verdicts.json); the
first warm run also deploys the workflow into the warm n8n and is shown apart. Runs use
their own runs folder in the temp dir. Writes bench/results/one_case.json.
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
from pathlib import Path
from typing import Any

from _common import load, table, write_result

from harness.stack.readiness import Readiness, wait_ready

CASE = "payment_idempotent-retry-worker_kill-after_commit"
# The console script next to this Python (no pyenv-style shim in front of it).
CLI = str(Path(sys.executable).with_name("n8n-chaos"))
IN_PROCESS = [sys.executable, "-c", "import sys; from harness.front.cli import main; main()"]


def verdict_files(runs: Path) -> set[Path]:
    return {p for p in runs.glob("*/verdicts.json") if not p.parent.is_symlink()}  # `latest`


def timed(argv: list[str], runs: Path, env: dict[str, str]) -> dict[str, Any]:
    before = verdict_files(runs)
    load_before = load()
    started = time.monotonic()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv)} exited {done.returncode}:\n{done.stdout[-2000:]}{done.stderr}")
    (verdicts,) = verdict_files(runs) - before
    case_s = float(json.loads(verdicts.read_text())["cases"][0]["seconds"])
    return {
        "wall_s": round(wall, 2),
        "case_s": round(case_s, 2),
        "overhead_s": round(wall - case_s, 2),
        "load_before": load_before,
        "load_after": load(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-k", dest="case", default=CASE)
    parser.add_argument("--warm-runs", type=int, default=3)
    args = parser.parse_args()
    runs = Path(tempfile.mkdtemp(prefix="n8n-chaos-bench-"))
    env = {**os.environ, "N8N_CHAOS_RUNS": str(runs)}
    one = ["run", "-k", args.case, "--alluredir", str(runs / "allure")]
    rows: dict[str, list[dict[str, Any]]] = {}
    rows["cold"] = [timed([CLI, *one, "--no-attach"], runs, env)]
    up_log = (runs / "up.log").open("w")
    up = subprocess.Popen([CLI, "up"], env=env, stdout=up_log, stderr=subprocess.STDOUT)
    try:
        wait_ready(
            Readiness("`up` with its warm runner", lambda: _runner_serving(runs)), deadline_s=300
        )
        rows["warm, first (deploys)"] = [timed([CLI, *one], runs, env)]
        for _ in range(args.warm_runs):
            rows.setdefault("warm, in process", []).append(timed([*IN_PROCESS, *one], runs, env))
            rows.setdefault("warm, runner", []).append(timed([CLI, *one], runs, env))
    finally:
        subprocess.run([CLI, "down"], env=env, capture_output=True, check=False)
        up.wait(timeout=120)
        up_log.close()
    print(f"case {args.case}; runs in {runs}")
    print(
        table(
            ["mode", "runs", "wall s (median)", "case s (median)", "overhead s (median, max)"],
            [
                [
                    mode,
                    len(found),
                    statistics.median(r["wall_s"] for r in found),
                    statistics.median(r["case_s"] for r in found),
                    f"{statistics.median(r['overhead_s'] for r in found):.2f}, "
                    f"{max(r['overhead_s'] for r in found):.2f}",
                ]
                for mode, found in rows.items()
            ],
        )
    )
    path = write_result("one_case", {"case": args.case, "modes": rows})
    print(f"written: {path}")


def _runner_serving(runs: Path) -> bool:
    for state_file in runs.glob("*/attach.json"):
        runner_log = state_file.parent / "logs" / "warm-runner.log"
        if runner_log.exists() and "serving" in runner_log.read_text():
            return True
    return False


if __name__ == "__main__":
    main()
