"""The options a stack run shares with pytest, declared once (harness.front.options): each shows in
the CLI commands it names and in the pytest plugin, `run` hands each on to pytest as pytest
reads it back, and the stack's defaults are StackConfig's."""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from harness.front.cli import main
from harness.front.cli.run_command import _remove_other_workflows_results, pytest_argv
from harness.front.options import OPTIONS, ChaosOptions, Command, Option, for_command
from harness.stack.stack import StackConfig

pytest_plugins = ["pytester"]

COMMANDS: tuple[Command, ...] = ("install", "up", "run", "list")


def _help(command: str) -> str:
    done = CliRunner().invoke(main, [command, "--help"], terminal_width=200)
    assert done.exit_code == 0, done.output
    return done.output


@pytest.mark.parametrize("command", COMMANDS)
def test_every_declared_option_is_in_the_commands_help(command: Command) -> None:
    text = _help(command)
    declared = for_command(command)
    assert declared, command
    for option in declared:
        for flag in option.flags:
            assert _names(flag, text), (command, flag)
    for option in set(OPTIONS) - set(declared):
        assert not _names(option.flags[0], text), (command, option.flags[0])


def _names(flag: str, text: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text) is not None


def _run_params(*args: str) -> dict[str, Any]:
    """`run`'s declared values as click parses them (nothing runs)."""
    command = main.commands["run"]
    with command.make_context("run", list(args)) as ctx:
        return {o.dest: ctx.params[o.dest] for o in for_command("run")}


def test_every_declared_option_is_a_pytest_option(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # the plugin named, only once
    config = pytester.parseconfig("-p", "harness.front.plugin")
    for option in OPTIONS:
        expected = False if option.kind == "flag" else option.default
        assert config.getoption(option.pytest_flag) == expected, option.pytest_flag
    assert "--n8n-workers" in [o.pytest_flag for o in OPTIONS]


def _given(option: Option) -> list[str]:
    """A value for the option on `run`'s command line, other than its default."""
    if option.kind == "flag":
        return [option.flags[0]]
    if option.choices is not None:
        return [option.flags[0], next(c for c in option.choices if c != option.default)]
    value = {"int": "3", "float": "7.5"}.get(option.type, f"/x/{option.dest}")
    return [option.flags[0], value] * (2 if option.kind == "multiple" else 1)


def test_run_hands_each_option_on_as_pytest_reads_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    given = [arg for option in for_command("run") for arg in _given(option)]
    values = _run_params(*given)
    argv = pytest_argv(ChaosOptions.of(values, alluredir="allure-results"), None, 1, [])
    handed_on = [a for a in argv if a.split("=")[0] in {o.pytest_flag for o in OPTIONS}]
    config = pytester.parseconfig("-p", "harness.front.plugin", *handed_on)
    for option in for_command("run"):
        read_back = config.getoption(option.pytest_flag)
        value = values[option.dest]
        if option.kind == "multiple":
            assert read_back == [str(v) for v in value], option.pytest_flag
        elif option.type in ("dir", "file"):
            assert read_back == str(value), option.pytest_flag
        else:
            assert read_back == value, option.pytest_flag
        assert read_back not in (None, False, option.default), option.pytest_flag


def test_run_translates_its_options_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pytest arguments `run` made before the options were declared once (the order of
    distinct options is free: pytest reads them by name)."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    values = _run_params(
        *("--workflows", "W", "--shard", "1/2", "--shard-timings", "a", "--shard-timings", "b"),
        *("--repeat", "3", "--attach", "R", "--no-attach", "--backend", "compose"),
        *("--n8n-image", "img"),
    )
    argv = pytest_argv(ChaosOptions.of(values, alluredir="out"), "K", 2, ["-x"])
    assert argv[:3] == [sys.executable, "-m", "pytest"]
    assert argv[4:] == [
        *("-p", "no:cacheprovider", "--alluredir=out", "--tb=line", "-k", "K", "-n", "2"),
        *("--backend=compose", "--n8n-image=img", "--chaos-workflows=W", "--shard=1/2"),
        *("--shard-timings=a", "--shard-timings=b", "--chaos-repeat=3", "--n8n-attach=R"),
        "--n8n-no-attach",
        *("-p", "harness.front.plugin", "-p", "allure_pytest.plugin", "-p", "xdist.plugin"),
        *("-W", "ignore:Unknown config option:pytest.PytestConfigWarning"),
        "-x",
    ]
    # Defaults are not handed on: a plain `run` gives pytest what it always did.
    plain = pytest_argv(ChaosOptions.of(_run_params(), alluredir="allure-results"), None, 1, [])
    assert plain[4:9] == [
        *("-p", "no:cacheprovider", "--alluredir=allure-results", "--tb=line", "-p")
    ]


