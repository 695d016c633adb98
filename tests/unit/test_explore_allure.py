"""An exploration in the Allure results: the node strip with the failing nodes marked, a step
per probe, attachments; also for a cached exploration reprinted by `n8n-chaos explore`."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from harness.engine.crashpoints import CRASHPOINTS
from harness.engine.crashpoints.explore_boundary import STRIKES
from harness.engine.runner import CaseResult
from harness.explore.cache import ExploreCache, cache_key
from harness.explore.explorer import explore
from harness.explore.findings import to_json
from harness.explore.plan import Budget
from harness.front.cli import main
from harness.judge.oracle import Verdict
from harness.matrix.cases import Case
from harness.report.explore_allure import write_exploration
from harness.workflow.manifest import BUNDLED_WORKFLOWS
from tests.unit.test_explore import result, saved_trace


@pytest.fixture(autouse=True)
def _no_exploration_crash_points_left() -> Iterator[None]:
    yield
    for name in CRASHPOINTS.names():
        if name.startswith("x_"):
            CRASHPOINTS.unregister(name)


def report_doc() -> dict[str, Any]:
    def run(case: Case) -> CaseResult:
        duplicate = case.crashpoint == "x_after_commit_r1"
        return result(case, Verdict.DUPLICATE if duplicate else Verdict.PASS)

    return to_json(explore(saved_trace(), "exactly_once", run, Budget(cases=6)), [])


def results(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*-result.json"))]


def test_the_strip_and_a_step_per_probe(tmp_path: Path) -> None:
    write_exploration(tmp_path, report_doc())
    [test] = results(tmp_path)
    assert test["name"] == "explore milestones" and test["status"] == "failed"
    assert test["statusDetails"]["message"].startswith("DUPLICATE where killing the worker")
    assert '<b style="color:#c62828">Create Payment Intent ✗</b>' in test["descriptionHtml"]
    assert "Send receipt ✗" not in test["descriptionHtml"]
    steps = {s["name"].split(" ", 1)[0]: s["status"] for s in test["steps"]}
    assert steps["r1:after_commit"] == "failed" and steps["r2:after_commit"] == "passed"
    assert steps["milestones:r2:after_response:"] == "skipped"  # left by the budget
    # run, not run (two requests, every strike each), the gap no probe struck
    assert len(test["steps"]) == 2 * len(STRIKES) + 1
    attached = {a["name"]: tmp_path / a["source"] for a in test["attachments"]}
    assert attached["node strip"].read_text().startswith("Webhook ─ Find customer ─ ")
    assert json.loads(attached["explore.json"].read_text())["workflow"] == "milestones"
    labels = {x["name"]: x["value"] for x in test["labels"]}
    assert labels["parentSuite"] == "exploration" and "scenario" not in labels  # not the grid


def test_a_cached_exploration_is_reported_too(tmp_path: Path) -> None:
    folder = tmp_path / "workflows" / "stripe_naive"
    shutil.copytree(Path(BUNDLED_WORKFLOWS) / "stripe_naive", folder)
    key = cache_key("stripe_naive", folder, "2.40.7", 2)
    ExploreCache(tmp_path / "cache").store(key, ["(lines)"], report_doc(), True, tmp_path)
    args = ["explore", "--workflows", str(folder.parent), "--cache-dir", str(tmp_path / "cache")]
    done = CliRunner().invoke(main, [*args, "--alluredir", str(tmp_path / "allure")])
    assert done.exit_code == 1, done.output
    [test] = results(tmp_path / "allure")
    assert test["name"] == f"explore milestones (cached {key.short})"
