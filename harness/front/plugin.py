"""The pytest plugin (entry point ``n8n_chaos``): options and fixtures that wire the stack.

Fixtures only wire objects together; the work is in ``harness.stack``.

    n8n_chaos_config        the StackConfig resolved from the command line / ini
    n8n_chaos_installation  the installed parts (installs on first use, with progress)
    n8n_chaos_upstreams     name -> "host:port" of services the workflows call; override it
    n8n_stack               the running stack of the session (typed handles on every part)
    n8n_webhook_stack       a stack with a webhook processor, for the cases that need one
    chaos_workflows         the workflows under test (bundled, or --chaos-workflows DIR)
    chaos_deployments       each of them deployed once on the session stack
    chaos_webhook_deployments  the same on the webhook-processor stack
    chaos_case              parametrized: every case of the matrix (see harness.matrix.cases)
    chaos_phase_observers   who watches each case's phases (terminal line, Allure steps)
    chaos_shared_runs       the batches of cases that share the stack (harness.engine.batch)

Scale: under pytest-xdist (``-n N``) every worker process owns its own stack (a batch of
cases that share a stack goes to one worker: ``harness.engine.batch.BatchScheduling``); the run
directories of one invocation are ``<runs>/<invocation id>/<gwN>/`` with ``latest``
pointing at the invocation. ``--shard I/N`` keeps a stable part of the selected tests
(``harness.matrix.sharding``); every run with a stack writes ``timings.json`` (seconds per test)
into its run directory for ``--shard-timings``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from harness.errors import AttachError, ConfigError, HarnessError, SetupError
from harness.front.options import ChaosOptions, add_pytest_options
from harness.matrix.sharding import TIMINGS_FILE, assign, load_timings, parse_shard, write_timings
from harness.report.allure_report import write_categories, write_environment
from harness.stack.install import Installation, Installer
from harness.stack.run import default_runs_root, new_run_id, point_latest
from harness.stack.stack import Stack, StackConfig
from harness.terminal.reporter import INVOCATION as _INVOCATION
from harness.terminal.reporter import RUN_DIR as _RUN_DIR
from harness.terminal.reporter import session_run_dir

if TYPE_CHECKING:
    from harness.engine.batch import SharedRuns
    from harness.engine.runner import PhaseObserver
    from harness.matrix.cases import Case
    from harness.workflow.deployment import Deployment
    from harness.workflow.manifest import WorkflowUnderTest

# The terminal's case lines, live line, verdict grid and verdicts.json.
pytest_plugins = ["harness.terminal.reporter"]


def pytest_addoption(parser: pytest.Parser) -> None:
    # Declared once with the CLI's (harness.front.options): `n8n-chaos run` hands them on.
    add_pytest_options(parser.getgroup("n8n-chaos", "n8n chaos harness"))


_OPTIONS = pytest.StashKey[ChaosOptions]()


def options_of(config: pytest.Config) -> ChaosOptions:
    """The run's options, read back from pytest once per process: every hook's and fixture's."""
    if _OPTIONS not in config.stash:
        config.stash[_OPTIONS] = ChaosOptions.of_pytest(config)
    return config.stash[_OPTIONS]


class ChaosDeployments(dict[str, tuple["WorkflowUnderTest", "Deployment"]]):
    """Workflow name -> (workflow, its deployment), each deployed when its first case asks:
    a workflow n8n refuses (a node with a configuration issue) fails its own cases, with
    n8n's words, and no other workflow's."""

    def __init__(self, stack: Stack, workflows: list[WorkflowUnderTest]) -> None:
        super().__init__()
        self._stack = stack
        self._workflows = {w.name: w for w in workflows}
        self._refused: dict[str, str] = {}

    def __missing__(self, name: str) -> tuple[WorkflowUnderTest, Deployment]:
        from harness.workflow.deployment import deploy_under_test

        if name in self._refused:
            raise SetupError(self._refused[name])
        workflow = self._workflows[name]
        try:
            deployed = (workflow, deploy_under_test(self._stack, workflow))
        except HarnessError as exc:
            where = workflow.directory or workflow.name
            self._refused[name] = f"{where}: could not be deployed: {exc}{_fix_for(str(exc))}"
            raise SetupError(self._refused[name]) from exc
        self[name] = deployed
        return deployed


