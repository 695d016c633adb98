"""An exploration in the Allure report: one test per workflow (suite "exploration"), its
node strip on the test's page with the failing nodes marked, one step per probe (failed: a
violation of the promise; broken: no verdict; skipped: left by the budget or a gap no
outside part can hold) and the strip and explore.json as attachments.

Built from the report's JSON (``harness.explore.findings.to_json``), so a cached exploration
is reported the same way as a fresh one. Written with allure-commons' file logger, as the
pytest plugin writes the matrix's results: ``n8n-chaos report`` reads both.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Mapping
from html import escape
from pathlib import Path
from typing import Any

from allure_commons.logger import AllureFileLogger
from allure_commons.model2 import (
    Label,
    Parameter,
    Status,
    StatusDetails,
    TestResult,
    TestStepResult,
)

from harness.explore.findings import VIOLATION_MARK, WINDOW_MARK
from harness.report.allure_report import attach_data

SUITE = "exploration"


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


def strip_html(doc: Mapping[str, Any]) -> str:
    """The strip with the marked nodes in red (a violation) or amber (a window allowed)."""
    cells = []
    for cell in str(doc.get("strip", "")).split(" ─ "):
        colour = (
            "#c62828"
            if cell.endswith(f" {VIOLATION_MARK}")
            else "#ef6c00"
            if cell.endswith(f" {WINDOW_MARK}")
            else None
        )
        text = escape(cell)
        cells.append(f'<b style="color:{colour}">{text}</b>' if colour else text)
    legend = "".join(f"<li>{escape(str(line))}</li>" for line in doc.get("strip_legend") or [])
    return f'<p style="font-family:monospace">{" ─ ".join(cells)}</p>' + (
        f"<ul>{legend}</ul>" if legend else ""
    )


def _step(outcome: Mapping[str, Any], at: int) -> TestStepResult:
    verdict = outcome.get("verdict")
    status = (
        Status.BROKEN
        if verdict is None
        else Status.FAILED
        if outcome.get("violation")
        else Status.PASSED
    )
    return TestStepResult(
        name=(
            f"{outcome['boundary']}:{outcome['strike']} {verdict or 'HARNESS-ERROR'}: "
            f"{outcome.get('boundary_named', '')}"
        ),
        status=status,
        statusDetails=StatusDetails(
            message=str(outcome.get("explanation") or ""),
            trace=f"reproduce: {outcome.get('reproduce', '')}\nevidence: {outcome.get('evidence')}",
        ),
        parameters=[
            Parameter(name="case", value=str(outcome.get("case"))),
            Parameter(name="allowed by promise", value=str(outcome.get("allowed_by_promise"))),
        ],
        start=at,
        stop=at,
    )


def _skipped(name: str, at: int) -> TestStepResult:
    return TestStepResult(name=name, status=Status.SKIPPED, start=at, stop=at)


def exploration_result(doc: Mapping[str, Any], cached: str = "") -> TestResult:
    """The Allure test of one workflow's exploration; ``cached``: the cache key it came from."""
    workflow = str(doc["workflow"])
    outcomes = list(doc.get("outcomes") or [])
    now = _ms(time.time())
    steps = [_step(o, now) for o in outcomes]
    steps += [_skipped(f"{s}: not run (budget)", now) for s in doc.get("not_run") or []]
    steps += [
        _skipped(f"gap {g['after']!r} → {g['before']!r}: NO-EVIDENCE (not struck)", now)
        for g in doc.get("gaps") or []
        if not g.get("struck_by")
    ]
    violations = [o for o in outcomes if o.get("violation")]
    if doc.get("control_violation"):  # broken with nothing struck: the first finding
        violations.insert(
            0,
            {
                "verdict": doc["control_violation"],
                "boundary_named": "nothing was broken (the trace's control case)",
                "explanation": "the workflow breaks its promise on its own",
            },
        )
    errors = [o for o in outcomes if o.get("verdict") is None]
    status = Status.FAILED if violations else Status.BROKEN if errors else Status.PASSED
    message = (
        f"{violations[0]['verdict']} where {violations[0]['boundary_named']}: "
        f"{violations[0]['explanation']}"
        if violations
        else f"{len(errors)} probe(s) without a verdict"
        if errors
        else f"{len(outcomes)} probe(s), no violation of promise {doc.get('promise')!r}"
    )
    return TestResult(
        uuid=str(uuid.uuid4()),
        historyId=hashlib.md5(f"explore:{workflow}".encode()).hexdigest(),
        fullName=f"n8n-chaos.explore.{workflow}",
        name=f"explore {workflow}" + (f" (cached {cached})" if cached else ""),
        status=status,
        statusDetails=StatusDetails(message=message),
        descriptionHtml=strip_html(doc),
        labels=[
            Label(name="parentSuite", value=SUITE),
            Label(name="suite", value=workflow),
            Label(name="workflow", value=workflow),
            Label(name="tag", value="explore"),
        ],
        steps=steps,
        start=now,
        stop=now,
    )


def write_exploration(results_dir: Path, doc: Mapping[str, Any], cached: str = "") -> Path:
    """Write the test and its attachments (the strip, explore.json) to ``results_dir``."""
    logger = AllureFileLogger(str(results_dir))
    result = exploration_result(doc, cached)
    strip_text = "\n".join([str(doc.get("strip", "")), *map(str, doc.get("strip_legend") or [])])
    for name, body, kind, ext in (
        ("node strip", strip_text, "text/plain", "txt"),
        ("explore.json", json.dumps(doc, indent=2, default=str), "application/json", "json"),
    ):
        attach_data(logger, result, name, body, kind, ext)
    logger.report_result(result)
    return results_dir / f"{result.uuid}-result.json"
