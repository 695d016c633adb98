"""Internal: The ``n8n-chaos`` command: install the real parts, bring a stack up or down, run
cases."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, Literal, NoReturn

import click
from rich.console import Console
from rich.markup import escape

from harness.errors import ConfigError, HarnessError
from harness.stack.install import DEFAULT_N8N_VERSION, SUPPORTED_N8N_VERSIONS, Installer
from harness.stack.provider import ProviderSettings
from harness.stack.run import default_runs_root
from harness.stack.stack import Stack, StackConfig

if TYPE_CHECKING:
    from harness.stack.attach import Serving

# soft_wrap: an error stays one line (no wrapping at 80 columns when stderr is not a tty).
console = Console(stderr=True, highlight=False, soft_wrap=True)

_VERSION_HELP = (
    f"n8n version to run (default {DEFAULT_N8N_VERSION}; tested: "
    f"{', '.join(SUPPORTED_N8N_VERSIONS)})."
)


def _backend_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--backend and --n8n-image, the same on `up` and `run`."""
    command = click.option(
        "--n8n-image", default=None, help="With --backend compose: your own n8n image."
    )(command)
    return click.option(
        "--backend",
        type=click.Choice(["native", "compose"]),
        default="native",
        show_default=True,
        help="native: child processes; compose: containers (needs scripts/docker-setup.sh).",
    )(command)


def _installer(n8n_version: str) -> Installer:
    def progress(part: str, message: str) -> None:
        console.print(f"[bold]install[/] {part}: {message}")

    return Installer(n8n_version=n8n_version, progress=progress)


def _fail(exc: HarnessError) -> NoReturn:
    console.print(f"[bold red]error:[/] {escape(str(exc))}")
    sys.exit(2)


def _warn(line: str) -> None:
    console.print(f"[bold yellow]warning:[/] {escape(line)}")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """Chaos and fault-injection tests for n8n workflows in queue mode.

    Brings up a real n8n (main, workers, optional webhook processor) with PostgreSQL 17,
    Redis 7 and Toxiproxy on 127.0.0.1, then kills workers, drops responses and redelivers
    events to check that every business effect happened exactly once.

    \b
    Typical use:
      n8n-chaos install                 put n8n, Node, Postgres, Toxiproxy in the cache
      n8n-chaos run                     the crash matrix on the bundled workflows
      n8n-chaos run -k payment_naive-retry-worker_kill-after_commit   one case by name
      n8n-chaos list                    every case and its expected verdicts
      n8n-chaos show CASE_ID            one saved case: verdict, why, proofs, timeline
      n8n-chaos recheck RUN_DIR         re-judge saved evidence with today's oracle
      n8n-chaos up --workers 3          run a stack until Ctrl-C (prints its addresses)
      n8n-chaos down                    end the stacks started by `up`
    Runs, logs and evidence: ./.n8n-chaos/runs/<run id>/ (kept after every run).
    Environment: N8N_CHAOS_CACHE (install cache), N8N_CHAOS_RUNS (run directories).
    """


@main.command()
@click.option("--n8n-version", default=DEFAULT_N8N_VERSION, show_default=True, help=_VERSION_HELP)
@click.option(
    "--template/--no-template",
    default=True,
    show_default=True,
    help="Also make the migrated n8n database that stacks start from (once per version).",
)
def install(n8n_version: str, template: bool) -> None:
    """Install pinned versions of every part into the cache (a no-op when cached)."""
    from harness.stack.template import ensure as ensure_template

    started = time.monotonic()
    try:
        inst = _installer(n8n_version).install()
        if template:
            ensure_template(inst, lambda m: console.print(f"[bold]install[/] template: {m}"))
    except HarnessError as exc:
        _fail(exc)
    console.print(
        f"ready in {time.monotonic() - started:.1f} s: n8n {inst.n8n_version} at {inst.n8n_bin}"
    )


