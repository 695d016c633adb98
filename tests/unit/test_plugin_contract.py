"""The plug-in contract: a new fault, crash point or delivery plan is one new file; pairing
names are checked; plug-ins never import the engine."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import harness
from harness.engine import registry
from harness.engine.crashpoints import CRASHPOINTS
from harness.engine.deliveries import DELIVERIES
from harness.engine.faults import FAULTS
from harness.errors import ConfigError
from harness.matrix.cases import check_pairings, scenarios

FILES = {
    "tremor.py": """
        from harness.engine.faults.base import NoAction, register

        @register("tremor")
        class Tremor(NoAction):
            offers = frozenset({"tremor"})
            needs_window = frozenset({"wobbly"})
    """,
    "wobble.py": """
        from harness.engine.crashpoints.base import Window, register

        @register("wobble")
        class Wobble(Window):
            offers = frozenset({"wobbly"})
    """,
    "nervous.py": """
        from harness.engine.deliveries.base import Plan, register

        @register("nervous")
        class Nervous(Plan):
            accepts = (frozenset({"tremor", "wobbly"}),)
    """,
}
ENGINE = ("harness.engine.case_run", "harness.matrix.cases", "harness.engine.runner")


@pytest.fixture
def extra_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    package = tmp_path / "acme_chaos"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name, text in FILES.items():
        (package / name).write_text(textwrap.dedent(text))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv(registry.EXTRA_PLUGINS_ENV, "acme_chaos")
    registry.forget_extra_plugins()
    yield package
    for reg, name in ((FAULTS, "tremor"), (CRASHPOINTS, "wobble"), (DELIVERIES, "nervous")):
        reg.unregister(name)
    for module in [m for m in sys.modules if m.startswith("acme_chaos")]:
        del sys.modules[module]
    registry.forget_extra_plugins()


def test_new_files_join_the_matrix_with_no_other_edit(extra_package: Path) -> None:
    ids = {s.id for s in scenarios()}
    assert "nervous-tremor-wobble" in ids
    # The new plan pairs only where its traits say: not with the bundled faults.
    assert not {i for i in ids if i.startswith("nervous-") and i != "nervous-tremor-wobble"}
    # The bundled retry sender takes the new fault too (it accepts any fault).
    assert "retry-tremor-wobble" in ids
    assert FAULTS.create("tremor").name == "tremor"  # the name is said once, in register()


def test_a_misspelt_trait_is_one_line_naming_the_file(extra_package: Path) -> None:
    path = extra_package / "wobble.py"
    path.write_text(path.read_text().replace('"wobbly"', '"wobly"'))
    with pytest.raises(ConfigError) as caught:
        check_pairings()
    message = str(caught.value)
    assert "\n" not in message
    assert "tremor.py" in message and "'wobbly'" in message and "known:" in message


def test_an_extra_package_that_does_not_import_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(registry.EXTRA_PLUGINS_ENV, "no_such_chaos_package")
    registry.forget_extra_plugins()
    try:
        with pytest.raises(ConfigError, match="no_such_chaos_package"):
            registry.load_plugins()
    finally:
        monkeypatch.delenv(registry.EXTRA_PLUGINS_ENV)
        registry.forget_extra_plugins()


def _plugin_modules() -> list[str]:
    root = Path(harness.__file__).parent / "engine"
    return [
        f"harness.engine.{family}.{m.name}"
        for family in ("faults", "crashpoints", "deliveries")
        for m in pkgutil.iter_modules([str(root / family)])
    ]


@pytest.mark.parametrize("module", _plugin_modules())
def test_a_plugin_module_imports_nothing_of_the_engine(module: str) -> None:
    probe = (
        f"import importlib, json, sys; importlib.import_module({module!r}); "
        f"print(json.dumps(sorted(m for m in sys.modules if m in {ENGINE!r})))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_a_second_plugin_under_a_taken_name_is_refused_naming_both_files() -> None:
    from harness.engine.faults.base import NoAction

    FAULTS.names()  # loads the plug-ins
    taken = FAULTS.origin("worker_kill")

    class Impostor(NoAction):
        pass

    with pytest.raises(ConfigError, match="registered twice") as caught:
        FAULTS.register("worker_kill")(Impostor)
    assert taken in str(caught.value) and __file__ in str(caught.value)
    assert FAULTS.origin("worker_kill") == taken  # the first one stays


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ('("wrkers_redis",), silent()', "unknown link 'wrkers_redis'"),
        ('("workers_redis",), silent(), hold_s=0.5', "hold 0.5 s"),
    ],
)
def test_a_link_fault_s_bad_parameter_is_one_line_naming_its_file(
    extra_package: Path, arguments: str, said: str
) -> None:
    (extra_package / "quake.py").write_text(
        "from harness.engine.faults.base import register\n"
        "from harness.engine.faults.toxic_link import ToxicLink, silent\n"
        f'register("quake", lambda: ToxicLink({arguments}))\n'
    )
    try:
        with pytest.raises(ConfigError) as caught:
            FAULTS.create("quake")
    finally:
        FAULTS.unregister("quake")
    message = str(caught.value)
    assert "\n" not in message and said in message
    assert message.startswith(f"{extra_package / 'quake.py'}: fault 'quake': ")
