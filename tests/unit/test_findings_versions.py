"""bench/findings_versions.py: the committed findings reports as one table, a line per probe
with its answer per version, marked where the versions' answers differ."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from harness.findings.report import Findings, VersionRun, write

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "findings_versions.py"


def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("findings_versions", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def report(version: str, answers: dict[str, str], ran: bool = True) -> Findings:
    probes = {
        name: {
            "question": "?",
            "answers": [],
            "workflow": {},
            "results": {version: {"answer": a, "why": "", "facts": {}, "evidence": {}}},
        }
        for name, a in answers.items()
    }
    error = None if ran else "npm cannot resolve x@1 (needed by n8n 9.9.9); skipped"
    return Findings(versions={version: VersionRun(ran, error)}, probes=probes)


def test_the_table_marks_the_probes_whose_answers_differ(tmp_path: Path) -> None:
    write(report("2.40.7", {"stall": "flipped", "kill": "one"}), tmp_path / "findings-2.40.7")
    write(report("2.41.1", {"stall": "no flip", "kill": "one"}), tmp_path / "findings-2.41.1")
    write(report("9.9.9", {}, ran=False), tmp_path / "findings-9.9.9")
    fv = script()
    lines = fv.answer_table(fv.reports(tmp_path))
    assert lines[0] == "probe | 2.40.7 | 2.41.1"
    assert "* stall | flipped | no flip" in lines
    assert "  kill | one | one" in lines
    assert lines[-1].startswith("not run: 9.9.9: npm cannot resolve")
