"""One case's result, as the terminal, the summary file, recheck and the report see it.

Exit codes follow Jepsen: a verdict the case did not expect is a violation (1); a case that
could not be judged (NO-EVIDENCE where it was not expected, a harness error, a stack that
never came up) is unknown (2); a violation outranks an unknown, as in Jepsen's merge.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from enum import IntEnum, StrEnum
from typing import Any

from harness.judge.verdicts import Verdict

NO_EVIDENCE = Verdict.NO_EVIDENCE.value


class Kind(StrEnum):
    EXPECTED = "expected"  # the verdict is one the case expects
    VIOLATION = "violation"  # a verdict the case does not expect
    HARNESS_ERROR = "harness-error"  # no verdict, or NO-EVIDENCE where it was not expected


class ExitCode(IntEnum):
    OK = 0
    VIOLATION = 1
    HARNESS_ERROR = 2


@dataclass(frozen=True)
class CaseOutcome:
    case_id: str
    workflow: str
    scenario: str  # <delivery>-<fault>-<crash point>
    verdict: str | None  # None: the case never reached a verdict (a harness error)
    expected: tuple[str, ...]
    explanation: str = ""
    seconds: float | None = None
    evidence: str | None = None  # path of the case's evidence.json
    error: str | None = None  # the harness error, when there is one

    @property
    def kind(self) -> Kind:
        if self.error is not None or self.verdict is None:
            return Kind.HARNESS_ERROR
        if self.verdict in self.expected:
            return Kind.EXPECTED
        return Kind.HARNESS_ERROR if self.verdict == NO_EVIDENCE else Kind.VIOLATION

    @property
    def as_expected(self) -> bool:
        return self.kind is Kind.EXPECTED

    def to_json(self) -> dict[str, Any]:
        return asdict(self) | {"expected": list(self.expected), "kind": self.kind.value}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> CaseOutcome:
        return cls(
            case_id=str(doc["case_id"]),
            workflow=str(doc["workflow"]),
            scenario=str(doc["scenario"]),
            verdict=doc.get("verdict"),
            expected=tuple(doc.get("expected") or ()),
            explanation=str(doc.get("explanation") or ""),
            seconds=doc.get("seconds"),
            evidence=doc.get("evidence"),
            error=doc.get("error"),
        )


def scenario_of(delivery: str, fault: str, crashpoint: str) -> str:
    """The scenario id, as ``harness.matrix.cases.Scenario.id`` spells it."""
    return f"{delivery}-{fault}-{crashpoint}"


def from_evidence(doc: Mapping[str, Any], path: str | None = None) -> CaseOutcome:
    """The outcome an ``evidence.json`` records (a case cut short has no verdict)."""
    ended, started = doc.get("ended_at"), doc.get("started_at")
    verdict = doc.get("verdict")
    return CaseOutcome(
        case_id=str(doc["case"]),
        workflow=str(doc["workflow"]),
        scenario=scenario_of(str(doc["delivery"]), str(doc["fault"]), str(doc["crashpoint"])),
        verdict=verdict,
        expected=tuple(doc.get("expected") or ()),
        explanation=str(doc.get("explanation") or ""),
        seconds=None if ended is None or started is None else float(ended) - float(started),
        evidence=path,
        error=None if verdict is not None else "the case ended before it was judged",
    )


def exit_code(outcomes: Iterable[CaseOutcome], harness_failed: bool = False) -> ExitCode:
    """0: every verdict as expected; 1: a violation; 2: no violation but something unknown
    (``harness_failed``: the run itself broke, e.g. the stack never came up)."""
    kinds = {o.kind for o in outcomes}
    if Kind.VIOLATION in kinds:
        return ExitCode.VIOLATION
    if Kind.HARNESS_ERROR in kinds or harness_failed:
        return ExitCode.HARNESS_ERROR
    return ExitCode.OK
