"""docs/matrix.md's matrix-per-version table (scripts/readme_figures.py ``matrix_by_version``)
on a tiny bench/results fixture: counts per version, the cases whose verdict differs from the
default version's with both verdicts, and a version that could not run."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

from harness.stack.install import DEFAULT_N8N_VERSION
from harness.terminal.outcome import CaseOutcome
from harness.terminal.summary import SUMMARY_FILE, summary_doc, write_summary

ROOT = Path(__file__).resolve().parents[2]


def load_figures() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "readme_figures_matrix", ROOT / "scripts" / "readme_figures.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def case(case_id: str, verdict: str | None, error: str | None = None) -> CaseOutcome:
    workflow, scenario = case_id.split("-", 1)
    expected = ("PASS", "UNRECONCILED") if "pause" in case_id else ("PASS",)
    return CaseOutcome(case_id, workflow, scenario, verdict, expected, error=error)


def write_run(results: Path, version: str, outcomes: list[CaseOutcome]) -> None:
    write_summary(results / f"matrix-{version}" / SUMMARY_FILE, summary_doc(outcomes, None))


@pytest.fixture
def results(tmp_path: Path) -> Path:
    write_run(
        tmp_path,
        DEFAULT_N8N_VERSION,
        [
            case("wf-retry-no_fault-none", "PASS"),
            case("wf-once-kill-x", "PASS"),
            case("wf-retry-pause-x", "PASS"),
        ],
    )
    write_run(
        tmp_path,
        "2.1.0",
        [
            case("wf-retry-no_fault-none", "PASS"),
            case("wf-once-kill-x", "DUPLICATE"),
            case("wf-retry-pause-x", "UNRECONCILED"),
            case("wf-late-kill-x", None, error="stack did not come up"),
        ],
    )
    (tmp_path / "matrix-9.0.0").mkdir()
    (tmp_path / "matrix-9.0.0" / "not_run.json").write_text(
        json.dumps({"n8n_version": "9.0.0", "not_run": "npm cannot resolve @n8n/x@1.0.0"})
    )
    return tmp_path


def test_the_table_counts_each_version_and_names_what_differs(results: Path) -> None:
    lines = load_figures().matrix_by_version(results).splitlines()
    assert len(lines) == 5  # header, rule, three versions oldest first
    old, default, missing = lines[2:]
    assert old.startswith("| 2.1.0 | 4 | 2 | 1 | 1 | ")
    assert "`wf-once-kill-x`: PASS -> DUPLICATE;" in old  # a violation: not both expected
    assert "`wf-retry-pause-x`: PASS -> UNRECONCILED (both expected)" in old
    assert "wf-retry-no_fault-none" not in old  # the same verdict on both
    assert "(1 case(s) ran on one version only)" in old
    assert default == f"| {DEFAULT_N8N_VERSION} | 3 | 3 | 0 | 0 | (baseline) |"
    assert missing == "| 9.0.0 | not run: npm cannot resolve @n8n/x@1.0.0 | | | | |"


def test_no_run_of_the_default_version_is_said(tmp_path: Path) -> None:
    write_run(tmp_path, "2.1.0", [case("wf-retry-no_fault-none", "PASS")])
    with pytest.raises(LookupError, match=f"no matrix run of n8n {DEFAULT_N8N_VERSION}"):
        load_figures().matrix_by_version(tmp_path)
