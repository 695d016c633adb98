"""show and recheck on saved evidence: finding a case, the text a reader sees, re-judging
with the current oracle and the exit codes (no stack)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from harness.errors import ConfigError
from harness.front.cli import main
from harness.judge.oracle import AttemptRow, CommitRow, Evidence, Proof
from harness.report import inspect
from harness.terminal.outcome import CaseOutcome
from harness.terminal.summary import summary_doc, write_summary

T0 = 1_796_000_000.0
LANDED = [Proof("crashpoint", "after_commit", True, f"held from {T0 + 0.5:.3f}")]


def commit(i: int) -> CommitRow:
    return CommitRow(f"ch_{i}", i + 1, T0 + 1 + i, None, "order-1", "charge")


def save_case(
    run_dir: Path,
    workflow: str,
    saved_verdict: str | None,
    commits: int = 1,
    expected: tuple[str, ...] = ("PASS",),
    judged: bool = True,
) -> Path:
    """A case's evidence.json as the runner writes it; ``commits`` decides today's verdict
    (1: PASS, 2: DUPLICATE); ``saved_verdict`` is what it said at the time."""
    case_id = f"{workflow}-retry-worker_kill-after_commit"
    doc: dict[str, Any] = {
        "case": case_id,
        "workflow": workflow,
        "delivery": "retry",
        "fault": "worker_kill",
        "crashpoint": "after_commit",
        "key": "order-1",
        "expected": list(expected),
        "started_at": T0,
        "phases": [{"name": "prepare", "started_at": T0, "ended_at": T0 + 0.1}],
        "history": [
            {
                "delivery": "d1",
                "number": 1,
                "started_at": T0 + 0.2,
                "ended_at": T0 + 2,
                "outcome": "ok",
                "status": 200,
                "detail": "{}",
            },
        ],
        "journal": [{"at": T0 + 0.6, "kind": "fault.inject", "what": "worker_kill", "data": {}}],
    }
    if judged:
        evidence = Evidence(
            key="order-1",
            promise="exactly_once",
            effect="charge",
            commits=[commit(i) for i in range(commits)],
            attempts=[AttemptRow("d1", "ok", 200)],
            proofs=LANDED,
        )
        doc |= {
            "verdict": saved_verdict,
            "explanation": f"saved as {saved_verdict}",
            "ended_at": T0 + 3,
            "evidence": evidence.to_json(),
        }
    path = run_dir / "gw0" / "cases" / case_id / "evidence.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(doc))
    return path


def test_a_case_id_is_found_in_the_newest_run_that_has_it(tmp_path: Path) -> None:
    old = save_case(tmp_path / "runs" / "run1", "payment_idempotent", "PASS")
    new = save_case(tmp_path / "runs" / "run2", "payment_idempotent", "PASS")
    os.utime(old, (1_000_000, 1_000_000))
    os.utime(new, (2_000_000, 2_000_000))  # the newer file wins
    found = inspect.find_evidence(
        "payment_idempotent-retry-worker_kill-after_commit", tmp_path / "runs"
    )
    assert found == new.resolve()
    assert inspect.find_evidence(str(old.parent), tmp_path) == old


def test_an_unknown_case_id_names_the_fix_and_a_near_miss(tmp_path: Path) -> None:
    save_case(tmp_path / "runs" / "run1", "payment_idempotent", "PASS")
    with pytest.raises(ConfigError, match="did you mean payment_idempotent-retry-worker_kill"):
        inspect.find_evidence("payment_idempotnt-retry-worker_kill-after_commit", tmp_path / "runs")


def test_show_prints_verdict_why_proofs_and_the_timeline(tmp_path: Path) -> None:
    save_case(tmp_path / "runs" / "r", "payment_idempotent", "PASS")
    done = CliRunner().invoke(
        main,
        [
            "show",
            "payment_idempotent-retry-worker_kill-after_commit",
            "--runs",
            str(tmp_path / "runs"),
        ],
    )
    assert done.exit_code == 0, done.output
    assert done.output.startswith("PASS  payment_idempotent-retry-worker_kill-after_commit")
    assert "why: saved as PASS" in done.output
    assert "held   crashpoint after_commit: held from +0.500 s" in done.output
    assert "+0.600 s  journal   fault.inject worker_kill" in done.output


def test_show_of_a_missing_case_exits_2(tmp_path: Path) -> None:
    done = CliRunner().invoke(main, ["show", "nope", "--runs", str(tmp_path)])
    assert done.exit_code == 2
    assert "no case 'nope'" in done.output


def test_recheck_rejudges_and_names_the_verdicts_that_changed(tmp_path: Path) -> None:
    run = tmp_path / "run"
    save_case(run, "payment_idempotent", "PASS", commits=2)  # today's oracle: DUPLICATE
    save_case(run, "webhook_dedup", "PASS")
    done = CliRunner().invoke(main, ["recheck", str(run)])
    assert done.exit_code == 1, done.output
    assert "1 verdict changed:" in done.output
    assert "payment_idempotent-retry-worker_kill-after_commit: PASS -> DUPLICATE" in done.output
    assert "2 cases: 1 as expected, 1 violation, 0 harness errors" in done.output


def test_recheck_compares_with_the_runs_verdicts_file(tmp_path: Path) -> None:
    run = tmp_path / "run"
    path = save_case(run, "payment_idempotent", "PASS")
    outcome = CaseOutcome(
        "payment_idempotent-retry-worker_kill-after_commit",
        "payment_idempotent",
        "retry-worker_kill-after_commit",
        "LOST",
        ("PASS",),
        evidence=str(path),
    )
    write_summary(run / "verdicts.json", summary_doc([outcome], run))
    rechecked = [
        inspect.recheck(f, inspect.saved_verdicts(run)) for f in inspect.evidence_files(run)
    ]
    assert [(r.saved, r.outcome.verdict, r.changed) for r in rechecked] == [("LOST", "PASS", True)]


def test_recheck_exit_codes(tmp_path: Path) -> None:
    save_case(tmp_path / "ok", "payment_idempotent", "PASS")
    save_case(tmp_path / "cut", "payment_idempotent", None, judged=False)
    runner = CliRunner()
    ok = runner.invoke(main, ["recheck", str(tmp_path / "ok")])
    assert ok.exit_code == 0 and "no verdict changed (1 case re-judged)" in ok.output
    cut = runner.invoke(main, ["recheck", str(tmp_path / "cut")])
    assert cut.exit_code == 2, cut.output  # a case cut short has no verdict
    (tmp_path / "empty").mkdir()
    empty = runner.invoke(main, ["recheck", str(tmp_path / "empty")])
    assert empty.exit_code == 2 and "no evidence.json" in empty.output


def test_recheck_skips_the_evidence_of_a_try_the_harness_ran_again(tmp_path: Path) -> None:
    """A case the harness ran again keeps its first try in cases/<id>.try1: the case is its
    last try, so recheck judges one case, not two (a trial saw 79 of 78)."""
    run = tmp_path / "run"
    last = save_case(run, "webhook_dedup", "PASS")
    earlier = last.parent.with_name(last.parent.name + ".try1")
    earlier.mkdir()
    (earlier / last.name).write_text(last.read_text().replace('"PASS"', '"NO-EVIDENCE"'))
    done = CliRunner().invoke(main, ["recheck", str(run)])
    assert done.exit_code == 0, done.output
    assert "no verdict changed (1 case re-judged)" in done.output


def test_show_names_the_copy_of_the_harness_that_ran_the_case(tmp_path: Path) -> None:
    from harness.engine.runner import _judged_by

    path = save_case(tmp_path / "runs" / "r", "payment_idempotent", "PASS")
    doc = json.loads(path.read_text())
    path.write_text(json.dumps({**doc, "harness": _judged_by()}))
    done = CliRunner().invoke(main, ["show", doc["case"], "--runs", str(tmp_path / "runs")])
    assert done.exit_code == 0, done.output
    assert f"run by the harness in {Path(__file__).resolve().parents[2]}" in done.output
