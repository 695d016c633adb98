"""`n8n-chaos explore`: find the crash windows of workflows by themselves (harness.explore)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from harness.errors import HarnessError
from harness.front.cli.common import console, fail, folder_option, installer, warn
from harness.stack.install import DEFAULT_N8N_VERSION

if TYPE_CHECKING:
    from harness.explore.explorer import Exploration
    from harness.workflow.manifest import WorkflowUnderTest


@click.command()
@folder_option(
    "--workflows",
    "workflows_dir",
    help="Folder of workflows, one sub-folder each with manifest.json (default: the bundled).",
)
@click.option("--budget-cases", type=int, default=None, help="Run at most N cases in all.")
@click.option("--budget-minutes", type=float, default=None, help="Start no case after M minutes.")
@click.option(
    "--only",
    multiple=True,
    metavar="WF[:BOUNDARY[:STRIKE]]",
    help="Explore only this workflow, boundary (r1, r2...) or probe, e.g. "
    "stripe_http_form:r1:after_commit (repeatable; the report prints it for each finding).",
)
@click.option("--workers", type=int, default=2, show_default=True)
@click.option("--n8n-version", default=DEFAULT_N8N_VERSION, show_default=True)
@folder_option(
    "--cache-dir",
    help="Where explorations are cached, by the hash of the workflow's folder, the n8n "
    "version, the workers and the harness version (default: N8N_CHAOS_CACHE/explore).",
)
@folder_option(
    "--alluredir",
    help="Also write each workflow's exploration as an Allure result (the node strip, a step "
    "per probe) for `n8n-chaos report --results DIR`.",
)
@click.option("--no-cache", is_flag=True, help="Explore even when a cached result matches.")
@click.option(
    "--changed-since",
    metavar="REF",
    default=None,
    help="Explore only the workflows whose folder a git change since REF touched (committed, "
    "uncommitted or new files; e.g. origin/main).",
)
def explore(
    workflows_dir: Path | None,
    budget_cases: int | None,
    budget_minutes: float | None,
    only: tuple[str, ...],
    workers: int,
    n8n_version: str,
    cache_dir: Path | None,
    no_cache: bool,
    changed_since: str | None,
    alluredir: Path | None,
) -> None:
    """Trace each workflow once with nothing broken, then strike at each of its boundaries
    (every effect request: the worker killed before it, after the commit, after the answer;
    the answer dropped or a 500 after the commit; the same event delivered again while the
    request is held, before or after its commit), each case judged by the matrix's oracle.
    Reports each broken window by node and request, with the command that runs it again.

    \b
    An unchanged workflow (same folder, n8n version, workers and harness) is not explored
    again: its cached report is printed ("cached (hash ...)"). Only a complete exploration is
    cached (no probe left by the budget, no harness error); --only neither reads nor writes
    the cache. With --changed-since REF only the workflows a change since REF touched are
    explored (none: exit 0).

    \b
    Exit codes: 0 no violation of the workflows' promises; 1 a violation; 2 a harness error.
    """
    from harness.explore.cache import ExploreCache, default_explore_cache
    from harness.explore.cached_run import CachedRun
    from harness.explore.plan import Budget
    from harness.explore.session import explore_workflows
    from harness.stack.stack import Stack, StackConfig
    from harness.workflow.manifest import BUNDLED_WORKFLOWS, discover

    try:
        budget = Budget(cases=budget_cases, minutes=budget_minutes)
        root = workflows_dir or Path(BUNDLED_WORKFLOWS)
        workflows = discover(root, on_warning=warn)
        if changed_since is not None:
            workflows = only_changed(workflows, root, changed_since)
            if not workflows:
                sys.exit(0)
        cache = None if no_cache or only else ExploreCache(cache_dir or default_explore_cache())
        cached = CachedRun(cache, n8n_version, workers)
        workflows = cached.uncached(
            workflows,
            say=echo,
            on_hit=lambda hit: allure_out(alluredir, hit.report, hit.key.short),
        )
        if not workflows:
            click.echo("every workflow cached: nothing to explore (--no-cache explores again)")
            sys.exit(1 if cached.violation else 0)
        inst = installer(n8n_version).install()
        with console.status("starting the stack") as status:
            stack = Stack.start(
                inst,
                StackConfig(workers=workers, n8n_version=n8n_version),
                progress=lambda m: status.update(m),
            )
    except HarnessError as exc:
        fail(exc)
    arg = f"--workflows {workflows_dir} " if workflows_dir else ""

    def reported(
        workflow: WorkflowUnderTest, found: Exploration, lines: list[str], doc: dict[str, Any]
    ) -> None:
        allure_out(alluredir, doc)
        cached.store(workflow, found, lines, doc, stack.run.run_dir, say=echo)

    try:
        found = explore_workflows(
            stack,
            workflows,
            budget,
            only,
            arg,
            say=echo,
            on_report=reported,
        )
    except HarnessError as exc:
        fail(exc)
    finally:
        stack.stop()
    click.echo(f"budget: {budget.describe()}; reports in {stack.run.run_dir / 'explore'}")
    violations = [e for e in found if e.violation]
    errors = [o for e in found for o in e.outcomes if o.verdict is None]
    sys.exit(1 if violations or cached.violation else 2 if errors else 0)


def echo(line: str) -> None:
    """A report line; on a terminal the strip's marked nodes in colour."""
    from harness.explore.findings import STRIP_LINE, VIOLATION_MARK, WINDOW_MARK

    colours = {VIOLATION_MARK: "red", WINDOW_MARK: "yellow"}
    if line.startswith(STRIP_LINE):
        cells = line[len(STRIP_LINE) :].split(" ─ ")
        line = STRIP_LINE + " ─ ".join(
            click.style(c, fg=colours[c[-1]], bold=True) if c[-1:] in colours else c for c in cells
        )
    elif line.lstrip()[:1] in colours and line.startswith(" " * len(STRIP_LINE)):
        line = click.style(line, fg=colours[line.lstrip()[0]])
    click.echo(line)  # click drops the colours when stdout is not a terminal


def allure_out(results: Path | None, doc: dict[str, Any], cached: str = "") -> None:
    if results is not None:
        from harness.report.explore_allure import write_exploration

        write_exploration(results, doc, cached)


def only_changed(
    workflows: list[WorkflowUnderTest], root: Path, ref: str
) -> list[WorkflowUnderTest]:
    from harness.explore.changed import changed_folders

    touched = changed_folders(root, ref)
    # A shared folder (``_ledgers/``: discovery skips ``_`` folders) may serve any workflow.
    shared = sorted(t for t in touched if t.startswith("_"))
    picked = [
        w for w in workflows if w.directory is not None and (shared or w.directory.name in touched)
    ]
    names = ", ".join(w.name for w in picked) or "none"
    why = f" (shared {', '.join(shared)} changed: all of them)" if shared else ""
    click.echo(f"changed since {ref}: {len(picked)} of {len(workflows)} workflow(s){why}: {names}")
    return picked
