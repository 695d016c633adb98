"""What n8n itself does under faults, per version: every probe's answer on every version, from
the committed findings reports under bench/results/, and (``--run``) the run that makes them.

    python bench/findings_versions.py                       # print the committed answers
    python bench/findings_versions.py --run                 # probe 2.33.7, 2.40.7, 2.41.1 again
    python bench/findings_versions.py --run --n8n-version 2.41.1 --probe false_stall

``--run`` calls ``n8n-chaos findings --n8n-version V --out bench/results/findings-V --merge``
per version (one version at a time: the probes are timing-sensitive and own the machine); a
version npm cannot resolve is written as such into its report. The table marks each probe
whose answers differ between versions (``n8n-chaos diff A B`` gives the evidence side by side).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from harness.findings.report import FINDINGS_JSON, Findings, load

RESULTS = Path(__file__).resolve().parent / "results"
VERSIONS = ("2.33.7", "2.40.7", "2.41.1")


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) if part.isdigit() else -1 for part in version.split("."))


def reports(results: Path = RESULTS) -> dict[str, Findings]:
    """Every ``findings-<version>`` report under ``results``, oldest version first."""
    found = {
        folder.name.removeprefix("findings-"): load(folder)
        for folder in results.glob("findings-*/")
        if (folder / FINDINGS_JSON).is_file()
    }
    return dict(sorted(found.items(), key=lambda item: _version_key(item[0])))


def answer_table(found: dict[str, Findings]) -> list[str]:
    """A line per probe: its answer per version, ``*`` where the versions' answers differ."""
    versions = [v for v, f in found.items() if any(r.ran for r in f.versions.values())]
    probes = dict.fromkeys(name for f in found.values() for name in f.probes)
    lines = ["probe | " + " | ".join(versions)]
    for probe in probes:
        # findings-<version>-default-timings: that version under `--n8n-timings default`
        answers = [found[v].answer(probe, v.partition("-")[0]) or "-" for v in versions]
        differs = len({a for a in answers if a != "-"}) > 1
        lines.append(f"{'*' if differs else ' '} {probe} | " + " | ".join(answers))
    skipped = [
        f"{v}: {r.error}" for f in found.values() for v, r in f.versions.items() if not r.ran
    ]
    return lines + [f"not run: {why}" for why in skipped]


def run(versions: list[str], probes: list[str], results: Path) -> int:
    worst = 0
    for version in versions:
        argv = [sys.executable, "-m", "harness", "findings", "--n8n-version", version]
        argv += [arg for probe in probes for arg in ("--probe", probe)]
        argv += ["--out", str(results / f"findings-{version}"), "--merge"]
        print("$", " ".join(argv[1:]), flush=True)
        worst = max(worst, subprocess.run(argv, check=False).returncode)
    return worst


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=RESULTS, help="default: bench/results")
    parser.add_argument("--run", action="store_true", help="probe the versions again first")
    parser.add_argument("--n8n-version", dest="versions", action="append", metavar="V")
    parser.add_argument("--probe", dest="probes", action="append", default=[], metavar="NAME")
    args = parser.parse_args(argv)
    code = run(args.versions or list(VERSIONS), args.probes, args.results) if args.run else 0
    for line in answer_table(reports(args.results)):
        print(line)
    return code


if __name__ == "__main__":
    sys.exit(main())