def _fix_for(refusal: str) -> str:
    """What to do about n8n's refusal to publish a workflow with a node it finds unfinished."""
    if "Cannot publish workflow" not in refusal:
        return ""
    return (
        "; n8n would refuse it in production too: open the workflow in n8n's editor, fix the "
        "node(s) named (an export leaves out parameters kept at their default, so a node "
        "whose resource or operation was never chosen runs the default one) and export again"
    )


def _matrix(options: ChaosOptions) -> tuple[list[Case], list[WorkflowUnderTest]]:
    from harness.matrix.cases import matrix_of

    return matrix_of(options.workflows, repeat=options.repeat, workers=options.workers)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "chaos_case" not in metafunc.fixturenames:
        return
    cases, _ = _matrix(options_of(metafunc.config))
    metafunc.parametrize("chaos_case", cases, ids=[c.id for c in cases], scope="function")


# -- cases that share a stack (harness.engine.batch) ---------------------------------------------
_SHARE_KEY = "n8n_chaos_share"


def _sharing(config: pytest.Config) -> bool:
    """Whether shareable cases run in batches: not with --chaos-alone; under xdist only
    with its default load scheduling (which BatchScheduling replaces)."""
    if options_of(config).alone:
        return False
    workerinput: dict[str, Any] = getattr(config, "workerinput", {})
    if workerinput:
        return bool(workerinput.get(_SHARE_KEY))
    return options_of(config).dist in ("no", "load")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """xdist (its default load scheduling): a batch's tests go to one worker together, and
    so do the cases on the webhook-processor stack (harness.engine.batch)."""
    if options_of(config).dist not in ("no", "load"):
        return None
    from harness.engine.batch import BatchScheduling, shareable_cases

    cases, workflows = _matrix(options_of(config))
    shareable = shareable_cases(cases, workflows) if _sharing(config) else {}
    on_webhook_stack = [c.id for c in cases if c.needs_webhook_processor]
    return BatchScheduling(config, log, shareable, on_webhook_stack)


@pytest.fixture(scope="session")
def chaos_shared_runs(request: pytest.FixtureRequest) -> SharedRuns:
    """This process's batches of cases that share the stack (none with --chaos-alone)."""
    from harness.engine.batch import SharedRuns, shareable_cases, shared_runs

    if not _sharing(request.config):
        return SharedRuns({})
    shareable = shareable_cases(*_matrix(options_of(request.config)))
    return shared_runs(request.session.items, shareable)


# -- scale: xdist workers, shards, timings ---------------------------------------------
_DURATIONS = pytest.StashKey[dict[str, float]]()
_WORKER_KEY = "n8n_chaos_invocation"


def _is_xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_DURATIONS] = {}
    config.pluginmanager.register(_Timings(config.stash[_DURATIONS]), "n8n-chaos-timings")
    options = options_of(config)
    if options.shard:
        try:
            parse_shard(options.shard)
        except ConfigError as exc:
            raise pytest.UsageError(str(exc)) from exc
    if not _is_xdist_worker(config) and (options.numprocesses or 0):
        # Under xdist: one directory for the whole invocation, a sub-folder per worker.
        root = options.runs_dir or default_runs_root()
        config.stash[_INVOCATION] = root.resolve() / new_run_id()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist: tell each worker the invocation's run directory."""
    invocation = node.config.stash.get(_INVOCATION, None)
    if invocation is not None:
        node.workerinput[_WORKER_KEY] = str(invocation)
    node.workerinput[_SHARE_KEY] = _sharing(node.config)


def _worker_run_dir(config: pytest.Config) -> Path | None:
    """Under xdist, this worker's run directory ``<invocation>/<gwN>``; else None."""
    workerinput: dict[str, Any] = getattr(config, "workerinput", {})
    invocation = workerinput.get(_WORKER_KEY)
    if invocation is None:
        return None
    return Path(invocation) / str(workerinput.get("workerid", f"pid{os.getpid()}"))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    options = options_of(config)
    if not options.shard:
        return
    index, total = parse_shard(options.shard)
    try:
        costs = load_timings(options.shard_timings)
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from exc
    chosen = assign([item.nodeid for item in items], total, costs)
    keep = [item for item in items if chosen[item.nodeid] == index]
    dropped = [item for item in items if chosen[item.nodeid] != index]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


