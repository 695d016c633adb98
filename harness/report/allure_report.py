"""Allure: labels, the verdict, and the case's evidence as attachments.

Verdict mapping (Jepsen's priorities): an expected verdict passes; an unexpected DUPLICATE,
LOST or UNRECONCILED fails ("Product defects"); NO-EVIDENCE is a harness error ("broken").
``categories.json`` in the results folder groups them that way in the report.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import allure

if TYPE_CHECKING:
    from harness.cases import Case
    from harness.runner import CaseResult

_VIOLATIONS = {
    "DUPLICATE": "Duplicate effect",
    "CONTRADICTED": "Sender told the opposite of the truth",
    "STRAY": "Commit nobody accounts for",
    "LOST": "Lost effect",
    "NOT-DONE": "Effect never happened",
    "UNHANDLED": "Error Workflow did not handle it",
    "UNRECONCILED": "Unreconciled effect",
    "STUCK": "Never settled (n8n finding)",
}
CATEGORIES = [
    *(
        {"name": name, "messageRegex": f"(?s).*{verdict} where .*", "matchedStatuses": ["failed"]}
        for verdict, name in _VIOLATIONS.items()
    ),
    {
        "name": "Harness error: fault never landed",
        "messageRegex": ".*NO-EVIDENCE.*",
        "matchedStatuses": ["broken", "failed"],
    },
    {"name": "Harness error", "matchedStatuses": ["broken"]},
]


def label_case(case: Case) -> None:
    allure.dynamic.parent_suite("exactly-once matrix")
    allure.dynamic.suite(case.workflow)
    allure.dynamic.sub_suite(case.scenario.id)
    allure.dynamic.tag(case.delivery, case.fault, case.crashpoint)
    allure.dynamic.label("workflow", case.workflow)
    allure.dynamic.label("delivery", case.delivery)
    allure.dynamic.label("fault", case.fault)
    allure.dynamic.label("crashpoint", case.crashpoint)
    allure.dynamic.description(
        f"Workflow **{case.workflow}**, delivery **{case.delivery}**, fault **{case.fault}** "
        f"at crash point **{case.crashpoint}** (run {case.run_no} of {case.runs}); expected: "
        f"{', '.join(sorted(v.value for v in case.expected))}."
    )


def attach_result(result: CaseResult) -> None:
    case_dir = result.evidence_path.parent
    allure.attach.file(
        str(result.evidence_path), name="evidence.json", attachment_type=allure.attachment_type.JSON
    )
    allure.attach(
        f"{result.judgement.verdict.value}: {result.judgement.explanation}",
        name="verdict",
        attachment_type=allure.attachment_type.TEXT,
    )
    for log in sorted((case_dir / "logs").glob("*.log")):
        if log.stat().st_size:
            allure.attach.file(
                str(log), name=f"log {log.stem}", attachment_type=allure.attachment_type.TEXT
            )


def write_categories(results_dir: Path) -> None:
    results_dir.mkdir(parents=True, exist_ok=True)
    (results_dir / "categories.json").write_text(json.dumps(CATEGORIES, indent=2))
