"""The commands that start nothing: `list`, `schema`, `report`, `show` and `recheck`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console

from harness.errors import HarnessError
from harness.front.cli.common import console, fail, folder_option, installer, keyword_option, warn
from harness.front.cli.stack_count import keyword_selects
from harness.front.options import click_options
from harness.stack.install import DEFAULT_N8N_VERSION
from harness.stack.run import default_runs_root
from harness.workflow import answer_timing

if TYPE_CHECKING:
    from harness.workflow.manifest import WorkflowUnderTest


@click.command(name="list")
@keyword_option
@click_options("list")
@click.option(
    "--verdicts",
    is_flag=True,
    help="List the verdicts instead (code, violation or not, meaning; by precedence).",
)
@click.option(
    "--faults",
    is_flag=True,
    help="List the faults instead (name, whether every workflow runs it or only those whose "
    "manifest names it in production_faults, its file).",
)
def list_cases(
    workflows_dir: Path | None, verdicts: bool, faults: bool, keyword: str | None
) -> None:
    """List the cases of the crash matrix with their expected verdicts (starts nothing)."""
    if faults:
        from harness.engine.faults import FAULTS

        for name in FAULTS.names():
            runs = "opt-in" if FAULTS.create(name).opt_in else "matrix"
            click.echo(f"{name:24} {runs:7} {Path(FAULTS.origin(name)).name}")
        return
    if verdicts:
        from harness.judge.verdicts import print_vocabulary

        print_vocabulary()
        return
    from harness.matrix.cases import doubtful_catches, matrix, not_run
    from harness.terminal.view import counted
    from harness.workflow.manifest import BUNDLED_WORKFLOWS, discover

    try:
        workflows = discover(workflows_dir or BUNDLED_WORKFLOWS, on_warning=warn)
        cases = matrix(workflows)
    except HarnessError as exc:
        fail(exc)
    every = len(cases)
    try:
        cases = [case for case in cases if keyword_selects(case.id, keyword)]
    except HarnessError as exc:
        fail(exc)
    for case in cases:
        expected = "/".join(sorted(v.value for v in case.expected))
        click.echo(f"{case.id:60} expect {expected}")
    kept = f" (-k {keyword!r} keeps none of the {every})" if keyword and not cases else ""
    console.print(f"{counted(len(cases), 'case')}{kept}")
    if workflows_dir is not None:  # one's own workflows: what more of the matrix they could run
        listed = {case.workflow for case in cases}
        for workflow in (w for w in workflows if w.name in listed):
            console.print(f"{workflow.name} answers its sender {_answer_reading(workflow)}")
            for seed in workflow.seeds:
                where = f"{seed.method} {seed.upstream}{seed.path}"
                console.print(f"{workflow.name} seeds {where} before each case's event")
            for given_by, ids in not_run(workflow).items():
                console.print(f"not run for {workflow.name}: {', '.join(ids)} (needs {given_by})")
            for given_by, ids in doubtful_catches(workflow).items():
                console.print(
                    f"warning: {workflow.name}'s caught_by names {', '.join(ids)}: a bug is"
                    f" caught there only in a workflow with {given_by}; expect PASS there"
                    " (name it in `passes`)"
                )


def _answer_reading(workflow: WorkflowUnderTest) -> str:
    """When the harness read the workflow's answer to come (harness.workflow.answer_timing):
    it decides which faults can lose the answer, so a user sees it before a verdict."""
    if workflow.acknowledges_early:
        return "first: its 2xx says accepted, not done (acknowledge first)"
    if workflow.answers_after_writes:
        return "after its effect and the writes that follow it"
    if not answer_timing.calls(workflow.workflow):
        return (
            "at a moment the harness cannot place (it finds no service call or sub-workflow "
            "in it): judged as answering before any writes that follow the effect"
        )
    return (
        "after its effect, before any writes that follow it: a crash in those writes does "
        "not lose the answer"
    )


@click.command()
@click.option(
    "--project",
    is_flag=True,
    help="the schema of n8n-chaos-project.json (a folder of n8n exports) instead",
)
def schema(project: bool) -> None:
    """Print the JSON Schema of manifest.json (for editors: README says how to use it)."""
    from harness.workflow.manifest_model import json_schema

    click.echo(json.dumps(json_schema(project=project), indent=2))


@click.command()
@folder_option(
    "--results",
    "results",
    multiple=True,
    help="An Allure results folder a run wrote (`run --alluredir`); repeat it to merge "
    "several (one per CI shard) into one report. Default: allure-results.",
)
@folder_option(
    "--out",
    default="allure-report",
    show_default=True,
    help="Where the report goes (one self-contained index.html, and history/ for the next).",
)
@click.option(
    "--history",
    "history",
    default=None,
    type=click.Path(path_type=Path),
    help="The previous report's folder (or its history/history.jsonl): trends and each "
    "case's history across runs.",
)
def report(results: tuple[Path, ...], out: Path, history: Path | None) -> None:
    """Build the Allure report of a run: a single index.html to publish (works offline).

    The verdict grid (workflows down, scenarios across) is the first thing on the page;
    each case has its phases as steps, its timeline, evidence and logs.
    """
    from harness.report.build import build_report

    try:
        index = build_report(
            list(results) or [Path("allure-results")],
            out,
            lambda: installer(DEFAULT_N8N_VERSION).allure_cli(),
            history_from=history,
        )
    except HarnessError as exc:
        fail(exc)
    console.print(f"report: {index.resolve()}")
    console.print(f"history for the next report: {(out / 'history').resolve()}")


@click.command()
@click.argument("case")
@folder_option(
    "--runs",
    "runs_dir",
    help="The runs folder (or one run's folder) to look in (default: N8N_CHAOS_RUNS, "
    "else ./.n8n-chaos/runs).",
)
def show(case: str, runs_dir: Path | None) -> None:
    """Show one saved case: its verdict, why, the proofs and a timeline.

    CASE is a case id (the newest run that has it), or a path to its evidence.json or
    its folder. Starts nothing.
    """
    from harness.report import inspect

    out = Console(highlight=False, soft_wrap=True)
    try:
        path = inspect.find_evidence(case, runs_dir or default_runs_root())
        out.print(inspect.show(inspect.load(path), path))
    except HarnessError as exc:
        fail(exc)


@click.command()
@click.argument("path", type=click.Path(exists=True, path_type=Path))
def recheck(path: Path) -> None:
    """Re-judge saved evidence with the current oracle, offline.

    PATH is a run folder (every case in it) or one case (its folder or evidence.json).
    Prints a line per case, the verdict grid and which verdicts changed against the saved
    ones; exits 0 (all as expected), 1 (a violation) or 2 (a case without a verdict).
    """
    from harness.matrix.cases import scenarios
    from harness.report import inspect
    from harness.terminal.grid import build_grid
    from harness.terminal.outcome import exit_code
    from harness.terminal.view import case_line, grid_view, totals

    out = Console(highlight=False, soft_wrap=True)
    try:
        saved = inspect.saved_verdicts(path)
        rechecked = [inspect.recheck(f, saved) for f in inspect.evidence_files(path)]
    except HarnessError as exc:
        fail(exc)
    outcomes = [r.outcome for r in rechecked]
    for outcome in outcomes:
        out.print(case_line(outcome), no_wrap=True, overflow="ellipsis", crop=out.is_terminal)
    grid = build_grid(outcomes, [s.id for s in scenarios()])
    out.print()
    out.print(grid_view(grid))
    out.print(totals(grid))
    out.print(inspect.changes_view(rechecked))
    sys.exit(int(exit_code(outcomes)))