@main.command()
@click.option("--workers", default=2, show_default=True, help="Number of n8n workers.")
@click.option(
    "--webhook-processor",
    is_flag=True,
    help="Also run `n8n webhook`; production webhooks then go to it.",
)
@click.option("--n8n-version", default=DEFAULT_N8N_VERSION, show_default=True, help=_VERSION_HELP)
@click.option(
    "--upstream",
    "upstreams",
    multiple=True,
    metavar="NAME=HOST:PORT",
    help="An HTTP service workflows call, proxied per worker; workflows read its "
    "address from $env.N8N_CHAOS_UPSTREAM_<NAME>. Repeatable.",
)
@click.option(
    "--n8n-env",
    "n8n_env",
    multiple=True,
    metavar="VAR=VALUE",
    help="Set or override an n8n environment variable. Repeatable.",
)
@click.option(
    "--port",
    "main_port",
    type=int,
    default=None,
    help="Fixed port for n8n main (default: a free one).",
)
@click.option(
    "--ready-timeout",
    default=180.0,
    show_default=True,
    help="Seconds each part may take to become ready.",
)
@click.option(
    "--provider/--no-provider",
    "with_provider",
    default=True,
    show_default=True,
    help="Run the fake payment provider as upstream 'provider'.",
)
@click.option(
    "--provider-key-ttl",
    type=float,
    default=24 * 3600.0,
    show_default=True,
    help="Seconds the provider keeps a completed idempotency key.",
)
@click.option(
    "--keep", is_flag=True, help="On a failed start, leave the run's data for inspection."
)
@click.option(
    "--fresh-db",
    is_flag=True,
    help="Migrate a fresh n8n database instead of copying the cached migrated template.",
)
@_backend_options
def up(
    workers: int,
    webhook_processor: bool,
    n8n_version: str,
    upstreams: tuple[str, ...],
    n8n_env: tuple[str, ...],
    main_port: int | None,
    ready_timeout: float,
    with_provider: bool,
    provider_key_ttl: float,
    keep: bool,
    fresh_db: bool,
    backend: Literal["native", "compose"],
    n8n_image: str | None,
) -> None:
    """Start a stack and keep it running until Ctrl-C or `n8n-chaos down`.

    `n8n-chaos run` from this folder then attaches to it (one case costs its own time plus
    under a second: `up` keeps a warm runner with pytest and the harness imported, and each
    run is forked from it); see README, "At your desk".
    """
    try:
        config = StackConfig(
            workers=workers,
            webhook_processor=webhook_processor,
            n8n_version=n8n_version,
            upstreams=_pairs(upstreams, "--upstream"),
            n8n_env=_pairs(n8n_env, "--n8n-env"),
            main_port=main_port,
            ready_timeout_s=ready_timeout,
            provider=ProviderSettings(key_ttl_s=provider_key_ttl) if with_provider else None,
            db_template=not fresh_db,
            backend=backend,
            n8n_image=n8n_image,
        )
        inst = _installer(n8n_version).install()
        with console.status("starting the stack") as status:
            stack = Stack.start(
                inst, config, progress=lambda m: status.update(m), keep_on_failure=keep
            )
    except HarnessError as exc:
        kept: Stack | None = getattr(exc, "stack", None)
        if kept is None:
            _fail(exc)
        console.print(f"[bold red]error:[/] {exc}")
        console.print(
            f"[yellow]--keep: what started stays up; logs in {kept.run.run_dir}; "
            "Ctrl-C or `n8n-chaos down` ends it[/]"
        )
        stack = kept
    stopping = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        del signum, frame
        stopping.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    info = stack.describe()
    console.print_json(json.dumps(info))
    served = _serve_attach(stack)
    if "total" in info["timings_s"]:
        console.print(
            f"[green]stack up[/] in {info['timings_s']['total']} s; Ctrl-C or "
            "`n8n-chaos down` to stop"
        )
    stopping.wait()
    console.print("stopping ...")
    if served is not None:
        served.close()
    stack.stop()
    console.print("stopped; logs kept in " + str(stack.run.run_dir))


