"""The pytest plugin (entry point ``n8n_chaos``): options and fixtures that wire the stack.

Fixtures only wire objects together; the work is in ``harness.stack``.

    n8n_chaos_config        the StackConfig resolved from the command line / ini
    n8n_chaos_installation  the installed parts (installs on first use, with progress)
    n8n_chaos_upstreams     name -> "host:port" of services the workflows call; override it
    n8n_stack               the running stack of the session (typed handles on every part)
    chaos_workflows         the workflows under test (bundled, or --chaos-workflows DIR)
    chaos_deployments       each of them deployed once on the session stack
    chaos_case              parametrized: every case of the matrix (see harness.cases)
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from harness.report.allure_report import write_categories
from harness.stack.install import DEFAULT_N8N_VERSION, Installation, Installer
from harness.stack.stack import Stack, StackConfig

if TYPE_CHECKING:
    from harness.deployment import Deployment
    from harness.manifest import WorkflowUnderTest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("n8n-chaos", "n8n chaos harness")
    group.addoption(
        "--n8n-version",
        default=None,
        help=f"n8n version of the stack (default {DEFAULT_N8N_VERSION})",
    )
    group.addoption(
        "--n8n-workers",
        type=int,
        default=None,
        help="number of n8n workers in the session stack (default 2)",
    )
    group.addoption(
        "--n8n-webhook-processor",
        action="store_true",
        default=False,
        help="also run `n8n webhook` and deliver production webhooks to it",
    )
    group.addoption(
        "--n8n-ready-timeout",
        type=float,
        default=None,
        help="seconds each part may take to become ready (default 180)",
    )
    group.addoption(
        "--chaos-workflows",
        default=None,
        metavar="DIR",
        help="folder of workflows under test, one sub-folder each with manifest.json "
        "(default: the bundled workflows_under_test)",
    )
    group.addoption(
        "--n8n-runs-dir",
        default=None,
        help="where run directories (logs, evidence) go (default ./.n8n-chaos/runs)",
    )


BUNDLED_WORKFLOWS = Path(__file__).resolve().parent.parent / "workflows_under_test"

ChaosDeployments = dict[str, tuple["WorkflowUnderTest", "Deployment"]]


def _workflows_dir(config: pytest.Config) -> Path:
    chosen = config.getoption("--chaos-workflows")
    return Path(chosen) if chosen else BUNDLED_WORKFLOWS


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "chaos_case" not in metafunc.fixturenames:
        return
    from harness.cases import matrix
    from harness.manifest import discover

    config = metafunc.config
    repeat = config.getoption("--chaos-repeat", default=None)
    workers = config.getoption("--n8n-workers") or StackConfig().workers
    cases = matrix(discover(_workflows_dir(config)), repeat=repeat, workers=workers)
    metafunc.parametrize("chaos_case", cases, ids=[c.id for c in cases], scope="function")


def pytest_sessionfinish(session: pytest.Session) -> None:
    alluredir = session.config.getoption("--alluredir", default=None)
    if alluredir:
        write_categories(Path(alluredir))


@pytest.fixture(scope="session")
def chaos_workflows(pytestconfig: pytest.Config) -> list[WorkflowUnderTest]:
    from harness.manifest import discover

    return discover(_workflows_dir(pytestconfig))


@pytest.fixture(scope="session")
def chaos_deployments(
    n8n_stack: Stack, chaos_workflows: list[WorkflowUnderTest]
) -> ChaosDeployments:
    """Each workflow under test (with its ledger schema, Error Workflow and reconciler),
    deployed once per session."""
    from harness.deployment import deploy_under_test

    return {w.name: (w, deploy_under_test(n8n_stack, w)) for w in chaos_workflows}


def _reporter_line(config: pytest.Config, message: str) -> None:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"[n8n-chaos] {message}")


@pytest.fixture(scope="session")
def n8n_chaos_upstreams() -> dict[str, str]:
    """Services the workflows call, proxied per worker. Override in a conftest."""
    return {}


@pytest.fixture(scope="session")
def n8n_chaos_config(
    pytestconfig: pytest.Config, n8n_chaos_upstreams: dict[str, str]
) -> StackConfig:
    opt = pytestconfig.getoption
    defaults = StackConfig()
    runs_dir = opt("--n8n-runs-dir")
    return StackConfig(
        workers=opt("--n8n-workers") if opt("--n8n-workers") is not None else defaults.workers,
        webhook_processor=bool(opt("--n8n-webhook-processor")),
        n8n_version=opt("--n8n-version") or defaults.n8n_version,
        upstreams=n8n_chaos_upstreams,
        ready_timeout_s=(
            opt("--n8n-ready-timeout")
            if opt("--n8n-ready-timeout") is not None
            else defaults.ready_timeout_s
        ),
        runs_root=Path(runs_dir) if runs_dir else None,
    )


@pytest.fixture(scope="session")
def n8n_chaos_installation(
    pytestconfig: pytest.Config, n8n_chaos_config: StackConfig
) -> Installation:
    def progress(part: str, message: str) -> None:
        _reporter_line(pytestconfig, f"install {part}: {message}")

    return Installer(n8n_version=n8n_chaos_config.n8n_version, progress=progress).install()


@pytest.fixture(scope="session")
def n8n_stack(
    pytestconfig: pytest.Config, n8n_chaos_installation: Installation, n8n_chaos_config: StackConfig
) -> Iterator[Stack]:
    """A real queue-mode stack for the whole session; everything ends at session end."""
    stack = Stack.start(
        n8n_chaos_installation, n8n_chaos_config, progress=lambda m: _reporter_line(pytestconfig, m)
    )
    _reporter_line(
        pytestconfig,
        "stack ready: " + ", ".join(f"{k} {v:.1f} s" for k, v in stack.timings.items()),
    )
    try:
        yield stack
    finally:
        stack.stop()
