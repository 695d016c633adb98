"""The terminal plugin in a real pytest run of a stand-in suite (no stack): a line per case,
the grid, verdicts.json with its exit code, in one process and under xdist; the live line
when the output is a terminal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

# Stands in for harness/front/suite.py: the same test name and properties, verdicts made up.
FAKE_SUITE = """
def test_exactly_once(chaos_case, record_property):
    expected = sorted(v.value for v in chaos_case.expected)
    verdict = expected[0]
    if chaos_case.workflow == "payment_idempotent" and chaos_case.fault == "worker_kill":
        verdict = "DUPLICATE"
    if chaos_case.workflow == "webhook_dedup" and chaos_case.fault == "worker_kill":
        raise RuntimeError("the harness fell over")
    record_property("n8n_chaos_verdict", {"verdict": verdict, "explanation": "made up",
                                          "evidence": "/nowhere/evidence.json"})
    assert verdict in expected
"""
CASES = "retry-worker_kill-after_commit and (payment_ or webhook_dedup) and not operator"


def run_fake(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    (tmp_path / "test_suite_stand_in.py").write_text(FAKE_SUITE)
    summary = tmp_path / "verdicts.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-W",
            "ignore",
            "test_suite_stand_in.py",
            "-k",
            CASES,
            f"--chaos-summary={summary}",
            *args,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "N8N_CHAOS_RUNS": str(tmp_path / "runs"), "COLUMNS": "160"},
    )
    return done, json.loads(summary.read_text())


@pytest.mark.parametrize("jobs", [(), ("-n", "2")], ids=["one process", "xdist"])
def test_each_case_gets_a_line_the_run_a_grid_and_a_verdicts_file(
    tmp_path: Path, jobs: tuple[str, ...]
) -> None:
    done, summary = run_fake(tmp_path, *jobs)
    out = done.stdout
    lines = {
        word: line
        for line in out.splitlines()
        for word in line.split()[:6]
        if word.endswith("-after_commit") and " s  " in line
    }
    assert set(lines) == {
        "payment_idempotent-retry-worker_kill-after_commit",
        "payment_naive-retry-worker_kill-after_commit",
        "payment_async-retry-worker_kill-after_commit",
        "payment_error_handled-retry-worker_kill-after_commit",
        "webhook_dedup-retry-worker_kill-after_commit",
    }, out
    assert lines["payment_naive-retry-worker_kill-after_commit"].startswith("DUPLICATE    expected")
    assert lines["payment_idempotent-retry-worker_kill-after_commit"].startswith(
        "DUPLICATE    UNEXPECTED"
    )
    assert (
        "call: RuntimeError: the harness fell over"
        in (lines["webhook_dedup-retry-worker_kill-after_commit"])
    )
    assert "n8n-chaos verdicts" in out and "  1 retry-worker_kill-after_commit" in out
    assert "5 cases: 3 as expected, 1 violation, 1 harness error" in out
    assert "\x1b[" not in out  # no colour codes in a pipe
    assert ".F" not in out and "[100%]" not in out  # pytest's dots gave way to the lines
    assert summary["exit_code"] == 1
    assert summary["counts"] == {"expected": 3, "violation": 1, "harness-error": 1}


def test_other_tests_keep_pytests_own_output(tmp_path: Path) -> None:
    (tmp_path / "test_plain.py").write_text("def test_one():\n    pass\n")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-W", "ignore", "test_plain.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "test_plain.py ." in done.stdout
    assert "n8n-chaos verdicts" not in done.stdout


def test_on_a_terminal_the_live_line_shows_the_cases_in_progress(tmp_path: Path) -> None:
    done, _ = run_fake(tmp_path, "--chaos-terminal=live")
    assert "cases done" in done.stdout and "running" in done.stdout
    assert "\x1b[" in done.stdout  # drawn with rich on the (forced) terminal


def test_a_collection_error_is_reported_not_an_internal_error(tmp_path: Path) -> None:
    # A collect report has no user properties: the terminal must leave it to pytest.
    (tmp_path / "test_broken.py").write_text("import no_such_module_here\n")
    (tmp_path / "test_suite_stand_in.py").write_text(FAKE_SUITE)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-W", "ignore", "-k", CASES],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "N8N_CHAOS_RUNS": str(tmp_path / "runs")},
    )
    assert "INTERNALERROR" not in done.stdout + done.stderr
    assert "ERROR collecting test_broken.py" in done.stdout
    assert done.returncode == pytest.ExitCode.INTERRUPTED
