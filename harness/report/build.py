"""Build the single-file Allure report: ``n8n-chaos report`` (Allure Report 3, on our Node).

What it adds to Allure's own output:
- the verdict grid, first thing on the page: injected at the top of ``index.html`` and also
  a global attachment ("Global Attachments" tab), drawn from the cases' labels in every
  results folder given (CI shards merge into one grid);
- categories by verdict (Allure 3's awesome plugin reads them from its config, not from
  ``categories.json``);
- history across runs: ``--history`` takes the previous report's folder (or its
  ``history.jsonl``); this report's history is written to ``<out>/history/history.jsonl``
  for the next one (Allure 2 history files found there are copied into the results too);
- no call out when opened: Allure's analytics tag is removed.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from harness.errors import ConfigError
from harness.report.allure_report import CATEGORIES_V3
from harness.report.grid_html import GRID_ID, grid_fragment, grid_page
from harness.terminal.grid import Grid, build_grid
from harness.terminal.outcome import CaseOutcome

REPORT_NAME = "n8n chaos: exactly-once matrix"
HISTORY_FILE = "history.jsonl"
GRID_ATTACHMENT = "n8n-chaos-verdict-grid-attachment.html"
GRID_GLOBALS = "n8n-chaos-verdict-grid-globals.json"
ALLURE2_HISTORY = ("history.json", "history-trend.json", "duration-trend.json")
_ANALYTICS = re.compile(r'<script async src="https://www\.googletagmanager\.com/[^"]*"></script>')
_BODY = re.compile(r"<body[^>]*>", re.IGNORECASE)
GENERATE_TIMEOUT_S = 600.0


def check_results(results: Sequence[Path]) -> None:
    for folder in results:
        if not folder.is_dir() or not any(folder.glob("*-result.json")):
            raise ConfigError(
                f"no Allure results in {folder}: run `n8n-chaos run --alluredir {folder}` "
                "first, or pass --results DIR (repeatable, e.g. one per CI shard)"
            )


def find_history(previous: Path) -> Path | None:
    """The ``history.jsonl`` of a previous report (its folder, its history folder, or the
    file itself); None when it only has Allure 2 history files."""
    for candidate in (previous, previous / HISTORY_FILE, previous / "history" / HISTORY_FILE):
        if candidate.is_file() and candidate.name == HISTORY_FILE:
            return candidate
    if not previous.exists():
        raise ConfigError(
            f"--history {previous}: no such file or folder; pass the folder of the previous "
            "report (it holds history/history.jsonl), or leave the option out"
        )
    return None


def grid_of(results: Sequence[Path]) -> Grid:
    from harness.matrix.cases import scenarios
    from harness.report.grid_html import outcomes_from_results

    outcomes: dict[str, CaseOutcome] = {}
    for folder in results:  # shards hold different cases; a later folder wins a tie
        outcomes.update({o.case_id: o for o in outcomes_from_results(folder)})
    return build_grid(outcomes.values(), [s.id for s in scenarios()])


def write_grid_attachment(results_dir: Path, grid: Grid) -> None:
    """The grid as a global attachment of the run (fixed names: rebuilding replaces it)."""
    (results_dir / GRID_ATTACHMENT).write_text(grid_page(grid))
    globals_doc = {
        "attachments": [
            {
                "name": "verdict grid.html",
                "source": GRID_ATTACHMENT,
                "type": "text/html",
                "timestamp": int(time.time() * 1000),
            }
        ],
        "errors": [],
    }
    (results_dir / GRID_GLOBALS).write_text(json.dumps(globals_doc))


def allure_config(out: Path, history: Path) -> dict[str, object]:
    return {
        "name": REPORT_NAME,
        "output": str(out.resolve()),
        "historyPath": str(history.resolve()),
        "historyLimit": 50,
        "categories": CATEGORIES_V3,
        "plugins": {
            "awesome": {
                "options": {
                    "singleFile": True,
                    "reportName": REPORT_NAME,
                    "reportLanguage": "en",
                    "groupBy": ["suite", "subSuite"],  # workflow, then scenario
                }
            }
        },
    }


def test_links(out: Path) -> dict[str, str]:
    """Case id -> ``#/<test result id>`` from the report's ``test-results.json`` (a case's
    test is titled with its id)."""
    try:
        by_id = json.loads((out / "test-results.json").read_text()).get("byId", {})
    except (OSError, ValueError):
        return {}
    return {str(t.get("name")): f"#/{test_id}" for test_id, t in by_id.items()}


def finish_html(html: str, grid: Grid, links: dict[str, str] | None = None) -> str:
    """Drop the analytics tag; put the grid at the top of the page."""
    html = _ANALYTICS.sub("", html)
    html = re.sub(rf'<section id="{GRID_ID}">.*?</section>', "", html, flags=re.DOTALL)
    match = _BODY.search(html)
    if match is None:
        raise ConfigError("the Allure report has no <body>: is the allure package intact?")
    return html[: match.end()] + grid_fragment(grid, links) + html[match.end() :]


def build_report(
    results: Sequence[Path],
    out: Path,
    node_and_cli: Callable[[], tuple[Path, Path]],
    history_from: Path | None = None,
) -> Path:
    """Generate ``<out>/index.html`` from one or more results folders; returns its path."""
    check_results(results)
    grid = grid_of(results)
    write_grid_attachment(results[0], grid)
    out.mkdir(parents=True, exist_ok=True)
    history = out / "history" / HISTORY_FILE
    history.parent.mkdir(exist_ok=True)
    if history_from is not None:
        found = find_history(history_from)
        if found is not None and found.resolve() != history.resolve():
            shutil.copyfile(found, history)
        for name in ALLURE2_HISTORY:  # Allure 2's trend files, if that is what it holds
            for folder in (history_from, history_from / "history"):
                if (folder / name).is_file():
                    (results[0] / "history").mkdir(exist_ok=True)
                    shutil.copyfile(folder / name, results[0] / "history" / name)
    node, cli = node_and_cli()
    with tempfile.TemporaryDirectory(prefix="n8n-chaos-allurerc-") as tmp:
        config = Path(tmp) / "allurerc.json"
        config.write_text(json.dumps(allure_config(out, history), indent=2))
        argv = [str(node), str(cli), "generate", "--config", str(config)]
        argv += [str(folder.resolve()) for folder in results]
        try:
            done = subprocess.run(
                argv,
                capture_output=True,
                text=True,
                check=False,
                cwd=tmp,
                timeout=GENERATE_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired as exc:
            raise ConfigError(
                f"allure generate took over {GENERATE_TIMEOUT_S:.0f} s; rerun it, or report "
                "fewer results folders at once"
            ) from exc
    index = out / "index.html"
    plugin_index = out / "awesome" / "index.html"  # with a config, each plugin has a folder
    if done.returncode == 0 and plugin_index.is_file():
        plugin_index.replace(index)
        shutil.rmtree(plugin_index.parent)
    if done.returncode != 0 or not index.is_file():
        raise ConfigError(
            f"allure generate failed (exit {done.returncode}): "
            f"{(done.stderr or done.stdout)[-2000:]}"
        )
    index.write_text(finish_html(index.read_text(), grid, test_links(out)))
    return index
