"""Rich renderings of outcomes: the line of a case that ended, the verdict grid."""

from __future__ import annotations

from rich.console import Group
from rich.text import Text

from harness.judge.verdicts import VOCABULARY, Verdict
from harness.terminal.grid import ERROR_CODE, Cell, Grid
from harness.terminal.outcome import CaseOutcome, Kind

STYLES = {
    "pass": "green",
    "caught": "cyan",  # a violation the case expects: the harness saw the bug
    Kind.VIOLATION: "bold white on red",
    Kind.HARNESS_ERROR: "bold black on yellow",
}
CELL_WIDTH = 3
NOT_EXPECTED = "*"  # after a cell's code: a violation or a harness error
GRID_WIDTH = 100  # a terminal's columns: a wider grid is shown in blocks


def outcome_style(outcome: CaseOutcome) -> str:
    if outcome.kind is not Kind.EXPECTED:
        return STYLES[outcome.kind]
    return STYLES["pass"] if outcome.verdict == Verdict.PASS else STYLES["caught"]


def _cell_style(cell: Cell) -> str:
    if cell.kind is not Kind.EXPECTED:
        return STYLES[cell.kind]
    return STYLES["caught"] if cell.caught else STYLES["pass"]


def mark(outcome: CaseOutcome) -> str:
    return {
        Kind.EXPECTED: "expected",
        Kind.VIOLATION: "UNEXPECTED",
        Kind.HARNESS_ERROR: "HARNESS ERROR",
    }[outcome.kind]


def case_line(outcome: CaseOutcome) -> Text:
    """``VERDICT  expected  12.3 s  case-id  explanation`` (the explanation last, so a
    narrow terminal cuts it, not the id)."""
    seconds = "    ? s" if outcome.seconds is None else f"{outcome.seconds:5.1f} s"
    line = Text()
    line.append(f"{outcome.verdict or 'ERROR':<12}", style=outcome_style(outcome))
    line.append(f" {mark(outcome):<13} ", style="" if outcome.as_expected else "bold")
    line.append(f"{seconds}  ")
    line.append(outcome.case_id, style="bold")
    why = outcome.error or outcome.explanation
    if not outcome.as_expected:
        why = f"expected {'/'.join(outcome.expected) or 'nothing'}: {why}"
    if why:
        line.append(f"  {why}", style="dim" if outcome.as_expected else "")
    return line


def grid_view(grid: Grid, width: int = GRID_WIDTH) -> Group:
    """The grid, its column legend (numbers -> scenarios) and the code legend. A grid wider
    than ``width`` columns is shown in blocks of scenarios, one under the other."""
    name_width = max((len(w) for w in grid.workflows), default=8)
    per_block = max(1, (width - name_width - 1) // CELL_WIDTH)
    numbered = list(enumerate(grid.scenarios, start=1))
    rows: list[Text] = []
    for start in range(0, len(numbered), per_block):
        if rows:
            rows.append(Text(""))
        rows += _grid_block(grid, numbered[start : start + per_block], name_width)
    legend = [
        Text(f"{i:>3} {scenario}", style="dim") for i, scenario in enumerate(grid.scenarios, 1)
    ]
    return Group(*rows, Text(""), *legend, Text(""), codes_legend())


def _grid_block(grid: Grid, numbered: list[tuple[int, str]], name_width: int) -> list[Text]:
    header = Text(" " * name_width + " ")
    for i, _ in numbered:
        header.append(f"{i:>{CELL_WIDTH}}", style="bold")
    rows = [header]
    for workflow in grid.workflows:
        row = Text(f"{workflow:<{name_width}} ")
        for _, scenario in numbered:
            cell = grid.cell(workflow, scenario)
            if cell is None:
                row.append(f"{'·':>{CELL_WIDTH}}", style="dim")
                continue
            shown = cell.label[: CELL_WIDTH - 1]  # at least one space between cells
            if cell.kind is not Kind.EXPECTED:  # seen without colours too (a CI log)
                shown = shown[: CELL_WIDTH - 2] + NOT_EXPECTED
            row.append(" " * (CELL_WIDTH - len(shown)))
            row.append(shown, style=_cell_style(cell))
        rows.append(row)
    return rows


def codes_legend() -> Text:
    legend = Text("codes: ", style="dim")
    for verdict, info in VOCABULARY.items():
        legend.append(f"{info.code}={verdict} ", style=info.colour)  # the verdict's own colour
    legend.append(f"{ERROR_CODE}=no verdict  ·=not run\ncolours: ", style="dim")
    legend.append("as expected", style=STYLES["pass"])
    legend.append(" ")
    legend.append("caught as expected", style=STYLES["caught"])
    legend.append(" ")
    legend.append("violation", style=STYLES[Kind.VIOLATION])
    legend.append(" ")
    legend.append("harness error", style=STYLES[Kind.HARNESS_ERROR])
    legend.append(f" ({NOT_EXPECTED} after a code: not as expected)", style="dim")
    return legend


def counted(n: int, word: str) -> str:
    """``1 case``, ``2 cases``."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def totals(grid: Grid) -> Text:
    line = Text(f"{counted(len(grid.outcomes), 'case')}: ")
    line.append(f"{grid.count(Kind.EXPECTED)} as expected", style=STYLES["pass"])
    for kind, word in ((Kind.VIOLATION, "violation"), (Kind.HARNESS_ERROR, "harness error")):
        n = grid.count(kind)
        line.append(", ")
        line.append(counted(n, word), style=STYLES[kind] if n else "")
    return line
