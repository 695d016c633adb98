"""The verdict grid as HTML: workflows down, scenarios across, one coloured cell per case.

The report puts it first (``harness.report.build`` injects it at the top of the single
file) and as a global attachment. Its data are the Allure results themselves (each case's
result carries ``workflow``, ``scenario``, ``verdict`` and ``expected`` labels), so a report
merged from several CI shards draws one grid of every case.

Colours: green, the verdict the case expects is PASS; blue, a verdict other than PASS the
case expects (a naive workflow or a negative control caught: the harness sees the bug it
must see; or what an at-most-once promise allows);
red, a verdict the case does not expect; amber, no verdict (a harness error).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from html import escape
from pathlib import Path
from typing import Any

from harness.judge.verdicts import AMBER, BLUE, GREEN, RED, VOCABULARY
from harness.terminal.grid import ERROR_CODE, Cell, Grid, build_grid
from harness.terminal.outcome import CaseOutcome, Kind
from harness.terminal.view import counted

GRID_ID = "n8n-chaos-grid"

_STYLE = f"""
#{GRID_ID} {{ font: 13px/1.4 Helvetica, Arial, sans-serif; color: #222; background: #fff;
  padding: 12px 16px; border-bottom: 2px solid #ccd; overflow-x: auto; }}
#{GRID_ID} h2 {{ font-size: 16px; margin: 0 0 4px; }}
#{GRID_ID} p {{ margin: 2px 0 8px; }}
#{GRID_ID} table {{ border-collapse: collapse; }}
#{GRID_ID} th, #{GRID_ID} td {{ border: 1px solid #d8dce0; padding: 0; }}
#{GRID_ID} th.wf {{ text-align: left; padding: 2px 8px; white-space: nowrap; }}
#{GRID_ID} th.sc {{ vertical-align: bottom; padding: 4px 2px; }}
#{GRID_ID} th.sc span {{ writing-mode: vertical-rl; transform: rotate(180deg);
  white-space: nowrap; font-weight: normal; font-size: 11px; }}
#{GRID_ID} td {{ width: 26px; min-width: 26px; height: 22px; text-align: center;
  font: bold 12px monospace; color: #fff; }}
#{GRID_ID} td.expected {{ background: {GREEN}; }}
#{GRID_ID} td.caught {{ background: {BLUE}; }}
#{GRID_ID} td.violation {{ background: {RED}; }}
#{GRID_ID} td.harness-error {{ background: {AMBER}; }}
#{GRID_ID} td.none {{ background: #f4f6f8; }}
#{GRID_ID} td a {{ color: #fff; text-decoration: none; display: block; }}
#{GRID_ID} .key span {{ display: inline-block; padding: 0 6px; margin-right: 6px; color: #fff;
  border-radius: 3px; }}
#{GRID_ID} details > summary {{ cursor: pointer; font-weight: bold; }}
"""


def cell_class(cell: Cell | None) -> str:
    if cell is None:
        return "none"
    if cell.caught:
        return "caught"
    return cell.kind.value


def _cell_title(cell: Cell) -> str:
    lines = []
    for o in cell.outcomes:
        state = o.kind.value if not o.as_expected else "as expected"
        lines.append(
            f"{o.case_id}: {o.verdict or 'no verdict'} ({state}; expected "
            f"{'/'.join(o.expected) or '?'})"
        )
        if o.explanation or o.error:
            lines.append("  " + (o.error or o.explanation)[:300])
    return "\n".join(lines)


def _headline(grid: Grid) -> str:
    total = len(grid.outcomes)
    if not total:
        return "no cases in these results"
    caught = sum(1 for c in grid.cells.values() for o in c.outcomes if c.caught and o.verdict)
    violations, errors = grid.count(Kind.VIOLATION), grid.count(Kind.HARNESS_ERROR)
    parts = [counted(total, "case")]
    if not violations and not errors:
        parts.append("every verdict as expected")
    else:
        parts.append(f"{grid.count(Kind.EXPECTED)} as expected")
    if violations:
        parts.append(counted(violations, "violation"))
    if errors:
        parts.append(counted(errors, "harness error"))
    line = ", ".join(parts)
    if caught:
        line += (
            f" ({caught} of them not PASS, as the case expects: a bug caught, or what its "
            "promise allows)"
        )
    return line


def _cell_body(cell: Cell, links: Mapping[str, str]) -> str:
    """The cell's codes, linked to its case in the report (the first one not as expected)."""
    chosen = next((o for o in cell.outcomes if not o.as_expected), cell.outcomes[0])
    href = links.get(chosen.case_id)
    label = escape(cell.label)
    return f'<a href="{escape(href)}">{label}</a>' if href else label


