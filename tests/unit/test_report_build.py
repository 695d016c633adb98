"""The report's grid and build steps without Allure's CLI: grid data from result labels,
the HTML put first in the page, history, config."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from harness.errors import ConfigError
from harness.report.allure_report import CATEGORIES_V3
from harness.report.build import (
    GRID_ATTACHMENT,
    GRID_GLOBALS,
    allure_config,
    check_results,
    find_history,
    finish_html,
    grid_of,
    write_grid_attachment,
)
from harness.report.grid_html import grid_fragment, outcomes_from_results


def write_result(
    folder: Path,
    case: str,
    verdict: str | None,
    expected: str,
    status: str,
    stop: int = 2000,
) -> None:
    workflow, _, scenario = case.partition("-")
    labels = {"workflow": workflow, "scenario": scenario, "case": case, "expected": expected}
    if verdict is not None:
        labels["verdict"] = verdict
    doc = {
        "name": case,
        "status": status,
        "statusDetails": {"message": f"{verdict} where {expected} was expected: why"},
        "labels": [{"name": k, "value": v} for k, v in labels.items()],
        "start": 1000,
        "stop": stop,
    }
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{uuid.uuid4()}-result.json").write_text(json.dumps(doc))


def results(tmp_path: Path) -> Path:
    folder = tmp_path / "allure-results"
    write_result(folder, "pay-retry-worker_kill-after_commit", "DUPLICATE", "PASS", "failed")
    write_result(folder, "pay-once-no_fault-none", "PASS", "PASS", "passed")
    write_result(
        folder, "naive-retry-worker_kill-after_commit", "DUPLICATE", "DUPLICATE/LOST", "passed"
    )
    write_result(folder, "naive-once-no_fault-none", None, "PASS", "broken")
    (folder / "junk-result.json").write_text("{not json")  # a killed run's half file
    return folder


def test_outcomes_come_from_the_labels(tmp_path: Path) -> None:
    outcomes = {o.case_id: o for o in outcomes_from_results(results(tmp_path))}
    assert len(outcomes) == 4
    assert outcomes["naive-retry-worker_kill-after_commit"].expected == ("DUPLICATE", "LOST")
    assert outcomes["naive-once-no_fault-none"].error  # no verdict: a harness error
    assert outcomes["pay-retry-worker_kill-after_commit"].seconds == 1.0


def test_a_case_run_twice_counts_its_last_result(tmp_path: Path) -> None:
    folder = results(tmp_path)
    write_result(folder, "pay-retry-worker_kill-after_commit", "PASS", "PASS", "passed", stop=9000)
    outcome = next(o for o in outcomes_from_results(folder) if o.case_id.startswith("pay-retry"))
    assert outcome.verdict == "PASS"


def test_the_grid_colours_and_links_each_cell(tmp_path: Path) -> None:
    grid = grid_of([results(tmp_path)])
    assert grid.workflows == ["naive", "pay"]
    html = grid_fragment(grid, {"pay-retry-worker_kill-after_commit": "#/abc"})
    assert 'class="violation" data-workflow="pay"' in html
    assert 'class="caught" data-workflow="naive"' in html
    assert 'class="expected" data-workflow="pay"' in html
    assert 'class="harness-error" data-workflow="naive"' in html
    assert '<a href="#/abc">D</a>' in html
    assert "4 cases, 2 as expected, 1 violation, 1 harness error (1 of them not PASS" in html


def test_shards_merge_into_one_grid(tmp_path: Path) -> None:
    one, two = tmp_path / "shard-1", tmp_path / "shard-2"
    write_result(one, "pay-once-no_fault-none", "PASS", "PASS", "passed")
    write_result(two, "naive-once-no_fault-none", "PASS", "PASS", "passed")
    assert len(grid_of([one, two]).outcomes) == 2


def test_the_grid_goes_first_and_the_analytics_tag_goes(tmp_path: Path) -> None:
    grid = grid_of([results(tmp_path)])
    page = (
        '<html><head><script async src="https://www.googletagmanager.com/gtag/js?id=G-1">'
        '</script></head><body class="x"><div id="app"></div></body></html>'
    )
    done = finish_html(page, grid)
    assert "googletagmanager" not in done
    assert done.index('<section id="n8n-chaos-grid">') < done.index('<div id="app">')
    assert finish_html(done, grid).count('<section id="n8n-chaos-grid">') == 1  # idempotent
    with pytest.raises(ConfigError, match="no <body>"):
        finish_html("<html></html>", grid)


def test_the_grid_is_also_a_global_attachment(tmp_path: Path) -> None:
    folder = results(tmp_path)
    write_grid_attachment(folder, grid_of([folder]))
    globals_doc = json.loads((folder / GRID_GLOBALS).read_text())
    assert globals_doc["attachments"][0]["source"] == GRID_ATTACHMENT
    assert "<table>" in (folder / GRID_ATTACHMENT).read_text()


def test_empty_results_and_missing_history_name_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="n8n-chaos run --alluredir"):
        check_results([tmp_path / "nothing"])
    with pytest.raises(ConfigError, match="previous report"):
        find_history(tmp_path / "no-such-report")


def test_history_is_found_in_a_previous_report(tmp_path: Path) -> None:
    report = tmp_path / "report"
    (report / "history").mkdir(parents=True)
    (report / "history" / "history.jsonl").write_text("{}\n")
    assert find_history(report) == report / "history" / "history.jsonl"
    assert find_history(report / "history" / "history.jsonl") is not None
    assert find_history(tmp_path) is None  # exists, but holds no history yet


def test_the_config_asks_for_one_file_with_categories_by_verdict(tmp_path: Path) -> None:
    config = allure_config(tmp_path / "out", tmp_path / "h.jsonl")
    assert config["categories"] == CATEGORIES_V3
    options = config["plugins"]["awesome"]["options"]  # type: ignore[index]
    assert options["singleFile"] is True
    names = [c["name"] for c in CATEGORIES_V3]
    assert "DUPLICATE: Duplicate effect (violation)" in names
    assert "DUPLICATE: as the case expects" in names
