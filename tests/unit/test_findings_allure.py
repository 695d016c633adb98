"""Findings as Allure results: a test per probe and version, and per version not run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.report.findings_allure import write_findings

DOC: dict[str, Any] = {
    "versions": {
        "2.40.7": {"ran": True, "error": None, "run_dir": "/r"},
        "2.41.3": {"ran": False, "error": "npm cannot resolve @n8n/agents@0.26.2", "run_dir": None},
    },
    "probes": {
        "false_stall": {
            "question": "A worker is paused longer than its lock: does the job run twice?",
            "answers": ["ran once", "ran twice"],
            "results": {
                "2.40.7": {
                    "answer": "ran once",
                    "why": "execution 7 went running -> success",
                    "facts": {"commits": 1},
                    "evidence": {"rows": []},
                    "duration_s": 12.5,
                }
            },
        },
        "main_kill_before_enqueue": {
            "question": "Main killed between the row and the enqueue?",
            "answers": ["lost"],
            "results": {"2.40.7": {"answer": "UNDETERMINED", "why": "no row", "facts": {}}},
        },
    },
}


def test_each_probe_and_version_is_a_test_with_its_evidence(tmp_path: Path) -> None:
    assert write_findings(tmp_path, DOC) == 3
    results = (json.loads(p.read_text()) for p in tmp_path.glob("*-result.json"))
    tests = {t["name"]: t for t in results}
    assert set(tests) == {
        "n8n 2.41.3 not run",
        "false_stall on n8n 2.40.7",
        "main_kill_before_enqueue on n8n 2.40.7",
    }
    stall = tests["false_stall on n8n 2.40.7"]
    assert stall["status"] == "passed"
    assert stall["statusDetails"]["message"].startswith("ran once: execution 7")
    assert {"name": "commits", "value": "1"} in stall["parameters"]
    [attached] = stall["attachments"]
    evidence = json.loads((tmp_path / attached["source"]).read_text())
    assert evidence["evidence"] == {"rows": []}
    assert tests["main_kill_before_enqueue on n8n 2.40.7"]["status"] == "broken"
    assert tests["n8n 2.41.3 not run"]["status"] == "skipped"
