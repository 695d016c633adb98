"""How many stacks `n8n-chaos run` runs when -j is not given: what the machine holds (cores,
free memory), one when a live `up` stack would be attached; said in pytest's header."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from harness.errors import ConfigError
from harness.front.attach import STATE_FILE, config_shape
from harness.front.cli import main, run_command
from harness.front.cli.stack_count import (
    STACK_PEAK_BYTES,
    Machine,
    StackChoice,
    cases_selected,
    choose_stacks,
    warm_stack_to_attach,
    xdist_in,
)
from harness.front.options import ChaosOptions
from harness.stack.stack import StackConfig
from harness.workflow.manifest import BUNDLED_WORKFLOWS, workflows_env

pytest_plugins = ["pytester"]
GB = 1_000_000_000


@pytest.mark.parametrize(
    ("cores", "free", "count"),
    [
        (2, 23 * GB, 6),  # this machine: the cores decide, three stacks each
        (16, 5 * GB, 5 * GB // STACK_PEAK_BYTES),  # memory decides
        (4, GB, 1),  # not even one stack's worth: still one
        (1, 64 * GB, 3),
        (3, None, 9),  # memory unknown: the cores
    ],
)
def test_the_machine_decides(cores: int, free: int | None, count: int) -> None:
    choice = choose_stacks(Machine(cores, free), attaching=None)
    assert choice.count == count
    assert f"{cores} core" in choice.why and "-j N" in choice.why
    assert ("GB free" if free else "free memory unknown") in choice.why


def test_a_warm_stack_to_attach_means_one(tmp_path: Path) -> None:
    choice = choose_stacks(Machine(8, 64 * GB), attaching=tmp_path)
    assert choice.count == 1
    assert str(tmp_path) in choice.why
    assert choice.header() == f"stacks: 1 ({choice.why})"


def test_header_names_the_choice() -> None:
    choice = choose_stacks(Machine(2, 23 * GB), attaching=None)
    assert choice.header() == (
        "stacks: 6 (the least of 6 for 2 cores (3 a core), 9 for 23 GB free (2.4 GB a stack);"
        " -j N to choose)"
    )


def test_no_more_stacks_than_cases() -> None:
    choice = choose_stacks(Machine(8, 64 * GB), attaching=None, cases=1)
    assert choice.count == 1
    assert "1 for 1 case selected (one per 10, at least one per core)" in choice.why
    assert choose_stacks(Machine(8, 64 * GB), attaching=None, cases=3).count == 3


@pytest.mark.parametrize(
    ("cores", "cases", "count"),
    [
        (2, 3, 2),  # a stack per core costs no case its CPU
        (2, 32, 4),  # beyond that, ten cases a stack (one workflow's gate)
        (2, 315, 6),  # the whole matrix: the cores decide
        (8, 24, 8),
    ],
)
def test_beyond_a_stack_per_core_each_brings_ten_cases(cores: int, cases: int, count: int) -> None:
    assert choose_stacks(Machine(cores, 64 * GB), attaching=None, cases=cases).count == count


IDS = ["w-retry-worker_kill-after_commit", "w-retry-no_fault-none", "v-retry-no_fault-none"]


@pytest.mark.parametrize(
    ("keyword", "selected"),
    [
        (None, 3),
        ("w-retry-no_fault-none", 1),
        ("NO_FAULT", 2),  # pytest's -k ignores case
        ("exactly_once", 3),  # the test function's name: every case
        ("no_fault and w", 1),  # an expression, read as pytest reads it
        ("not worker_kill", 2),
        ("nothing_like_it", None),
    ],
)
def test_cases_a_plain_k_selects(keyword: str | None, selected: int | None) -> None:
    assert cases_selected(IDS, keyword) == selected


def test_a_broken_k_expression_names_the_fix() -> None:
    with pytest.raises(ConfigError, match="not a pytest keyword expression"):
        cases_selected(IDS, "no_fault and (")


@pytest.mark.parametrize(
    ("args", "value"),
    [(["-x"], None), (["-n", "3"], "3"), (["-n2"], "2"), (["--numprocesses=auto"], "auto")],
)
def test_pytests_own_n_is_seen(args: list[str], value: str | None) -> None:
    assert xdist_in(args) == value


def _values(**given: Any) -> ChaosOptions:
    return ChaosOptions.of(given)


def _bundled(**given: Any) -> StackConfig:
    """The shape of `up` for the bundled workflows: their $env and $vars."""
    env, variables = workflows_env(BUNDLED_WORKFLOWS)
    return StackConfig(n8n_env=env, variables=variables, **given)


def _live_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: StackConfig) -> Path:
    """A live `up` stack of this shape under the runs folder (as attach.live_stacks sees it)."""
    run_dir = tmp_path / "runs" / "up-1"
    run_dir.mkdir(parents=True)
    (run_dir / STATE_FILE).write_text(json.dumps({"shape": config_shape(config)}))
    seen: list[Path] = []

    def live_stacks(root: Path) -> list[Path]:
        seen.append(root)
        return [run_dir] if root == tmp_path / "runs" else []

    monkeypatch.setattr("harness.front.attach.live_stacks", live_stacks)
    monkeypatch.setenv("N8N_CHAOS_RUNS", str(tmp_path / "runs"))
    return run_dir


def test_a_live_up_stack_of_this_shape_is_attached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = _live_up(tmp_path, monkeypatch, _bundled())
    assert warm_stack_to_attach(_values()) == run_dir
    assert warm_stack_to_attach(_values(no_attach=True)) is None
    assert warm_stack_to_attach(_values(workers=3)) is None  # shaped differently: fresh
    assert warm_stack_to_attach(_values(backend="compose")) is None
    assert warm_stack_to_attach(_values(n8n_timings="default")) is None
    assert warm_stack_to_attach(_values(runs_dir=tmp_path / "other")) is None
    assert warm_stack_to_attach(_values(attach_dir=tmp_path / "named")) == tmp_path / "named"


def test_an_up_stack_without_the_workflows_env_is_not_attached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The bundled subflow_checkout reads $env and $vars: n8n must have them from the start.
    _live_up(tmp_path, monkeypatch, StackConfig())
    assert warm_stack_to_attach(_values()) is None


def _run(
    monkeypatch: pytest.MonkeyPatch, machine: Machine, *args: str
) -> tuple[list[str], StackChoice | None]:
    """`n8n-chaos run ARGS` up to the pytest it would start."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setattr(run_command, "this_machine", lambda: machine)
    started: list[tuple[list[str], StackChoice | None]] = []

    def pytest_with_verdicts(argv: list[str], stacks: StackChoice | None) -> int:
        started.append((argv, stacks))
        return 0

    monkeypatch.setattr(run_command, "_pytest_with_verdicts", pytest_with_verdicts)
    done = CliRunner().invoke(main, ["run", *args])
    assert done.exit_code == 0, done.output
    return started[0]


