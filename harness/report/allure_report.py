"""Allure: labels, the verdict, the case's steps, timeline and evidence as attachments.

Verdict mapping (Jepsen's priorities): an expected verdict passes; an unexpected violation
fails ("Product defects"); NO-EVIDENCE is a harness error ("broken"). Category names are the
verdicts' labels (``harness.judge.verdicts``).
Each case's result carries the labels the report's grid and categories read: ``workflow``,
``scenario`` (delivery-fault-crash point), ``case``, ``expected`` and, once judged,
``verdict``. ``categories.json`` (Allure 2) and :data:`CATEGORIES_V3` (Allure 3, in the
report's config) group the results by verdict.
"""

from __future__ import annotations

import json
import platform
import uuid
from base64 import b64encode
from collections.abc import Mapping
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

import allure
from allure_commons.logger import AllureFileLogger
from allure_commons.model2 import Attachment, TestResult

from harness.judge.verdicts import VIOLATIONS, Verdict
from harness.report.steps import apply_evidence_steps
from harness.report.timeline_svg import render_svg

if TYPE_CHECKING:
    from harness.engine.runner import CaseResult
    from harness.matrix.cases import Case

_VIOLATIONS = {v.value: v.info.label for v in VIOLATIONS}
_NO_EVIDENCE = Verdict.NO_EVIDENCE
CATEGORIES = [
    *(
        {"name": name, "messageRegex": f"(?s).*{verdict} where .*", "matchedStatuses": ["failed"]}
        for verdict, name in _VIOLATIONS.items()
    ),
    {
        "name": f"Harness error: {_NO_EVIDENCE.info.label}",
        "messageRegex": f".*{_NO_EVIDENCE}.*",
        "matchedStatuses": ["broken", "failed"],
    },
    {"name": "Harness error", "matchedStatuses": ["broken"]},
]
# Allure 3 matches labels: one category per verdict, a violation apart from a bug caught.
CATEGORIES_V3: list[dict[str, Any]] = [
    *(
        {
            "name": f"{verdict}: {name} (violation)",
            "matchers": {"statuses": ["failed"], "labels": {"verdict": f"^{verdict}$"}},
            "expand": True,
        }
        for verdict, name in _VIOLATIONS.items()
    ),
    {
        "name": f"{_NO_EVIDENCE}: {_NO_EVIDENCE.info.label} (harness error)",
        "matchers": {"labels": {"verdict": f"^{_NO_EVIDENCE}$"}, "statuses": ["broken", "failed"]},
    },
    {"name": "Harness error: no verdict", "matchers": {"statuses": ["broken"]}},
    *(
        {
            "name": f"{verdict}: as the case expects",
            "matchers": {"statuses": ["passed"], "labels": {"verdict": f"^{verdict}$"}},
        }
        for verdict in _VIOLATIONS
    ),
]


def label_case(case: Case) -> None:
    allure.dynamic.title(case.id)  # the report's grid links cells to tests by this name
    allure.dynamic.parent_suite("exactly-once matrix")
    allure.dynamic.suite(case.workflow)
    allure.dynamic.sub_suite(case.scenario.id)
    allure.dynamic.tag(case.delivery, case.fault, case.crashpoint)
    allure.dynamic.label("workflow", case.workflow)
    allure.dynamic.label("scenario", case.scenario.id)
    allure.dynamic.label("case", case.id)
    allure.dynamic.label("expected", "/".join(sorted(v.value for v in case.expected)))
    allure.dynamic.label("delivery", case.delivery)
    allure.dynamic.label("fault", case.fault)
    allure.dynamic.label("crashpoint", case.crashpoint)
    allure.dynamic.description(
        f"Workflow **{case.workflow}**, delivery **{case.delivery}**, fault **{case.fault}** "
        f"at crash point **{case.crashpoint}** (run {case.run_no} of {case.runs}); expected: "
        f"{', '.join(sorted(v.value for v in case.expected))}."
    )


def attach_result(result: CaseResult, reset_from: float | None = None) -> None:
    """The judged case: its verdict, steps, timeline, evidence and logs."""
    attach_evidence(result.evidence_path, reset_from)