def _serve_attach(stack: Stack) -> Serving | None:
    """Let `run` and pytest from this folder use the stack (harness.stack.attach)."""
    from harness.stack.attach import how_to_attach, serve

    try:
        served = serve(stack)
    except HarnessError as exc:
        console.print(f"[yellow]runs cannot attach to this stack: {escape(str(exc))}[/]")
        return None
    console.print(how_to_attach(stack.run.run_dir))
    if served.runner_error is not None:
        console.print(
            f"[yellow]no warm runner ({escape(served.runner_error)}): each run pays its own "
            "start-up[/]"
        )
    return served


@main.command()
@click.option("--timeout", default=60.0, show_default=True, help="Seconds to wait per stack.")
def down(timeout: float) -> None:
    """Stop every stack that `up` started from this directory's run folder."""
    root = default_runs_root()
    # <runs>/<run id>/stack.json, or <runs>/<invocation>/<gwN>/stack.json under pytest -n.
    states = (
        sorted(
            path
            for pattern in ("*/stack.json", "*/*/stack.json")
            for path in root.glob(pattern)
            if not path.parent.is_symlink() and not path.parent.parent.is_symlink()
        )
        if root.exists()
        else []
    )
    if not states:
        console.print(f"no running stack under {root}")
        return
    for state_file in states:
        state = json.loads(state_file.read_text())
        owner = int(state["owner_pid"])
        console.print(f"stopping run {state['run_id']} (pid {owner})")
        try:
            os.kill(owner, signal.SIGTERM)
        except ProcessLookupError:
            # The owner died without cleaning up: its reaper already swept; remove the file.
            state_file.unlink(missing_ok=True)
            continue
        deadline = time.monotonic() + timeout
        while state_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        if state_file.exists():
            console.print(f"[red]run {state['run_id']} did not stop in {timeout:.0f} s[/]")
            sys.exit(1)


_workflows_option = click.option(
    "--workflows",
    "workflows_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder of workflows under test, one sub-folder each with manifest.json "
    "(default: the bundled workflows_under_test).",
)


@main.command(name="list")
@_workflows_option
@click.option(
    "--verdicts",
    is_flag=True,
    help="List the verdicts instead (code, violation or not, meaning; by precedence).",
)
def list_cases(workflows_dir: Path | None, verdicts: bool) -> None:
    """List the cases of the crash matrix with their expected verdicts (starts nothing)."""
    if verdicts:
        from harness.verdicts import print_vocabulary

        print_vocabulary()
        return
    from harness.cases import matrix
    from harness.manifest import discover
    from harness.plugin import BUNDLED_WORKFLOWS

    try:
        cases = matrix(discover(workflows_dir or BUNDLED_WORKFLOWS, on_warning=_warn))
    except HarnessError as exc:
        _fail(exc)
    for case in cases:
        expected = "/".join(sorted(v.value for v in case.expected))
        click.echo(f"{case.id:60} expect {expected}")
    console.print(f"{len(cases)} cases")


@main.command()
def schema() -> None:
    """Print the JSON Schema of manifest.json (for editors: README says how to use it)."""
    from harness.manifest_model import json_schema

    click.echo(json.dumps(json_schema(), indent=2))