def grid_fragment(grid: Grid, links: Mapping[str, str] | None = None) -> str:
    """A self-contained ``<section>`` (styles scoped to its id), to put in any page.
    ``links``: case id -> where its test is (in the report: ``#/<test result id>``)."""
    head = "".join(
        f'<th class="sc" title="{escape(s)}"><span>{escape(s)}</span></th>' for s in grid.scenarios
    )
    rows = []
    for workflow in grid.workflows:
        cells = []
        for scenario in grid.scenarios:
            cell = grid.cell(workflow, scenario)
            if cell is None:
                cells.append('<td class="none" title="not in this run"></td>')
                continue
            cells.append(
                f'<td class="{cell_class(cell)}" data-workflow="{escape(workflow)}" '
                f'data-scenario="{escape(scenario)}" title="{escape(_cell_title(cell))}">'
                f"{_cell_body(cell, links or {})}</td>"
            )
        rows.append(f'<tr><th class="wf">{escape(workflow)}</th>{"".join(cells)}</tr>')
    codes = ", ".join(
        f'<b style="color:{info.colour}">{escape(info.code)}</b> {escape(verdict)}'
        for verdict, info in VOCABULARY.items()
    )
    return (
        f'<section id="{GRID_ID}"><style>{_STYLE}</style>'
        "<details open><summary>Verdict grid: which workflow survives which fault</summary>"
        f'<p class="headline">{escape(_headline(grid))}</p>'
        f'<table><thead><tr><th class="wf">workflow \\ scenario</th>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
        f'<p class="key"><span style="background:{GREEN}">PASS as expected</span>'
        f'<span style="background:{BLUE}">not PASS, as expected</span>'
        f'<span style="background:{RED}">violation</span>'
        f'<span style="background:{AMBER}">harness error</span> '
        f"Cells: {codes}, {ERROR_CODE} no verdict. Hover a cell for its cases and why; scenario = "
        "delivery-fault-crash point.</p></details></section>"
    )


def grid_page(grid: Grid) -> str:
    """The grid as a whole HTML document (the report's global attachment)."""
    return (
        '<!DOCTYPE html><html><head><meta charset="utf-8"><title>Verdict grid</title></head>'
        f"<body>{grid_fragment(grid)}</body></html>\n"
    )


# -- the grid's data: each case's labels in the Allure results -------------------------
def label_map(result: Mapping[str, Any]) -> dict[str, str]:
    return {str(x.get("name")): str(x.get("value")) for x in result.get("labels") or []}


def outcome_of_result(result: Mapping[str, Any]) -> CaseOutcome | None:
    """A case's outcome from its Allure result (None: not a chaos case)."""
    labels = label_map(result)
    if "workflow" not in labels or "scenario" not in labels:
        return None
    verdict = labels.get("verdict") or None
    status = str(result.get("status"))
    details = result.get("statusDetails") or {}
    error = None
    if verdict is None:
        error = str(details.get("message") or f"no verdict (test {status})")[:500]
    start, stop = result.get("start"), result.get("stop")
    return CaseOutcome(
        case_id=labels.get("case", str(result.get("name"))),
        workflow=labels["workflow"],
        scenario=labels["scenario"],
        verdict=verdict,
        expected=tuple(v for v in labels.get("expected", "").split("/") if v),
        explanation=str(details.get("message") or "")[:500],
        seconds=(stop - start) / 1000 if isinstance(start, int) and isinstance(stop, int) else None,
        error=error,
    )


def outcomes_from_results(results_dir: Path) -> list[CaseOutcome]:
    """Every case in an Allure results folder; a case run twice counts its last result."""
    latest: dict[str, tuple[int, CaseOutcome]] = {}
    for path in sorted(results_dir.glob("*-result.json")):
        try:
            result = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # a half-written file of a killed run: the rest still makes a grid
        outcome = outcome_of_result(result)
        if outcome is None:
            continue
        stop = int(result.get("stop") or 0)
        if outcome.case_id not in latest or latest[outcome.case_id][0] <= stop:
            latest[outcome.case_id] = (stop, outcome)
    return [o for _, o in latest.values()]


def grid_of_results(results_dir: Path, order: Iterable[str] = ()) -> Grid:
    return build_grid(outcomes_from_results(results_dir), list(order))
