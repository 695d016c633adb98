"""The verdict summary of a run: ``verdicts.json`` in the invocation's run directory.

The CLI reads it to choose its exit code; ``n8n-chaos recheck`` compares re-judged verdicts
with it. One JSON object:

    {"format": 1, "exit_code": 0|1|2, "harness_failed": bool, "run_dir": "...",
     "counts": {"expected": n, "violation": n, "harness-error": n},
     "cases": [CaseOutcome.to_json(), ...]}
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.errors import ConfigError
from harness.terminal.outcome import CaseOutcome, ExitCode, Kind, exit_code

SUMMARY_FILE = "verdicts.json"
SUMMARY_FLAG = "--chaos-summary"  # the reporter's option; `n8n-chaos run` passes its own file
FORMAT = 1


def summary_doc(
    outcomes: Sequence[CaseOutcome], run_dir: Path | None, harness_failed: bool = False
) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "exit_code": int(exit_code(outcomes, harness_failed)),
        "harness_failed": harness_failed,
        "run_dir": None if run_dir is None else str(run_dir),
        "counts": {k.value: sum(1 for o in outcomes if o.kind is k) for k in Kind},
        "cases": [o.to_json() for o in outcomes],
    }


def write_summary(path: Path, doc: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    tmp.replace(path)


def read_summary(path: Path) -> tuple[ExitCode, list[CaseOutcome]]:
    try:
        doc = json.loads(path.read_text())
        return ExitCode(doc["exit_code"]), [CaseOutcome.from_json(c) for c in doc["cases"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(
            f"{path}: not a verdict summary ({exc}); it is written by `n8n-chaos run` "
            "into the run directory"
        ) from exc


def run_exit_code(pytest_status: int, summary: Path) -> ExitCode:
    """The exit code of `n8n-chaos run`, from pytest's own and the summary it left:
    a violation the summary shows wins; then anything pytest could not finish (no tests,
    a usage error, an interrupt, a crash) or a summary it never wrote is a harness error."""
    try:
        code, _ = read_summary(summary)
    except ConfigError:
        return ExitCode.HARNESS_ERROR
    if code is ExitCode.VIOLATION:
        return code
    if pytest_status not in (0, 1):
        return ExitCode.HARNESS_ERROR
    if pytest_status == 1 and code is ExitCode.OK:
        return ExitCode.HARNESS_ERROR  # a failure outside the cases (e.g. a stack's teardown)
    return code
