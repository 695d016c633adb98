"""Findings in the Allure report: one test per probe and n8n version (suite "findings"), its
question and answer on the test's page, the answer's facts as parameters and the evidence as
an attachment. Passed: the probe established its answer (whatever n8n does is a finding, not
a failure); broken: UNDETERMINED (the window was not struck: said, never guessed); skipped: the
version could not run (npm could not install it).

Built from findings.json (``harness.findings.report``), written with allure-commons' file
logger as the pytest plugin writes the matrix's results: ``n8n-chaos report`` reads all.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from html import escape
from pathlib import Path
from typing import Any

from allure_commons.logger import AllureFileLogger
from allure_commons.model2 import Label, Parameter, Status, StatusDetails, TestResult

from harness.findings.base import UNDETERMINED
from harness.report.allure_report import attach_data

SUITE = "findings"


def probe_result(
    name: str, probe: dict[str, Any], version: str, result: dict[str, Any]
) -> TestResult:
    answer = str(result.get("answer"))
    now = round(time.time() * 1000)
    took = round(float(result.get("duration_s") or 0.0) * 1000)
    facts = result.get("facts") or {}
    return TestResult(
        uuid=str(uuid.uuid4()),
        historyId=hashlib.md5(f"findings:{name}:{version}".encode()).hexdigest(),
        fullName=f"n8n-chaos.findings.{name}.{version}",
        name=f"{name} on n8n {version}",
        status=Status.BROKEN if answer == UNDETERMINED else Status.PASSED,
        statusDetails=StatusDetails(message=f"{answer}: {result.get('why', '')}"),
        descriptionHtml=(
            f"<p><b>{escape(str(probe.get('question', '')))}</b></p>"
            f"<p>n8n {escape(version)}: <b>{escape(answer)}</b></p>"
            f"<p>{escape(str(result.get('why', '')))}</p>"
        ),
        parameters=[
            Parameter(name=str(k), value=json.dumps(v, default=str)) for k, v in facts.items()
        ],
        labels=[
            Label(name="parentSuite", value=SUITE),
            Label(name="suite", value=name),
            Label(name="tag", value=f"n8n {version}"),
        ],
        start=now - took,
        stop=now,
    )


def write_findings(results_dir: Path, doc: dict[str, Any]) -> int:
    """A test per probe and version (and one per version that did not run), each with its
    evidence attached; returns how many tests were written."""
    logger = AllureFileLogger(str(results_dir))
    written = 0
    for version, state in sorted((doc.get("versions") or {}).items()):
        if not state.get("ran"):
            now = round(time.time() * 1000)
            skipped = TestResult(
                uuid=str(uuid.uuid4()),
                historyId=hashlib.md5(f"findings:version:{version}".encode()).hexdigest(),
                fullName=f"n8n-chaos.findings.version.{version}",
                name=f"n8n {version} not run",
                status=Status.SKIPPED,
                statusDetails=StatusDetails(message=str(state.get("error"))),
                labels=[Label(name="parentSuite", value=SUITE)],
                start=now,
                stop=now,
            )
            logger.report_result(skipped)
            written += 1
    for name, probe in sorted((doc.get("probes") or {}).items()):
        for version, result in sorted((probe.get("results") or {}).items()):
            test = probe_result(name, probe, version, result)
            evidence = json.dumps(result, indent=2, default=str)
            attach_data(logger, test, "evidence.json", evidence, "application/json", "json")
            logger.report_result(test)
            written += 1
    return written
