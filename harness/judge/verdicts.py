"""The verdict vocabulary, defined once: each verdict's name, grid code, colour, label, meaning.

Everything that names a verdict reads it from here: the oracle (``Verdict.violation``), the
manifest model (the verdicts a negative control may name, its JSON Schema), the terminal grid
(codes, legend), the report (category labels, legend colours) and ``n8n-chaos list
--verdicts``. A new verdict is one member of :class:`Verdict` and one entry of
:data:`VOCABULARY`; ``harness.judge.oracle.judge`` decides when it is given.

Order is the oracle's precedence: a definite violation outranks the others, PASS comes last.
One exception: a 2xx with no commit is LOST whatever the ledger says (its explanation names
the ledger too); a ledger that disagrees is CONTRADICTED otherwise.
The colour is the verdict's own (green: the promise held; red: a violation; amber: a harness
error). A grid cell is coloured by its outcome instead (``harness.terminal.outcome.Kind``),
because the same verdict is a bug caught in one case and a violation in another.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.table import Table

# The report's palette; the terminal renders the same hex colours.
GREEN = "#2e9d4e"
BLUE = "#2f6db5"
RED = "#d64545"
AMBER = "#e0a100"

ERROR_CODE = "!"  # the grid's code for a case that never reached a verdict


class Verdict(StrEnum):
    """What the oracle says about one business key, in order of precedence."""

    DUPLICATE = "DUPLICATE"
    STRAY = "STRAY"
    CONTRADICTED = "CONTRADICTED"
    LOST = "LOST"
    NOT_DONE = "NOT-DONE"
    UNHANDLED = "UNHANDLED"
    UNRECONCILED = "UNRECONCILED"
    STUCK = "STUCK"
    NO_EVIDENCE = "NO-EVIDENCE"
    PASS = "PASS"

    @property
    def info(self) -> VerdictInfo:
        return VOCABULARY[self]

    @property
    def violation(self) -> bool:
        """A broken promise (what a negative control must produce), not a harness error."""
        return self.info.violation


@dataclass(frozen=True)
class VerdictInfo:
    code: str  # one character in the verdict grid
    colour: str  # "#rrggbb", for the terminal and the report
    label: str  # a few words: the report's category name
    meaning: str  # one line: when the oracle gives it
    violation: bool  # a broken promise; False: the promise held, or the harness failed


def _violation(code: str, label: str, meaning: str) -> VerdictInfo:
    return VerdictInfo(code, RED, label, meaning, violation=True)


VOCABULARY: Mapping[Verdict, VerdictInfo] = MappingProxyType(
    {
        Verdict.DUPLICATE: _violation(
            "D",
            "Duplicate effect",
            "the provider committed the effect >= 2 times for one business event",
        ),
        Verdict.STRAY: _violation(
            "S",
            "Commit nobody accounts for",
            "the provider committed something else during the case: another reference or "
            "another effect kind",
        ),
        Verdict.CONTRADICTED: _violation(
            "C",
            "Sender told the opposite of the truth",
            "the sender was told the opposite of the ground truth (a definite failure while "
            "the effect committed, a 2xx naming another effect, a ledger that disagrees; a "
            "2xx with no commit is LOST whatever the ledger says)",
        ),
        Verdict.LOST: _violation(
            "L",
            "Lost effect",
            "the sender got a 2xx and nothing was committed (after the work settled)",
        ),
        Verdict.NOT_DONE: _violation(
            "N",
            "Effect never happened",
            "the workflow promised the effect exactly once and it never happened, though the "
            "provider did not decline it",
        ),
        Verdict.UNHANDLED: _violation(
            "H",
            "Error Workflow did not handle it",
            "retries ran out and the Error Workflow did not run exactly once, or left the "
            "operation in no failed (actionable) state",
        ),
        Verdict.UNRECONCILED: _violation(
            "U",
            "Unreconciled effect",
            "the workflow's ledger still says unknown / in flight (with no ledger row: the "
            "effect committed, but the sender heard only 'unknown, retry')",
        ),
        Verdict.STUCK: _violation(
            "K",
            "Never settled (n8n finding)",
            "the case never settled: an execution was still live at the deadline",
        ),
        Verdict.NO_EVIDENCE: VerdictInfo(
            "?",
            AMBER,
            "Fault never landed",
            "the fault is not proven to have struck inside its window: a harness error, "
            "never a pass",
            violation=False,
        ),
        Verdict.PASS: VerdictInfo(
            "P",
            GREEN,
            "Promise held",
            "the promise held, and the fault is proven to have landed",
            violation=False,
        ),
    }
)

VIOLATIONS: tuple[Verdict, ...] = tuple(v for v in VOCABULARY if VOCABULARY[v].violation)
_BY_NAME: Mapping[str, VerdictInfo] = {v.value: info for v, info in VOCABULARY.items()}


def code(verdict: str | None) -> str:
    """The verdict's grid code; ``!`` for no verdict, the first letter of an unknown name."""
    if verdict is None:
        return ERROR_CODE
    known = _BY_NAME.get(verdict)
    return known.code if known else verdict[:1]


def vocabulary_table() -> Table:
    """``n8n-chaos list --verdicts``: every verdict, its code, whether it is a violation and
    what it means, in order of precedence."""
    from rich.table import Table  # the oracle and the manifest model import this module: no UI
    from rich.text import Text

    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for column in ("verdict", "code", "violation", "meaning"):
        table.add_column(column, overflow="fold", no_wrap=column != "meaning")
    for verdict, info in VOCABULARY.items():
        table.add_row(
            Text(verdict.value, style=f"bold {info.colour}"),
            info.code,
            "yes" if info.violation else "no",
            info.meaning,
        )
    return table


def print_vocabulary() -> None:
    """The table on standard output (coloured on a terminal, plain in a pipe)."""
    from rich.console import Console

    Console(highlight=False).print(vocabulary_table())