@main.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@_workflows_option
@click.option(
    "-k",
    "keyword",
    default=None,
    metavar="EXPR",
    help="Only the cases whose id matches, e.g. -k 'payment_naive and worker_kill'.",
)
@click.option(
    "--alluredir", default="allure-results", show_default=True, help="Where Allure results go."
)
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Stacks side by side on this machine (pytest-xdist workers, one stack each).",
)
@click.option(
    "--shard",
    default=None,
    metavar="I/N",
    help="Run only shard I of N of the selected cases (stable; one CI machine per shard).",
)
@click.option(
    "--shard-timings",
    "shard_timings",
    multiple=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="timings.json of an earlier run: balance --shard by measured cost. Repeatable.",
)
@click.option(
    "--repeat",
    type=click.IntRange(min=1),
    default=None,
    help="Run every case N times (ids end in -r1..-rN).",
)
@click.option(
    "--attach",
    "attach_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    metavar="RUN_DIR",
    help="Use the warm stack `n8n-chaos up` runs in RUN_DIR. By default a live one under "
    "the runs folder is used when its options match; with -j only the first job attaches.",
)
@click.option(
    "--no-attach", is_flag=True, help="Start a fresh stack even when `n8n-chaos up` runs one."
)
@_backend_options
@click.pass_context
def run(
    ctx: click.Context,
    workflows_dir: Path | None,
    keyword: str | None,
    alluredir: str,
    jobs: int,
    shard: str | None,
    shard_timings: tuple[Path, ...],
    repeat: int | None,
    attach_dir: Path | None,
    no_attach: bool,
    backend: str,
    n8n_image: str | None,
) -> None:
    """Run the crash matrix (a pytest run of harness/suite.py); extra args go to pytest.

    \b
    Examples:
      n8n-chaos run                                   every case, bundled workflows
      n8n-chaos run -k payment_idempotent-retry-worker_kill-after_commit
      n8n-chaos run --workflows ./my_workflows -x     your own workflows + manifests
      n8n-chaos run -j 2                              two stacks side by side
      n8n-chaos run --shard 2/4                       the second of four CI machines
      n8n-chaos up & n8n-chaos run -k CASE            one case on the warm stack, in seconds
      n8n-chaos run --backend compose -k worker_kill  the same cases on containers
    \b
    Exit codes (as Jepsen's): 0 every verdict as expected; 1 a violation (a verdict the
    case does not expect); 2 a harness error (NO-EVIDENCE not expected, a case without a
    verdict, a stack that did not come up, a bad input). The verdicts of the run are in
    verdicts.json in its run directory.
    """
    from harness.sharding import parse_shard

    if shard is not None:
        try:
            parse_shard(shard)
        except ConfigError as exc:
            _fail(exc)
    # Bad workflows or manifests: one line naming the fix, before pytest and any stack start.
    # Neither harness.plugin nor the suite is imported here: pytest loads them in this
    # process (_pytest_with_verdicts); a module imported before it is not assert-rewritten.
    import importlib.resources
    import importlib.util

    from harness.cases import matrix
    from harness.manifest import discover

    bundled = Path(str(importlib.resources.files("workflows_under_test")))
    try:
        matrix(discover(workflows_dir or bundled, on_warning=_warn))
    except HarnessError as exc:
        _fail(exc)
    for path in shard_timings:
        if not path.is_file():
            _fail(
                ConfigError(
                    f"--shard-timings {path}: no such file; pass the timings.json of an "
                    "earlier run (in its run directory), or leave the option out"
                )
            )
    argv = [
        sys.executable,
        "-m",
        "pytest",
        str(importlib.util.find_spec("harness.suite").origin),  # type: ignore[union-attr]
        "-p",
        "no:cacheprovider",
        f"--alluredir={alluredir}",
    ]
    if workflows_dir is not None:
        argv.append(f"--chaos-workflows={workflows_dir}")
    if keyword:
        argv += ["-k", keyword]
    if jobs > 1:
        argv += ["-n", str(jobs)]
    if shard is not None:
        argv.append(f"--shard={shard}")
    argv += [f"--shard-timings={path}" for path in shard_timings]
    if repeat is not None:
        argv.append(f"--chaos-repeat={repeat}")
    if attach_dir is not None:
        argv.append(f"--n8n-attach={attach_dir}")
    if no_attach:
        argv.append("--n8n-no-attach")
    # Only the plugins the suite needs: other pytest plugins of the environment (hypothesis,
    # schemathesis, ...) cost seconds of start-up that a one-case rerun on a warm stack
    # must not pay. PYTEST_DISABLE_PLUGIN_AUTOLOAD= (empty) loads every installed one.
    if os.environ.setdefault("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1"):
        argv += ["-p", "harness.plugin", "-p", "allure_pytest.plugin", "-p", "xdist.plugin"]
        # The ini of a checkout names options of plugins left out here (asyncio_*).
        argv += ["-W", "ignore:Unknown config option:pytest.PytestConfigWarning"]
    if backend != "native":
        argv.append(f"--backend={backend}")
    if n8n_image is not None:
        argv.append(f"--n8n-image={n8n_image}")
    argv += ctx.args
    sys.exit(_pytest_with_verdicts(argv))