class _Timings:
    """Seconds per test (the call phase). Under xdist the controller sees every worker's
    reports, so it alone writes them."""

    def __init__(self, durations: dict[str, float]) -> None:
        self.durations = durations

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call":
            self.durations[report.nodeid] = report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if _is_xdist_worker(config):
        return  # the controller writes what is shared
    options = options_of(config)
    if options.alluredir:
        write_categories(Path(options.alluredir))
        write_environment(Path(options.alluredir), _environment(options))
    run_dir = session_run_dir(config)
    if run_dir is None or not run_dir.is_dir():
        return
    durations = config.stash.get(_DURATIONS, {})
    if durations:
        write_timings(run_dir / TIMINGS_FILE, durations)
    if _INVOCATION in config.stash:
        _index_cases(run_dir)


def _environment(options: ChaosOptions) -> dict[str, object]:
    """What the report's Environment block shows: the stack the cases ran on."""
    return {
        "n8n.version": options.n8n_version,
        "backend": "n8n queue mode: PostgreSQL 17, Redis, Toxiproxy, fake payment provider",
        "n8n.workers": options.workers,
        "n8n.webhook_processor": options.webhook_processor,
        "n8n.timings": options.n8n_timings,
        "toxiproxy.seed": StackConfig().toxiproxy_seed,
        "stacks": options.numprocesses or 1,
        "shard": options.shard,
        "repeat": options.repeat,
        "workflows": options.workflows,
    }


def _index_cases(invocation: Path) -> None:
    """``<invocation>/cases/<case id>`` -> the worker folder that ran it (one place to look)."""
    index = invocation / "cases"
    for case_dir in sorted(invocation.glob("*/cases/*")):
        if case_dir.parent.parent == invocation:
            continue
        index.mkdir(exist_ok=True)
        link = index / case_dir.name
        with contextlib.suppress(OSError):
            link.symlink_to(os.path.relpath(case_dir, index))


@pytest.fixture(scope="session")
def chaos_workflows(pytestconfig: pytest.Config) -> list[WorkflowUnderTest]:
    from harness.workflow.manifest import discover

    return discover(options_of(pytestconfig).workflows)


@pytest.fixture(scope="session")
def chaos_deployments(
    request: pytest.FixtureRequest, n8n_stack: Stack, chaos_workflows: list[WorkflowUnderTest]
) -> ChaosDeployments:
    """Each workflow under test that a selected case uses (with its ledger schema, Error
    Workflow and reconciler), deployed once per session when its first case runs:
    `-k ONE_CASE` deploys one."""
    del request
    return ChaosDeployments(n8n_stack, chaos_workflows)


@pytest.fixture(scope="session")
def chaos_harness_retries(pytestconfig: pytest.Config) -> int:
    """How often a case whose fault did not land runs again (``--chaos-harness-retries``)."""
    retries = options_of(pytestconfig).harness_retries
    if retries < 0:
        raise pytest.UsageError("--chaos-harness-retries: give a number >= 0")
    return retries


@pytest.fixture(scope="session")
def chaos_phase_observers(pytestconfig: pytest.Config) -> list[PhaseObserver]:
    """Observers of every case's phases (``harness.engine.runner.PhaseObserver``): the terminal's
    live line and the report's steps each add theirs here."""
    observers: list[PhaseObserver] = []
    if options_of(pytestconfig).alluredir:
        from harness.report.steps import AllureSteps

        observers.append(AllureSteps())  # one Allure step per phase, as it runs
    return observers


def _reporter_line(config: pytest.Config, message: str) -> None:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return
    # Session fixtures run under output capture: show the line now (which stack, where).
    capture = config.pluginmanager.get_plugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        reporter.write_line(f"[n8n-chaos] {message}")


@pytest.fixture(scope="session")
def n8n_chaos_upstreams() -> dict[str, str]:
    """Services the workflows call, proxied per worker. Override in a conftest."""
    return {}


