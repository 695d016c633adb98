"""The terminal's pure parts: outcomes and exit codes, the grid, the lines, the summary."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from harness.errors import ConfigError
from harness.terminal.grid import build_grid
from harness.terminal.outcome import CaseOutcome, ExitCode, Kind, exit_code, from_evidence
from harness.terminal.summary import read_summary, run_exit_code, summary_doc, write_summary
from harness.terminal.view import case_line, grid_view, totals


def outcome(
    verdict: str | None,
    expected: tuple[str, ...] = ("PASS",),
    workflow: str = "payment_idempotent",
    scenario: str = "retry-worker_kill-after_commit",
    run: str = "",
    error: str | None = None,
) -> CaseOutcome:
    return CaseOutcome(
        case_id=f"{workflow}-{scenario}{run}",
        workflow=workflow,
        scenario=scenario,
        verdict=verdict,
        expected=expected,
        explanation=f"why {verdict}",
        seconds=12.34,
        error=error,
    )


def text(renderable: object, width: int = 200) -> str:
    console = Console(width=width, no_color=True, highlight=False)
    with console.capture() as captured:
        console.print(renderable)
    return captured.get()


@pytest.mark.parametrize(
    ("case", "kind"),
    [
        (outcome("PASS"), Kind.EXPECTED),
        (outcome("DUPLICATE", ("DUPLICATE", "LOST")), Kind.EXPECTED),
        (outcome("DUPLICATE"), Kind.VIOLATION),
        (outcome("PASS", ("DUPLICATE",)), Kind.VIOLATION),  # a negative control not caught
        (outcome("NO-EVIDENCE"), Kind.HARNESS_ERROR),
        (outcome("NO-EVIDENCE", ("NO-EVIDENCE",)), Kind.EXPECTED),
        (outcome(None, error="setup: the stack did not come up"), Kind.HARNESS_ERROR),
    ],
)
def test_each_outcome_is_expected_a_violation_or_a_harness_error(
    case: CaseOutcome, kind: Kind
) -> None:
    assert case.kind is kind


def test_exit_codes_are_jepsens_and_a_violation_outranks_an_unknown() -> None:
    assert exit_code([outcome("PASS")]) is ExitCode.OK
    assert exit_code([outcome("PASS"), outcome("LOST")]) is ExitCode.VIOLATION
    assert exit_code([outcome("PASS"), outcome("NO-EVIDENCE")]) is ExitCode.HARNESS_ERROR
    assert exit_code([outcome("LOST"), outcome(None, error="x")]) is ExitCode.VIOLATION
    assert exit_code([outcome("PASS")], harness_failed=True) is ExitCode.HARNESS_ERROR


def test_the_grid_puts_workflows_down_and_scenarios_across_in_matrix_order() -> None:
    grid = build_grid(
        [
            outcome("PASS", workflow="b", scenario="retry-no_fault-none"),
            outcome("DUPLICATE", ("DUPLICATE",), workflow="a", scenario="late-no_fault-none"),
            outcome("PASS", workflow="a", scenario="retry-no_fault-none"),
        ],
        order=["retry-no_fault-none", "late-no_fault-none"],
    )
    assert grid.workflows == ["a", "b"]
    assert grid.scenarios == ["retry-no_fault-none", "late-no_fault-none"]
    assert grid.cell("b", "late-no_fault-none") is None
    cell = grid.cell("a", "late-no_fault-none")
    assert cell is not None and cell.caught and cell.label == "D"


def test_a_cell_of_repeated_runs_shows_each_verdict_and_its_worst_kind() -> None:
    runs = [
        outcome("PASS", scenario="concurrent-no_fault-none", run="-r1"),
        outcome("DUPLICATE", scenario="concurrent-no_fault-none", run="-r2"),
        outcome("PASS", scenario="concurrent-no_fault-none", run="-r3"),
    ]
    cell = build_grid(runs).cell("payment_idempotent", "concurrent-no_fault-none")
    assert cell is not None
    assert cell.label == "PD" and cell.kind is Kind.VIOLATION


def test_the_grid_view_has_numbered_columns_a_legend_and_fits_a_terminal() -> None:
    from harness.matrix.cases import scenarios

    order = [s.id for s in scenarios()]
    found = [
        outcome("PASS", workflow=w, scenario=s)
        for w in ("payment_idempotent", "broken_key_from_execution")
        for s in order
    ]
    shown = text(grid_view(build_grid(found, order))).splitlines()
    # Wider than 100 columns, the grid comes in blocks: each a header of column numbers,
    # then a row per workflow; the numbers run on from block to block.
    headers = [line.split() for line in shown if line.strip() and line.replace(" ", "").isdigit()]
    assert len(headers) >= 2
    assert [n for header in headers for n in header] == [str(i) for i in range(1, len(order) + 1)]
    grid = shown[: shown.index(f"  1 {order[0]}")]
    assert max(len(line) for line in grid) <= 100
    assert f"  1 {order[0]}" in shown
    assert any(line.startswith("codes: D=DUPLICATE S=STRAY") for line in shown)


def test_a_case_line_says_verdict_expectation_seconds_id_and_why() -> None:
    line = text(case_line(outcome("DUPLICATE")))
    assert line.split()[:4] == ["DUPLICATE", "UNEXPECTED", "12.3", "s"]
    assert "payment_idempotent-retry-worker_kill-after_commit" in line
    assert "expected PASS: why DUPLICATE" in line
    assert text(case_line(outcome(None, error="setup: boom"))).startswith("ERROR")


def test_totals_count_each_kind() -> None:
    grid = build_grid([outcome("PASS"), outcome("LOST", workflow="x")])
    assert text(totals(grid)).strip() == ("2 cases: 1 as expected, 1 violation, 0 harness errors")


def test_the_summary_file_round_trips_and_gives_the_run_its_exit_code(tmp_path: Path) -> None:
    path = tmp_path / "verdicts.json"
    found = [outcome("PASS"), outcome("NO-EVIDENCE", workflow="x")]
    write_summary(path, summary_doc(found, tmp_path))
    code, back = read_summary(path)
    assert code is ExitCode.HARNESS_ERROR and back == found
    assert run_exit_code(1, path) is ExitCode.HARNESS_ERROR
    write_summary(path, summary_doc([outcome("PASS")], tmp_path))
    assert run_exit_code(0, path) is ExitCode.OK
    assert run_exit_code(1, path) is ExitCode.HARNESS_ERROR  # failed outside the cases
    assert run_exit_code(5, path) is ExitCode.HARNESS_ERROR  # e.g. -k matched nothing
    write_summary(path, summary_doc([outcome("LOST")], tmp_path))
    assert run_exit_code(2, path) is ExitCode.VIOLATION  # interrupted after a violation
    assert run_exit_code(0, tmp_path / "missing.json") is ExitCode.HARNESS_ERROR


def test_a_broken_summary_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "verdicts.json"
    path.write_text("{")
    with pytest.raises(ConfigError, match="not a verdict summary"):
        read_summary(path)


def test_the_outcome_of_saved_evidence() -> None:
    doc = {
        "case": "payment_naive-retry-no_fault-none",
        "workflow": "payment_naive",
        "delivery": "retry",
        "fault": "no_fault",
        "crashpoint": "none",
        "expected": ["PASS"],
        "started_at": 10.0,
        "ended_at": 12.5,
        "verdict": "PASS",
        "explanation": "held",
    }
    found = from_evidence(doc, "/e.json")
    assert (found.scenario, found.seconds, found.kind) == (
        "retry-no_fault-none",
        2.5,
        Kind.EXPECTED,
    )
    cut_short = from_evidence({k: v for k, v in doc.items() if k != "verdict"})
    assert cut_short.kind is Kind.HARNESS_ERROR and cut_short.error is not None


def report(when: str, outcome: str, *props: tuple[str, object]) -> pytest.TestReport:
    return pytest.TestReport(
        "harness/front/suite.py::test_exactly_once[c]",
        ("harness/front/suite.py", 1, "test_exactly_once[c]"),
        {},
        outcome,  # type: ignore[arg-type]
        "RuntimeError: the stack did not come up\nmore" if outcome == "failed" else None,
        when,  # type: ignore[arg-type]
        duration=3.5,
        user_properties=list(props),
    )


CASE = (
    "n8n_chaos_case",
    {"case_id": "c", "workflow": "w", "scenario": "s", "expected": ["PASS"]},
)


def test_a_report_ends_a_case_with_its_call_or_a_failed_setup() -> None:
    from harness.terminal.reporter import outcome_of

    verdict = ("n8n_chaos_verdict", {"verdict": "LOST", "explanation": "gone", "evidence": "e"})
    judged = outcome_of(report("call", "failed", CASE, verdict))
    assert judged is not None
    assert (judged.verdict, judged.kind, judged.seconds) == ("LOST", Kind.VIOLATION, 3.5)
    broken = outcome_of(report("setup", "failed", CASE))
    assert broken is not None and broken.kind is Kind.HARNESS_ERROR
    assert broken.error == "setup: RuntimeError: the stack did not come up"
    assert outcome_of(report("setup", "passed", CASE)) is None
    assert outcome_of(report("teardown", "passed", CASE)) is None
    assert outcome_of(report("call", "passed")) is None  # not a case of the matrix


def test_a_cell_not_as_expected_is_marked_without_colours() -> None:
    """A CI log has no colours: a violation's cell carries a `*` beside its code."""
    order = ["retry-no_fault-none", "retry-worker_kill-after_commit"]
    found = [
        outcome("DUPLICATE", expected=("DUPLICATE",), scenario=order[0]),
        outcome("LOST", scenario=order[1]),
    ]
    row = next(
        line
        for line in text(grid_view(build_grid(found, order))).splitlines()
        if line.startswith("payment_idempotent")
    )
    assert row.split()[1:] == ["D", "L*"]