def _pytest_with_verdicts(argv: list[str]) -> int:
    """Run pytest; exit like Jepsen from the verdicts it left (harness.terminal.summary)."""
    import tempfile

    import pytest

    from harness.terminal.summary import run_exit_code

    with tempfile.TemporaryDirectory(prefix="n8n-chaos-verdicts-") as tmp:
        summary = Path(tmp) / "verdicts.json"
        # In this process: a second interpreter's start-up (imports of the harness, its
        # libraries and pytest) costs about a second of CPU on every one-case rerun.
        status = pytest.main([*argv[3:], f"--chaos-summary={summary}"])
        return int(run_exit_code(status, summary))


@main.command()
@click.option(
    "--results",
    "results",
    multiple=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="An Allure results folder a run wrote (`run --alluredir`); repeat it to merge "
    "several (one per CI shard) into one report. Default: allure-results.",
)
@click.option(
    "--out",
    default="allure-report",
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
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
            lambda: _installer(DEFAULT_N8N_VERSION).allure_cli(),
            history_from=history,
        )
    except HarnessError as exc:
        _fail(exc)
    console.print(f"report: {index.resolve()}")
    console.print(f"history for the next report: {(out / 'history').resolve()}")


_runs_option = click.option(
    "--runs",
    "runs_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The runs folder (or one run's folder) to look in (default: N8N_CHAOS_RUNS, "
    "else ./.n8n-chaos/runs).",
)


@main.command()
@click.argument("case")
@_runs_option
def show(case: str, runs_dir: Path | None) -> None:
    """Show one saved case: its verdict, why, the proofs and a timeline.

    CASE is a case id (the newest run that has it), or a path to its evidence.json or
    its folder. Starts nothing.
    """
    from harness import inspect

    out = Console(highlight=False, soft_wrap=True)
    try:
        path = inspect.find_evidence(case, runs_dir or default_runs_root())
        out.print(inspect.show(inspect.load(path), path))
    except HarnessError as exc:
        _fail(exc)


@main.command()
@click.argument("path", type=click.Path(exists=True, path_type=Path))
def recheck(path: Path) -> None:
    """Re-judge saved evidence with the current oracle, offline.

    PATH is a run folder (every case in it) or one case (its folder or evidence.json).
    Prints a line per case, the verdict grid and which verdicts changed against the saved
    ones; exits 0 (all as expected), 1 (a violation) or 2 (a case without a verdict).
    """
    from harness import inspect
    from harness.cases import scenarios
    from harness.terminal.grid import build_grid
    from harness.terminal.outcome import exit_code
    from harness.terminal.view import case_line, grid_view, totals

    out = Console(highlight=False, soft_wrap=True)
    try:
        saved = inspect.saved_verdicts(path)
        rechecked = [inspect.recheck(f, saved) for f in inspect.evidence_files(path)]
    except HarnessError as exc:
        _fail(exc)
    outcomes = [r.outcome for r in rechecked]
    for outcome in outcomes:
        out.print(case_line(outcome), no_wrap=True, overflow="ellipsis", crop=out.is_terminal)
    grid = build_grid(outcomes, [s.id for s in scenarios()])
    out.print()
    out.print(grid_view(grid))
    out.print(totals(grid))
    out.print(inspect.changes_view(rechecked))
    sys.exit(int(exit_code(outcomes)))


def _pairs(items: tuple[str, ...], flag: str) -> dict[str, str]:
    pairs = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint=flag)
        pairs[key] = value
    return pairs


if __name__ == "__main__":
    main()