def attach_evidence(evidence_path: Path, reset_from: float | None = None) -> None:
    """Whatever the case's evidence holds (also a case cut short by a harness error)."""
    if not evidence_path.is_file():
        return
    try:
        doc: dict[str, Any] = json.loads(evidence_path.read_text())
    except ValueError:
        doc = {}
    if doc.get("verdict"):
        allure.dynamic.label("verdict", str(doc["verdict"]))
        allure.attach(
            f"{doc['verdict']}: {doc.get('explanation', '')}",
            name="verdict",
            attachment_type=allure.attachment_type.TEXT,
        )
    if doc:
        apply_evidence_steps(doc, reset_from)
        svg = render_svg(doc)
        allure.attach(svg, name="timeline.svg", attachment_type=allure.attachment_type.SVG)
        # On the case's page itself (no click to open it): the verdict, why, the timeline.
        allure.dynamic.description_html(_description_html(doc, svg))
    allure.attach.file(
        str(evidence_path), name="evidence.json", attachment_type=allure.attachment_type.JSON
    )
    # Logs are cut to the case already (the runner writes what each process logged during it).
    for log in sorted((evidence_path.parent / "logs").glob("*.log")):
        if log.stat().st_size:
            allure.attach.file(
                str(log), name=f"log {log.stem}", attachment_type=allure.attachment_type.TEXT
            )


def _description_html(doc: Mapping[str, Any], svg: str) -> str:
    verdict = str(doc.get("verdict") or "no verdict")
    expected = "/".join(str(v) for v in doc.get("expected") or []) or "?"
    image = b64encode(svg.encode()).decode()
    facts = (
        f"Workflow <b>{escape(str(doc.get('workflow')))}</b>, delivery "
        f"<b>{escape(str(doc.get('delivery')))}</b>, fault <b>{escape(str(doc.get('fault')))}</b> "
        f"at crash point <b>{escape(str(doc.get('crashpoint')))}</b>; expected {escape(expected)}."
    )
    return (
        f"<p>{facts}</p><p><b>{escape(verdict)}</b>: "
        f"{escape(str(doc.get('explanation') or ''))}</p>"
        # The report sanitizes inline <svg> away; an image of it is kept.
        f'<img class="n8n-chaos-timeline" alt="timeline of {escape(str(doc.get("case")))}" '
        f'style="max-width:100%" src="data:image/svg+xml;base64,{image}">'
    )


def attach_data(
    logger: AllureFileLogger, result: TestResult, name: str, body: str, kind: str, ext: str
) -> None:
    """Attach ``body`` to a result written by a file logger (outside pytest: an exploration's,
    a finding's), as ``name`` of MIME type ``kind``."""
    source = f"{uuid.uuid4()}-attachment.{ext}"
    logger.report_attached_data(body, source)
    result.attachments.append(Attachment(name=name, source=source, type=kind))


def write_categories(results_dir: Path) -> None:
    results_dir.mkdir(parents=True, exist_ok=True)
    (results_dir / "categories.json").write_text(json.dumps(CATEGORIES, indent=2))


ENVIRONMENT_FILE = "environment.properties"


def write_environment(results_dir: Path, values: Mapping[str, object]) -> None:
    """``environment.properties``: the report's Environment / Metadata block."""
    results_dir.mkdir(parents=True, exist_ok=True)
    lines = [f"{key}={_property(value)}" for key, value in values.items() if value is not None]
    lines.append(f"python={platform.python_version()}")
    (results_dir / ENVIRONMENT_FILE).write_text("\n".join(lines) + "\n")


def read_environment(results_dir: Path) -> dict[str, str]:
    """What ``write_environment`` wrote there (empty: nothing written yet)."""
    path = results_dir / ENVIRONMENT_FILE
    if not path.is_file():
        return {}
    pairs = (line.partition("=") for line in path.read_text(errors="replace").splitlines())
    return {key: value for key, sep, value in pairs if sep}


def _property(value: object) -> str:
    # .properties: backslashes and line breaks would end or bend the value.
    return str(value).replace("\\", "\\\\").replace("\n", " ")
