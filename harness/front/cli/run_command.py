"""`n8n-chaos run`: the crash matrix as a pytest run of harness/front/suite.py, in this process."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from harness.errors import ConfigError, HarnessError
from harness.front.cli.common import fail, keyword_option, warn
from harness.front.cli.stack_count import (
    StackChoice,
    cases_selected,
    choose_stacks,
    this_machine,
    warm_stack_to_attach,
    xdist_in,
)
from harness.front.options import JOBS_FLAGS, ChaosOptions, click_options


@click.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@keyword_option
@click.option(
    "--alluredir",
    default="allure-results",
    show_default=True,
    help="Where Allure results go. A run of the same workflows adds to what is there (a case"
    " run again shows its latest result); a run of other workflows removes the earlier results"
    " first.",
)
@click.option(
    *JOBS_FLAGS,
    "jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Stacks side by side (pytest-xdist workers, one stack each); a selection with "
    "cases that need n8n's webhook processor brings up one stack more for them. Default: as "
    "many as the machine holds (cores, free memory), or 1 when a live `n8n-chaos up` stack "
    "is attached; the run's header says which and why.",
)
@click_options("run")
@click.pass_context
def run(
    ctx: click.Context,
    /,
    keyword: str | None,
    alluredir: str,
    jobs: int | None,
    **values: Any,
) -> None:
    """Run the crash matrix (a pytest run of harness/front/suite.py); extra args go to pytest.

    \b
    Examples:
      n8n-chaos run                                   every case, bundled workflows
      n8n-chaos run -k payment_idempotent-retry-worker_kill-after_commit
      n8n-chaos run --workflows ./my_workflows -x     your own workflows + manifests
      n8n-chaos run -j 1                              one stack, whatever the machine holds
      n8n-chaos run --shard 2/4                       the second of four CI machines
      n8n-chaos up & n8n-chaos run -k CASE            one case on the warm stack, in seconds
      n8n-chaos run --backend compose -k worker_kill  the same cases on containers
      n8n-chaos run --chaos-terminal plain --junitxml=out.xml   pytest's options pass through
    \b
    How cases show (--chaos-terminal): auto (a line each and a live line on a terminal),
    live, plain (lines only: CI logs), off (pytest's dots).
    \b
    Exit codes (as Jepsen's): 0 every verdict as expected; 1 a violation (a verdict the
    case does not expect); 2 a harness error (NO-EVIDENCE not expected, a case without a
    verdict, a stack that did not come up, a bad input). A violation outranks a harness
    error: 1 when both happened. The verdicts of the run are in verdicts.json in its run
    directory.
    """
    options = ChaosOptions.of(values, alluredir=alluredir)
    case_ids = _check_inputs(options)
    selected = cases_selected(case_ids, keyword)
    if selected is None and keyword:  # pytest's -k on the same names would keep none either
        fail(
            ConfigError(
                f"-k {keyword!r}: no case of the matrix matches ({len(case_ids)} cases"
                f" of {_whose(options)}); `n8n-chaos list` shows their ids, `n8n-chaos list -k"
                " EXPR` what an expression keeps"
            )
        )
    _remove_other_workflows_results(Path(alluredir), options.workflows)
    stacks = _stacks(jobs, options, ctx.args, selected)
    argv = pytest_argv(options, keyword, stacks.count if stacks else 1, ctx.args)
    sys.exit(_pytest_with_verdicts(argv, stacks))


# What allure-pytest writes into its folder (and the harness beside it): nothing else there is
# touched, so a folder given by mistake (`--alluredir .`) loses no file of its own.
_ALLURE_FILES = (
    "*-result.json",
    "*-container.json",
    "*-attachment.*",
    "categories.json",
    "environment.properties",  # harness.report.allure_report.ENVIRONMENT_FILE
)


def _remove_other_workflows_results(folder: Path, workflows: Path) -> None:
    """The Allure results an earlier run of another workflows folder left in ``folder``: a
    report then shows no case of theirs. A run of the same folder keeps them: a case run
    again is its latest result, the full run's other cases stay (Allure's own way)."""
    # Imported here: allure's modules are pytest's to load, not every command's start-up.
    from harness.report.allure_report import ENVIRONMENT_FILE, read_environment

    if not (folder / ENVIRONMENT_FILE).is_file():
        return
    earlier = read_environment(folder).get("workflows", "")
    if earlier and Path(earlier).resolve() == workflows.resolve():
        return
    for pattern in _ALLURE_FILES:
        for path in folder.glob(pattern):
            path.unlink(missing_ok=True)


def _whose(options: ChaosOptions) -> str:
    """Whose cases the matrix holds: a case of one's own workflows needs --workflows again
    (also when the warm stack was started with it)."""
    if options.workflows_dir is None:
        return "the bundled workflows; your own workflows' cases need --workflows DIR"
    return str(options.workflows_dir)


def _check_inputs(options: ChaosOptions) -> list[str]:
    """The ids of the matrix's cases. Bad workflows, manifests, shards: one line naming the
    fix, before pytest and any stack start. Neither harness.front.plugin nor the suite is imported
    here: pytest loads them in this process (_pytest_with_verdicts); a module imported
    before it is not assert-rewritten."""

    from harness.matrix.cases import matrix_of
    from harness.matrix.sharding import parse_shard
    from harness.stack.n8n import check_timings

    try:
        check_timings(options.n8n_timings)
        if options.shard is not None:
            parse_shard(options.shard)
        cases, _ = matrix_of(
            options.workflows, repeat=options.repeat, workers=options.workers, on_warning=warn
        )
    except HarnessError as exc:
        fail(exc)
    for path in options.shard_timings:
        if not path.is_file():
            fail(
                ConfigError(
                    f"--shard-timings {path}: no such file; pass the timings.json of an "
                    "earlier run (in its run directory), or leave the option out"
                )
            )
    return [case.id for case in cases]


def _stacks(
    jobs: int | None, options: ChaosOptions, extra: list[str], cases: int | None
) -> StackChoice | None:
    """-j N as given, else the machine's choice; None when pytest's own -n decides."""
    if jobs is not None:
        return StackChoice(jobs, f"-j {jobs}")
    if xdist_in(extra) is not None:
        return None
    return choose_stacks(this_machine(), warm_stack_to_attach(options), cases)


def pytest_argv(
    options: ChaosOptions, keyword: str | None, stacks: int, extra: list[str]
) -> list[str]:
    """The pytest command line of a run: every declared option given is handed on by its
    pytest flag (harness.front.options), then the arguments `run` does not know."""
    import importlib.util

    argv = [
        sys.executable,
        "-m",
        "pytest",
        str(importlib.util.find_spec("harness.front.suite").origin),  # type: ignore[union-attr]
        "-p",
        "no:cacheprovider",
        f"--alluredir={options.alluredir}",
        # Each case's line already says its verdict, why and where its evidence is: one line
        # per failed test, not pytest's page of traceback each (`--tb=long` after it wins).
        "--tb=line",
    ]
    if keyword:
        argv += ["-k", keyword]
    if stacks > 1:
        argv += ["-n", str(stacks)]
    argv += options.pytest_args()
    # Only the plugins the suite needs: other pytest plugins of the environment (hypothesis,
    # schemathesis, ...) cost seconds of start-up that a one-case rerun on a warm stack
    # must not pay. PYTEST_DISABLE_PLUGIN_AUTOLOAD= (empty) loads every installed one.
    if os.environ.setdefault("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1"):
        argv += ["-p", "harness.front.plugin", "-p", "allure_pytest.plugin", "-p", "xdist.plugin"]
        # The ini of a checkout names options of plugins left out here (asyncio_*).
        argv += ["-W", "ignore:Unknown config option:pytest.PytestConfigWarning"]
    return argv + extra


class _StacksHeader:
    """The run's choice of stacks, in pytest's session header."""

    def __init__(self, choice: StackChoice) -> None:
        self.choice = choice

    def pytest_report_header(self) -> str:
        return f"n8n-chaos {self.choice.header()}"


def _pytest_with_verdicts(argv: list[str], stacks: StackChoice | None) -> int:
    """Run pytest; exit like Jepsen from the verdicts it left (harness.terminal.summary)."""
    import tempfile

    import pytest

    from harness.terminal.summary import SUMMARY_FLAG, run_exit_code

    plugins: list[object] = [_StacksHeader(stacks)] if stacks is not None else []
    with tempfile.TemporaryDirectory(prefix="n8n-chaos-verdicts-") as tmp:
        summary = Path(tmp) / "verdicts.json"
        # In this process: a second interpreter's start-up (imports of the harness, its
        # libraries and pytest) costs about a second of CPU on every one-case rerun.
        # The CLI imported xdist before pytest could rewrite its asserts: nothing to act on.
        quiet = "ignore:Module already imported:pytest.PytestAssertRewriteWarning"
        status = pytest.main([*argv[3:], "-W", quiet, f"{SUMMARY_FLAG}={summary}"], plugins=plugins)
        return int(run_exit_code(status, summary))