def _n(argv: list[str]) -> str | None:
    return argv[argv.index("-n") + 1] if "-n" in argv else None


def test_run_without_j_runs_what_the_machine_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("N8N_CHAOS_RUNS", str(tmp_path / "runs"))  # no `up` there
    argv, stacks = _run(monkeypatch, Machine(2, 23 * GB))
    assert _n(argv) == "6"
    assert stacks is not None and stacks.why.startswith("the least of 6 for 2 cores")
    argv, stacks = _run(monkeypatch, Machine(2, 23 * GB), "-j", "1")
    assert _n(argv) is None and stacks == StackChoice(1, "-j 1")
    argv, stacks = _run(monkeypatch, Machine(2, 23 * GB), "-j", "3")
    assert _n(argv) == "3"
    argv, stacks = _run(monkeypatch, Machine(2, 23 * GB), "-n", "4")  # pytest's own
    assert argv[-2:] == ["-n", "4"] and argv.count("-n") == 1 and stacks is None
    # One case, no `up`: one stack (no xdist worker that would wait for nothing).
    argv, stacks = _run(monkeypatch, Machine(2, 23 * GB), "-k", "payment_naive-retry-no_fault-none")
    assert _n(argv) is None
    assert stacks is not None and "1 for 1 case selected" in stacks.why


def test_run_without_j_attaches_to_a_live_up_with_one_stack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = _live_up(tmp_path, monkeypatch, _bundled())
    argv, stacks = _run(monkeypatch, Machine(2, 23 * GB), "-k", "no_fault")
    assert _n(argv) is None
    assert stacks is not None and stacks.count == 1 and str(run_dir) in stacks.why
    argv, _ = _run(monkeypatch, Machine(2, 23 * GB), "--no-attach")
    assert _n(argv) == "6"


def test_the_choice_is_in_pytests_header(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_one():\n    pass\n")
    choice = StackChoice(2, "2 cores, 23 GB free; -j N to choose")
    result = pytester.runpytest("-p", "no:asyncio", plugins=[run_command._StacksHeader(choice)])
    result.stdout.fnmatch_lines(["n8n-chaos stacks: 2 (2 cores, 23 GB free; -j N to choose)"])
    assert result.ret == 0
