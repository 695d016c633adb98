"""Exploration's speed: the wall time of exploring each bundled workflow (deploy, trace, its
probes) and the boundaries struck per minute, on one stack.

    python bench/explore.py                           # every bundled workflow, 2 probes each
    python bench/explore.py --budget-cases 0          # every probe of every workflow (long)
    python bench/explore.py --only stripe_naive --only payment_naive

A probe is one case: a strike at one boundary (an effect request: worker killed before it,
after the commit, after the answer; the answer dropped). With a per-workflow budget the wall
time of the whole exploration is also estimated: trace + probes in all x the median probe.
Writes bench/results/explore.json after each workflow (a cut run keeps what it measured).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

from _common import load, table, write_result

from harness.errors import HarnessError
from harness.explore.explorer import Exploration
from harness.explore.plan import Budget, probes_of
from harness.explore.session import explore_workflows
from harness.front.plugin import BUNDLED_WORKFLOWS
from harness.stack.install import DEFAULT_N8N_VERSION, Installer
from harness.stack.stack import Stack, StackConfig
from harness.workflow.manifest import WorkflowUnderTest, discover


def measure(stack: Stack, workflow: WorkflowUnderTest, cases: int | None) -> dict[str, Any]:
    """Explore one workflow; the trace ends when its "traced" line is said."""
    marks: dict[str, float] = {}

    def say(line: str) -> None:
        if line.startswith(f"{workflow.name}: traced"):
            marks["traced"] = time.monotonic()
        print(line, flush=True)

    load_before = load()
    started = time.monotonic()
    try:
        [found] = explore_workflows(stack, [workflow], Budget(cases=cases), say=say)
    except HarnessError as exc:
        return {"workflow": workflow.name, "error": str(exc), "wall_s": time.monotonic() - started}
    ended = time.monotonic()
    traced = marks.get("traced", started)
    return row(workflow.name, found, started, traced, ended) | {
        "load_before": load_before,
        "load_after": load(),
    }


def row(
    name: str, found: Exploration, started: float, traced: float, ended: float
) -> dict[str, Any]:
    ran = len(found.outcomes)
    probes_s = ended - traced
    verdicts: dict[str, int] = {}
    for o in found.outcomes:
        v = o.verdict.value if o.verdict is not None else "HARNESS-ERROR"
        verdicts[v] = verdicts.get(v, 0) + 1
    return {
        "workflow": name,
        "nodes": len(found.trace.node_names()),
        "effect_requests": len(found.trace.effect_requests),
        "boundaries": len(found.trace.boundaries),
        "probes_total": len(probes_of(found.trace)),
        "probes_run": ran,
        "not_run": [p.selector for p in found.not_run],
        "verdicts": verdicts,
        "violations": sum(o.violation for o in found.outcomes),
        "control": found.trace.control_verdict,
        "trace_s": round(traced - started, 1),
        "probes_s": round(probes_s, 1),
        "wall_s": round(ended - started, 1),
        "per_probe_s": round(probes_s / ran, 1) if ran else None,
    }


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    done = [r for r in rows if "error" not in r]
    ran = sum(r["probes_run"] for r in done)
    probe_s = sum(r["probes_s"] for r in done)
    per_probe = (
        round(statistics.median(r["per_probe_s"] for r in done if r["per_probe_s"]), 1)
        if ran
        else 0
    )
    for r in done:  # the whole exploration's wall time, where a budget cut it
        r["full_estimate_s"] = round(r["trace_s"] + r["probes_total"] * per_probe, 1)
    return {
        "workflows": len(rows),
        "errors": [r["workflow"] for r in rows if "error" in r],
        "probes_run": ran,
        "boundaries_per_minute": round(ran / (probe_s / 60), 2) if probe_s else None,
        "boundaries_per_minute_with_trace": round(ran / (sum(r["wall_s"] for r in done) / 60), 2)
        if done
        else None,
        "median_probe_s": per_probe,
        "median_trace_s": statistics.median(r["trace_s"] for r in done) if done else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--budget-cases", type=int, default=2, help="probes per workflow (0: all)")
    parser.add_argument("--only", action="append", default=[], help="a workflow (repeatable)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--n8n-version", default=DEFAULT_N8N_VERSION)
    args = parser.parse_args()
    cases = args.budget_cases or None
    workflows = discover(Path(BUNDLED_WORKFLOWS), on_warning=lambda _: None)
    workflows = [w for w in workflows if not args.only or w.name in args.only]
    inst = Installer(n8n_version=args.n8n_version).install()
    up = time.monotonic()
    stack = Stack.start(inst, StackConfig(workers=args.workers, n8n_version=args.n8n_version))
    stack_up_s = round(time.monotonic() - up, 1)
    rows: list[dict[str, Any]] = []
    try:
        for workflow in workflows:
            rows.append(measure(stack, workflow, cases))
            write_result(
                "explore",
                {
                    "n8n_version": args.n8n_version,
                    "workers": args.workers,
                    "budget_cases_per_workflow": cases,
                    "stack_up_s": stack_up_s,
                    "run_dir": str(stack.run.run_dir),
                    "summary": summary(rows),
                    "rows": rows,
                },
            )
    finally:
        stack.stop()
    headers = ["workflow", "req", "probes", "ran", "trace s", "wall s", "full est s", "verdicts"]
    print(
        table(
            headers,
            [
                (
                    r["workflow"],
                    r.get("effect_requests", "-"),
                    r.get("probes_total", "-"),
                    r.get("probes_run", "-"),
                    r.get("trace_s", "-"),
                    r["wall_s"],
                    r.get("full_estimate_s", "-"),
                    r.get("verdicts", r.get("error", "")),
                )
                for r in rows
            ],
        )
    )
    print(summary(rows))


if __name__ == "__main__":
    main()
