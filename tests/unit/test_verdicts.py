"""The verdict vocabulary is defined once (harness/judge/verdicts.py) and every consumer reads
it."""

from __future__ import annotations

import re

from click.testing import CliRunner
from rich.console import Console

from harness.front.cli import main
from harness.judge import oracle
from harness.judge.verdicts import ERROR_CODE, VIOLATIONS, VOCABULARY, Verdict
from harness.report.allure_report import CATEGORIES, CATEGORIES_V3
from harness.report.grid_html import grid_fragment
from harness.terminal.grid import build_grid, code
from harness.terminal.outcome import NO_EVIDENCE, CaseOutcome
from harness.terminal.view import codes_legend
from harness.workflow.manifest_model import NEGATIVE_CONTROL_VERDICTS, json_schema


def test_every_verdict_has_exactly_one_entry_with_a_unique_one_letter_code() -> None:
    assert list(VOCABULARY) == list(Verdict)  # every member once, in precedence order
    codes = [info.code for info in VOCABULARY.values()]
    assert all(len(c) == 1 for c in codes)
    assert len(set(codes)) == len(codes)
    assert ERROR_CODE not in codes
    labels = [info.label for info in VOCABULARY.values()]
    assert len(set(labels)) == len(labels)
    assert all(re.fullmatch(r"#[0-9a-f]{6}", info.colour) for info in VOCABULARY.values())
    assert all(info.meaning and "\n" not in info.meaning for info in VOCABULARY.values())


def test_precedence_ends_with_the_harness_error_then_the_pass() -> None:
    assert list(Verdict)[-2:] == [Verdict.NO_EVIDENCE, Verdict.PASS]
    assert tuple(Verdict)[:-2] == VIOLATIONS


def test_the_oracle_reads_its_verdicts_and_violations_from_the_vocabulary() -> None:
    assert oracle.Verdict is Verdict
    assert {v for v, info in VOCABULARY.items() if info.violation} == oracle.VIOLATIONS
    assert all(v.violation is VOCABULARY[v].violation for v in Verdict)


def test_a_negative_control_may_name_every_violation_and_the_schema_says_so() -> None:
    assert tuple(v.value for v in VIOLATIONS) == NEGATIVE_CONTROL_VERDICTS
    caught_by = json_schema()["$defs"]["NegativeControl"]["properties"]["caught_by"]
    assert caught_by["additionalProperties"]["enum"] == list(NEGATIVE_CONTROL_VERDICTS)
    for verdict in VIOLATIONS:
        assert f"{verdict}: {verdict.info.meaning}." in caught_by["description"]


def test_the_terminal_grid_codes_and_legend_are_the_vocabulary() -> None:
    assert [code(v) for v in Verdict] == [info.code for info in VOCABULARY.values()]
    assert code(None) == ERROR_CODE
    assert NO_EVIDENCE == Verdict.NO_EVIDENCE
    console = Console(width=400, no_color=True, highlight=False)
    with console.capture() as captured:
        console.print(codes_legend())
    first = captured.get().splitlines()[0]
    shown = " ".join(f"{info.code}={v}" for v, info in VOCABULARY.items())
    assert first.startswith(f"codes: {shown} {ERROR_CODE}=no verdict")
    legend = codes_legend()
    for verdict, info in VOCABULARY.items():  # each code in its verdict's colour
        start = legend.plain.index(f"{info.code}={verdict} ")
        assert any(s.start == start and str(s.style) == info.colour for s in legend.spans)


def test_the_report_grid_key_shows_every_code_in_its_colour() -> None:
    case = CaseOutcome("w-s", "w", "s", "PASS", ("PASS",))
    html = grid_fragment(build_grid([case]))
    for verdict, info in VOCABULARY.items():
        assert f'<b style="color:{info.colour}">{info.code}</b> {verdict}' in html


def test_the_report_categories_are_named_by_the_vocabulary_labels() -> None:
    v2 = [c["name"] for c in CATEGORIES]
    v3 = [c["name"] for c in CATEGORIES_V3]
    for verdict in VIOLATIONS:
        assert verdict.info.label in v2
        assert f"{verdict}: {verdict.info.label} (violation)" in v3
        assert f"{verdict}: as the case expects" in v3
    no_evidence = Verdict.NO_EVIDENCE
    assert f"Harness error: {no_evidence.info.label}" in v2
    assert f"{no_evidence}: {no_evidence.info.label} (harness error)" in v3


def test_list_verdicts_prints_every_verdict_its_code_and_meaning() -> None:
    result = CliRunner().invoke(main, ["list", "--verdicts"], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    rows = [line.split(None, 3) for line in result.output.splitlines()[1:]]
    assert [row[0] for row in rows] == [v.value for v in Verdict]
    for (name, letter, violation, meaning), (verdict, info) in zip(
        rows, VOCABULARY.items(), strict=True
    ):
        assert (name, letter, meaning.strip()) == (verdict, info.code, info.meaning)
        assert violation == ("yes" if info.violation else "no")
