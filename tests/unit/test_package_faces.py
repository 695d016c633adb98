"""The package faces: ``import harness`` stays light, every name of each ``__all__`` resolves,
and the top-level modules no ``__all__`` name leads to say "Internal:" first."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("fastapi", "uvicorn", "sqlite3", "pytest")
# Top-level modules that are neither internal nor reached through __all__, and why.
_NEITHER: dict[str, str] = {}


def _loaded_after(statement: str) -> list[str]:
    code = f"import json, sys; {statement}; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    loaded: list[str] = json.loads(done.stdout)
    return loaded


@pytest.mark.parametrize("statement", ["import harness", "from harness import ConfigError"])
def test_importing_harness_loads_no_heavy_module(statement: str) -> None:
    loaded = _loaded_after(statement)
    heavy = [m for m in loaded if m.split(".")[0] in HEAVY]
    assert not heavy, f"`{statement}` loads {heavy}"
    assert "harness.errors" in loaded


def test_the_check_sees_a_heavy_import() -> None:
    loaded = _loaded_after("import harness; harness.ChaosDeployments")
    assert "pytest" in loaded


@pytest.mark.parametrize("package", ["harness", "fake_providers"])
def test_every_name_in_all_resolves(package: str) -> None:
    module = importlib.import_module(package)
    names = module.__all__
    assert names == sorted(set(names), key=names.index), "a name is listed twice"
    missing = [name for name in names if getattr(module, name, None) is None]
    assert not missing, f"{package}.__all__ names what it does not have: {missing}"
    assert set(names) <= set(dir(module))


def test_an_unknown_name_is_an_attribute_error() -> None:
    import harness

    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        harness.Nope  # noqa: B018


def _modules_behind_all(package: str) -> set[str]:
    module = importlib.import_module(package)
    found = set(getattr(module, "_LAZY", {}).values())  # where lazy names (aliases too) live
    for name in module.__all__:
        value = getattr(module, name)
        where = value.__name__ if isinstance(value, type(module)) else value.__module__
        found.add(where)
    return found


@pytest.mark.parametrize("package", ["harness", "fake_providers"])
def test_top_level_modules_not_behind_all_are_marked_internal(package: str) -> None:
    public = _modules_behind_all(package) | {package, f"{package}.errors"}
    wrong = []
    for path in sorted((ROOT / package).glob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        dotted = relative.removesuffix(".py").replace("/", ".").removesuffix(".__init__")
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        internal = doc.startswith("Internal:")
        if relative in _NEITHER:
            continue
        if internal == (dotted in public):
            wrong.append(f"{relative}: {'public' if dotted in public else 'internal'}")
    assert not wrong, "the first docstring line says otherwise:\n" + "\n".join(wrong)
