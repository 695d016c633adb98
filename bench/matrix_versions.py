"""The bundled crash matrix per n8n version: what each run gave, and the cases whose verdict
differs from the default version's, from the committed runs under bench/results/.

    python bench/matrix_versions.py                  # every bench/results/matrix-<version>/
    python bench/matrix_versions.py --baseline 2.33.7

A version's folder holds the ``verdicts.json`` of an ``n8n-chaos run --n8n-version V`` of the
whole matrix (so ``n8n-chaos diff bench/results/matrix-2.33.7 bench/results/matrix-2.40.7``
works on it too), or a ``not_run.json`` saying why that version could not run (e.g. npm cannot
resolve one of its packages). The comparison is harness's own (``harness.findings.diff``).
Reads only; scripts/readme_figures.py renders the same as docs/matrix.md's ``matrix_by_version``.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from harness.findings.diff import CaseDiff, RunDiff, case_diffs, render
from harness.stack.install import DEFAULT_N8N_VERSION
from harness.terminal.outcome import CaseOutcome, Kind
from harness.terminal.summary import SUMMARY_FILE, read_summary

RESULTS = Path(__file__).resolve().parent / "results"
NOT_RUN_FILE = "not_run.json"


@dataclass(frozen=True)
class MatrixVersion:
    version: str
    folder: Path
    outcomes: dict[str, CaseOutcome]  # by case id; empty when the matrix did not run
    not_run: str | None = None  # why the matrix did not run on this version

    @property
    def cases(self) -> int:
        return len(self.outcomes)

    def count(self, kind: Kind) -> int:
        return sum(1 for o in self.outcomes.values() if o.kind is kind)


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) if part.isdigit() else -1 for part in version.split("."))


def matrix_versions(results: Path = RESULTS) -> list[MatrixVersion]:
    """Every ``matrix-<version>`` folder under ``results``, oldest version first."""
    found = []
    for folder in results.glob("matrix-*/"):
        version = folder.name.removeprefix("matrix-")
        if (folder / SUMMARY_FILE).is_file():
            _, outcomes = read_summary(folder / SUMMARY_FILE)
            found.append(MatrixVersion(version, folder, {o.case_id: o for o in outcomes}))
        elif (folder / NOT_RUN_FILE).is_file():
            why = str(json.loads((folder / NOT_RUN_FILE).read_text())["not_run"])
            found.append(MatrixVersion(version, folder, {}, not_run=why))
    return sorted(found, key=lambda v: _version_key(v.version))


def differences(baseline: MatrixVersion, other: MatrixVersion) -> list[CaseDiff]:
    """The cases both ran whose verdict differs (a = the baseline's, b = the other's)."""
    return case_diffs(baseline.folder, other.folder)


def only_in_one(baseline: MatrixVersion, other: MatrixVersion) -> list[str]:
    """The cases one of the two runs has and the other not (not compared)."""
    return sorted(set(baseline.outcomes) ^ set(other.outcomes))


def both_expected(baseline: MatrixVersion, other: MatrixVersion, diff: CaseDiff) -> bool:
    """Both verdicts are among those the case allows (a timing-dependent case may give
    either on any version: a difference, not a violation)."""
    return all(v.outcomes[diff.case_id].as_expected for v in (baseline, other))


def baseline_of(versions: list[MatrixVersion], wanted: str) -> MatrixVersion:
    for version in versions:
        if version.version == wanted and version.not_run is None:
            return version
    ran = [v.version for v in versions if v.not_run is None]
    raise LookupError(f"no matrix run of n8n {wanted} under bench/results (ran: {ran})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=RESULTS, help="default: bench/results")
    parser.add_argument("--baseline", default=DEFAULT_N8N_VERSION, help="compare against it")
    args = parser.parse_args(argv)
    versions = matrix_versions(args.results)
    try:
        baseline = baseline_of(versions, args.baseline)
    except LookupError as exc:
        print(exc, file=sys.stderr)
        return 2
    header = ("n8n", "cases", "as expected", "violations", "harness errors")
    print("  ".join(header))
    for v in versions:
        if v.not_run is not None:
            print(f"{v.version}  not run: {v.not_run}")
            continue
        counts = (v.count(Kind.EXPECTED), v.count(Kind.VIOLATION), v.count(Kind.HARNESS_ERROR))
        print(f"{v.version}  {v.cases}  " + "  ".join(str(n) for n in counts))
    for v in versions:
        if v is baseline or v.not_run is not None:
            continue
        print(f"\nn8n {baseline.version} (A) -> {v.version} (B):")
        only = only_in_one(baseline, v)
        if only:
            print(f"  cases in one run only: {', '.join(only)}")
        found = differences(baseline, v)
        for line in render(RunDiff(probes=[], cases=found, compared=["verdicts"])):
            print(f"  {line}")
        for d in found:
            allowed = "both" if both_expected(baseline, v, d) else "not both"
            print(f"  {d.case_id}: {allowed} among the verdicts the case expects")
    return 0


if __name__ == "__main__":
    sys.exit(main())