def test_the_pytest_spelling_works_on_the_cli_too() -> None:
    assert _run_params("--n8n-workers", "3", "--n8n-no-attach")["workers"] == 3
    assert _run_params("--n8n-no-attach")["no_attach"] is True


def test_stack_defaults_are_stack_configs() -> None:
    defaults = StackConfig()
    by_field = {"ready_timeout": "ready_timeout_s", "fresh_db": "db_template"}
    fields = {f.name for f in dataclasses.fields(StackConfig)}
    for option in for_command("up"):
        if option.dest == "workflows_dir":  # their $env and $vars, not a field of its own
            continue
        name = by_field.get(option.dest, option.dest)
        assert name in fields, option.dest
        expected = getattr(defaults, name)
        if option.dest == "fresh_db":
            assert expected is True  # copied from the template unless --fresh-db
        elif option.kind == "flag":
            assert expected is False, option.dest
        else:
            assert option.default == expected, option.dest


def test_paths_are_paths_on_the_cli() -> None:
    assert isinstance(_run_params("--workflows", "w")["workflows_dir"], Path)


def test_the_options_are_read_back_once_per_run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pytest_configure, the shard hook, the session fixtures and sessionfinish all read the
    run's options: pytest's command line is read back into ChaosOptions once."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    built: list[pytest.Config] = []
    real = ChaosOptions.of_pytest.__func__  # type: ignore[attr-defined]

    def counting(cls: type[ChaosOptions], config: pytest.Config) -> ChaosOptions:
        built.append(config)
        return real(cls, config)  # type: ignore[no-any-return]

    monkeypatch.setattr(ChaosOptions, "of_pytest", classmethod(counting))
    pytester.makepyfile(
        "def test_reads(chaos_workflows, chaos_harness_retries, chaos_phase_observers):\n"
        "    assert chaos_workflows and chaos_harness_retries == 2\n"
    )
    flags = ("--shard=1/1", "--chaos-harness-retries=2", "--alluredir", str(pytester.path / "a"))
    result = pytester.runpytest_inprocess(
        "-p", "harness.front.plugin", "-p", "allure_pytest.plugin", *flags
    )
    result.assert_outcomes(passed=1)
    assert len(built) == 1


def test_run_keeps_the_results_of_its_workflows_and_removes_only_others(tmp_path: Path) -> None:
    """A case run again adds its latest result to the full run's; results of another
    workflows folder go (they would show as cases of this one), and nothing but Allure's."""
    mine, other = tmp_path / "mine", tmp_path / "other"
    earlier = ["1a-result.json", "1a-container.json", "2b-attachment.svg", "categories.json"]
    for name in [*earlier, "notes.md"]:
        (tmp_path / name).write_text("{}")
    (tmp_path / "environment.properties").write_text(f"n8n.version=2.40.7\nworkflows={mine}\n")
    _remove_other_workflows_results(tmp_path, mine)
    assert len(list(tmp_path.iterdir())) == 6  # the same folder: kept
    _remove_other_workflows_results(tmp_path, other)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.md"]
    _remove_other_workflows_results(tmp_path / "absent", mine)  # a first run: nothing there