@pytest.fixture(scope="session")
def n8n_chaos_config(
    pytestconfig: pytest.Config, n8n_chaos_upstreams: dict[str, str]
) -> StackConfig:
    options = options_of(pytestconfig)
    # The session's own stack keeps a worker booted ahead (harness.stack.spare); a warm `up`
    # stack others attach to has none (the field is not part of the shape they match).
    return options.stack_config(
        run_dir=_worker_run_dir(pytestconfig),
        upstreams=n8n_chaos_upstreams,
        spare_worker=options.backend == "native",
    )


@pytest.fixture(scope="session")
def n8n_chaos_installation(
    pytestconfig: pytest.Config, n8n_chaos_config: StackConfig
) -> Installation:
    def progress(part: str, message: str) -> None:
        _reporter_line(pytestconfig, f"install {part}: {message}")

    return Installer(n8n_version=n8n_chaos_config.n8n_version, progress=progress).install()


def _attached_stack(
    config: pytest.Config, installation: Installation, stack_config: StackConfig
) -> Stack | None:
    """The warm stack of `n8n-chaos up`, when there is one to use (harness.front.attach).
    One warm stack serves one run: under xdist only gw0 attaches."""
    from harness.front.attach import attach_for_session

    workerinput: dict[str, Any] = getattr(config, "workerinput", {})
    options = options_of(config)
    try:
        return attach_for_session(
            installation,
            stack_config,
            named=options.attach_dir,
            allowed=not options.no_attach and workerinput.get("workerid", "gw0") == "gw0",
            progress=lambda m: _reporter_line(config, m),
        )
    except AttachError as exc:
        raise pytest.UsageError(str(exc)) from exc


def _session_stack(
    config: pytest.Config,
    installation: Installation,
    stack_config: StackConfig,
    attach: bool,
) -> Stack:
    if stack_config.run_dir is not None:
        stack_config.run_dir.parent.mkdir(parents=True, exist_ok=True)
        point_latest(stack_config.run_dir.parent)
    attached = _attached_stack(config, installation, stack_config) if attach else None
    stack = attached or Stack.start(
        installation, stack_config, progress=lambda m: _reporter_line(config, m)
    )
    if stack_config.run_dir is None and _RUN_DIR not in config.stash:
        config.stash[_RUN_DIR] = stack.run.run_dir
    _reporter_line(
        config,
        "stack ready: " + ", ".join(f"{k} {v:.1f} s" for k, v in stack.timings.items()),
    )
    return stack


@pytest.fixture(scope="session")
def n8n_stack(
    pytestconfig: pytest.Config, n8n_chaos_installation: Installation, n8n_chaos_config: StackConfig
) -> Iterator[Stack]:
    """A real queue-mode stack for the whole session (one per xdist worker); everything
    ends at session end."""
    stack = _session_stack(pytestconfig, n8n_chaos_installation, n8n_chaos_config, attach=True)
    try:
        yield stack
    finally:
        stack.stop()


@pytest.fixture(scope="session")
def n8n_webhook_stack(
    request: pytest.FixtureRequest,
    n8n_chaos_installation: Installation,
    n8n_chaos_config: StackConfig,
) -> Iterator[Stack]:
    """A stack whose production webhooks go through a webhook processor (``n8n webhook``),
    for the cases that need one: the session's own stack when it has one
    (``--n8n-webhook-processor``), else a second stack, brought up when the first such case
    runs, in ``<run dir>-webhook`` under xdist."""
    if n8n_chaos_config.webhook_processor:
        yield request.getfixturevalue("n8n_stack")
        return
    run_dir = n8n_chaos_config.run_dir
    config = dataclasses.replace(
        n8n_chaos_config,
        webhook_processor=True,
        main_port=None,
        run_dir=run_dir.with_name(f"{run_dir.name}-webhook") if run_dir is not None else None,
    )
    stack = _session_stack(request.config, n8n_chaos_installation, config, attach=False)
    try:
        yield stack
    finally:
        stack.stop()


@pytest.fixture(scope="session")
def chaos_webhook_deployments(
    n8n_webhook_stack: Stack, chaos_workflows: list[WorkflowUnderTest]
) -> ChaosDeployments:
    """The workflows under test deployed on the webhook-processor stack, as they are asked."""
    return ChaosDeployments(n8n_webhook_stack, chaos_workflows)
