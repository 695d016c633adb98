"""``n8n-chaos diff RUN_A RUN_B``: what changed between two runs.

- Probes: two findings reports (folders with ``findings.json``). Versions both ran are
  compared version by version; when they share none and each ran exactly one (2.33.7 in A,
  2.40.7 in B), those two are compared. A probe whose answer differs is listed with both
  answers and both whys (the evidence side by side).
- Matrix cases: two run folders with ``verdicts.json`` (``n8n-chaos run``); a case whose
  verdict differs is listed with both explanations.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.errors import ConfigError
from harness.findings.report import FINDINGS_JSON, Findings, load
from harness.terminal.summary import SUMMARY_FILE, read_summary


@dataclass(frozen=True)
class Side:
    version: str
    answer: str | None  # None: the probe did not run there
    why: str


@dataclass(frozen=True)
class ProbeDiff:
    probe: str
    a: Side
    b: Side


@dataclass(frozen=True)
class CaseDiff:
    case_id: str
    a: str | None  # the verdict (None: no verdict, a harness error)
    b: str | None
    a_why: str
    b_why: str


def version_pairs(a: Findings, b: Findings) -> list[tuple[str, str]]:
    ran_a = [v for v, r in a.versions.items() if r.ran]
    ran_b = [v for v, r in b.versions.items() if r.ran]
    common = [v for v in ran_a if v in ran_b]
    if common:
        return [(v, v) for v in common]
    if len(ran_a) == 1 and len(ran_b) == 1:
        return [(ran_a[0], ran_b[0])]
    raise ConfigError(
        f"the two reports share no n8n version (A ran {ran_a or 'none'}, B ran "
        f"{ran_b or 'none'}) and do not hold one version each: nothing to pair"
    )


def probe_diffs(a: Findings, b: Findings) -> list[ProbeDiff]:
    diffs = []
    for version_a, version_b in version_pairs(a, b):
        for probe in sorted(set(a.probes) | set(b.probes)):
            side_a = _side(a, probe, version_a)
            side_b = _side(b, probe, version_b)
            if side_a.answer != side_b.answer:
                diffs.append(ProbeDiff(probe, side_a, side_b))
    return diffs


def _side(findings: Findings, probe: str, version: str) -> Side:
    result = findings.probes.get(probe, {}).get("results", {}).get(version)
    if result is None:
        return Side(version, None, "not run")
    return Side(version, str(result["answer"]), str(result.get("why", "")))


def case_diffs(run_a: Path, run_b: Path) -> list[CaseDiff]:
    _, cases_a = read_summary(run_a / SUMMARY_FILE)
    _, cases_b = read_summary(run_b / SUMMARY_FILE)
    by_a = {c.case_id: c for c in cases_a}
    by_b = {c.case_id: c for c in cases_b}
    diffs = []
    for case_id in sorted(set(by_a) & set(by_b)):
        one, two = by_a[case_id], by_b[case_id]
        if one.verdict != two.verdict:
            diffs.append(
                CaseDiff(
                    case_id,
                    one.verdict,
                    two.verdict,
                    one.explanation or one.error or "",
                    two.explanation or two.error or "",
                )
            )
    return diffs


@dataclass
class RunDiff:
    probes: list[ProbeDiff]
    cases: list[CaseDiff]
    compared: list[str]  # what was compared (findings, verdicts)


def diff_runs(run_a: Path, run_b: Path) -> RunDiff:
    compared = []
    probes: list[ProbeDiff] = []
    cases: list[CaseDiff] = []
    if (run_a / FINDINGS_JSON).is_file() and (run_b / FINDINGS_JSON).is_file():
        probes = probe_diffs(load(run_a), load(run_b))
        compared.append("findings")
    if (run_a / SUMMARY_FILE).is_file() and (run_b / SUMMARY_FILE).is_file():
        cases = case_diffs(run_a, run_b)
        compared.append("verdicts")
    if not compared:
        raise ConfigError(
            f"{run_a} and {run_b} hold neither both a {FINDINGS_JSON} (n8n-chaos findings "
            f"--out) nor both a {SUMMARY_FILE} (n8n-chaos run): nothing to compare"
        )
    return RunDiff(probes, cases, compared)


def render(diff: RunDiff) -> list[str]:
    lines = []
    for d in diff.probes:
        lines.append(f"probe {d.probe}: n8n {d.a.version} -> {d.b.version}")
        lines.append(f"  A: {d.a.answer or '(not run)'}  ({d.a.why[:300]})")
        lines.append(f"  B: {d.b.answer or '(not run)'}  ({d.b.why[:300]})")
    for c in diff.cases:
        lines.append(f"case {c.case_id}: {c.a or 'no verdict'} -> {c.b or 'no verdict'}")
        lines.append(f"  A: {c.a_why[:300]}")
        lines.append(f"  B: {c.b_why[:300]}")
    if not lines:
        lines.append(f"no differences ({' and '.join(diff.compared)} compared)")
    return lines
