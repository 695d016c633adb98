"""Figures for the stack: install time (cold into an empty cache, and cached), time from
`up` to ready, and each part's own start time, in one run.

    python bench/stack_startup.py              # cached install + 3 bring-ups
    python bench/stack_startup.py --cold       # also a cold install into a temporary cache
    python bench/stack_startup.py --n8n-version 2.33.7 --workers 3

A cold install here still profits from npm's own download cache (~/.npm) if an earlier
install filled it; the figure says so when that cache exists.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from harness.stack.install import DEFAULT_N8N_VERSION, Installer
from harness.stack.stack import Stack, StackConfig


def timed_install(cache: Path | None, version: str) -> float:
    started = time.monotonic()
    Installer(cache_dir=cache, n8n_version=version).install()
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cold", action="store_true", help="also time a cold install")
    parser.add_argument("--n8n-version", default=DEFAULT_N8N_VERSION)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3, help="bring-ups to time")
    args = parser.parse_args()

    rows: list[tuple[str, str]] = []
    if args.cold:
        scratch = Path(tempfile.mkdtemp(prefix="n8n-chaos-bench-cache-", dir="/var/tmp"))
        scratch.chmod(0o755)
        npm_cache = Path.home() / ".npm" / "_cacache"
        note = " (npm download cache warm)" if npm_cache.exists() else ""
        try:
            cold = timed_install(scratch, args.n8n_version)
            rows.append((f"install, cold{note}", f"{cold:.1f} s"))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    rows.append(("install, cached", f"{timed_install(None, args.n8n_version):.2f} s"))

    installation = Installer(n8n_version=args.n8n_version).install()
    per_part: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="n8n-chaos-bench-runs-") as runs:
        for _ in range(args.runs):
            config = StackConfig(
                workers=args.workers, n8n_version=args.n8n_version, runs_root=Path(runs)
            )
            stack = Stack.start(installation, config)
            try:
                for part, seconds in stack.timings.items():
                    per_part.setdefault(part, []).append(seconds)
            finally:
                stack.stop()
    for part, values in per_part.items():
        if part == "total":
            label = "up -> ready (total)"
        elif part.endswith("initdb"):
            label = f"  {part} took"
        else:
            label = f"  {part} ready after"
        rows.append(
            (
                label,
                " / ".join(f"{v:.1f}" for v in values)
                + f" s (median {statistics.median(values):.1f})",
            )
        )

    print(f"n8n {args.n8n_version}, {args.workers} workers, {args.runs} bring-ups")
    width = max(len(r[0]) for r in rows)
    for label, value in rows:
        print(f"{label:<{width}}  {value}")


if __name__ == "__main__":
    main()
