"""The verdict grid: workflows down, scenarios across, each cell the verdicts of that case.

A pure model (no rendering): ``build_grid(outcomes)`` for the terminal, recheck and the
report alike. A cell holds every run of its case (``--chaos-repeat``, concurrent runs).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from harness.judge.verdicts import ERROR_CODE as ERROR_CODE
from harness.judge.verdicts import Verdict, code
from harness.terminal.outcome import CaseOutcome, Kind


@dataclass(frozen=True)
class Cell:
    outcomes: tuple[CaseOutcome, ...]

    @property
    def verdicts(self) -> list[str | None]:
        """The distinct verdicts of the cell's runs, in the order they came."""
        return list(dict.fromkeys(o.verdict for o in self.outcomes))

    @property
    def kind(self) -> Kind:
        """The cell's worst: a violation, else a harness error, else as expected."""
        kinds = {o.kind for o in self.outcomes}
        for worst in (Kind.VIOLATION, Kind.HARNESS_ERROR):
            if worst in kinds:
                return worst
        return Kind.EXPECTED

    @property
    def as_expected(self) -> bool:
        return self.kind is Kind.EXPECTED

    @property
    def caught(self) -> bool:
        """A violation the case expects (a naive workflow or a negative control caught)."""
        return self.as_expected and any(v not in (None, Verdict.PASS) for v in self.verdicts)

    @property
    def label(self) -> str:
        # One letter per verdict (harness/judge/verdicts.py), so twenty scenarios fit a terminal.
        return "".join(code(v) for v in self.verdicts)


@dataclass(frozen=True)
class Grid:
    workflows: list[str]
    scenarios: list[str]
    cells: dict[tuple[str, str], Cell] = field(default_factory=dict)

    def cell(self, workflow: str, scenario: str) -> Cell | None:
        return self.cells.get((workflow, scenario))

    @property
    def outcomes(self) -> list[CaseOutcome]:
        return [o for cell in self.cells.values() for o in cell.outcomes]

    def count(self, kind: Kind) -> int:
        return sum(1 for o in self.outcomes if o.kind is kind)


def build_grid(outcomes: Iterable[CaseOutcome], order: Sequence[str] = ()) -> Grid:
    """Group outcomes by (workflow, scenario). Scenarios follow ``order`` (e.g. the matrix's
    ``[s.id for s in harness.matrix.cases.scenarios()]``), the rest alphabetically; workflows are
    alphabetical."""
    grouped: dict[tuple[str, str], list[CaseOutcome]] = {}
    for outcome in outcomes:
        grouped.setdefault((outcome.workflow, outcome.scenario), []).append(outcome)
    rank = {scenario: i for i, scenario in enumerate(order)}
    scenarios = sorted({s for _, s in grouped}, key=lambda s: (rank.get(s, len(rank)), s))
    workflows = sorted({w for w, _ in grouped})
    cells = {
        where: Cell(tuple(sorted(found, key=lambda o: o.case_id)))
        for where, found in grouped.items()
    }
    return Grid(workflows, scenarios, cells)
