"""One exception tree: every error class the harness (or the fake provider) defines hangs from
its root, harness.errors draws every class it holds at its place in the tree, and no built-in
exception is raised for a harness condition."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

import fake_providers.errors
import harness.errors

ROOT = Path(__file__).resolve().parents[2]
# Built-in exceptions a harness class may also derive from, for callers that catch them:
# pydantic turns a validator's ValueError into a validation error.
_BUILTIN_MIXINS = frozenset({"ValueError"})
# Harness error classes that live outside harness/errors.py, and why.
_OUTSIDE_ERRORS_PY = {
    "Problem": "manifest_model: a pydantic validator's ValueError, reported as a ConfigError",
}
# Calls a pydantic validator may raise (pydantic catches ValueError and AssertionError only).
_VALIDATOR_DECORATORS = frozenset({"field_validator", "model_validator", "validator"})


@dataclass(frozen=True)
class ClassDef:
    name: str
    bases: tuple[str, ...]
    where: str


def _base_name(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def _classes(package: str) -> dict[str, ClassDef]:
    """Every class the package defines, by name (exception classes have unique names; of two
    other classes with one name, the later one is kept: only its bases matter here)."""
    found: dict[str, ClassDef] = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                where = f"{path.relative_to(ROOT)}:{node.lineno}"
                bases = tuple(_base_name(base) for base in node.bases)
                earlier = found.get(node.name)
                clash = earlier is not None and any(map(_looks_like_exception, earlier.bases))
                assert not clash, f"{where}: {node.name} also at {earlier}"
                found[node.name] = ClassDef(node.name, bases, where)
    return found


def _looks_like_exception(name: str) -> bool:
    return name in {"Exception", "BaseException"} or name.endswith(("Error", "Exception"))


def _exception_classes(classes: dict[str, ClassDef]) -> dict[str, ClassDef]:
    """The classes that derive (here or through another class of the package) from an
    exception: a built-in one, a third party's ``*Error``, or one of the package's own."""

    def is_exception(name: str, seen: frozenset[str] = frozenset()) -> bool:
        if name in seen:
            return False
        own = classes.get(name)
        if own is None:
            return _looks_like_exception(name)
        return any(is_exception(base, seen | {name}) for base in own.bases)

    return {name: c for name, c in classes.items() if is_exception(name)}


def _reaches(classes: dict[str, ClassDef], name: str, root: str) -> bool:
    if name == root:
        return True
    own = classes.get(name)
    return own is not None and any(_reaches(classes, base, root) for base in own.bases)


@pytest.mark.parametrize(
    ("package", "root"), [("harness", "HarnessError"), ("fake_providers", "FakeProviderError")]
)
def test_every_exception_class_derives_from_the_root(package: str, root: str) -> None:
    classes = _classes(package)
    outside = [
        f"{c.where}: {c.name}({', '.join(c.bases)})"
        for c in _exception_classes(classes).values()
        if c.name != root and not _reaches(classes, c.name, root)
    ]
    assert not outside, f"not under {root}:\n" + "\n".join(outside)


def test_every_exception_class_has_no_builtin_base_but_the_allowed_mixins() -> None:
    for package in ("harness", "fake_providers"):
        classes = _classes(package)
        for c in _exception_classes(classes).values():
            builtin = {b for b in c.bases if b not in classes and _looks_like_exception(b)}
            is_root = c.name in {"HarnessError", "FakeProviderError"}
            allowed = {"Exception"} if is_root else _BUILTIN_MIXINS
            assert builtin <= allowed, f"{c.where}: {c.name} derives from {sorted(builtin)}"


def test_harness_errors_live_in_errors_py() -> None:
    classes = _classes("harness")
    elsewhere = [
        f"{c.where}: {c.name}"
        for c in _exception_classes(classes).values()
        if not c.where.startswith("harness/errors.py:") and c.name not in _OUTSIDE_ERRORS_PY
    ]
    assert not elsewhere, "move these to harness/errors.py:\n" + "\n".join(elsewhere)


def _drawing(doc: str) -> dict[str, str | None]:
    """Each class the docstring's drawing names, with the class drawn as its parent."""
    parents: dict[str, str | None] = {}
    path: list[str] = []  # the names on the way down to the current line
    base_column: int | None = None
    for line in doc.splitlines():
        match = re.match(r"^(\s*(?:[│ ]   )*(?:[├└]── )?)([A-Z]\w*)\b(?:\s|$)", line)
        if match is None or not re.search(r"[├└]──|^\s{4}\w+$", line):
            continue
        column = len(match.group(1))
        if base_column is None:
            base_column = column
        depth = (column - base_column) // 4
        del path[depth:]
        parents[match.group(2)] = path[-1] if path else None
        path.append(match.group(2))
    return parents


def test_harness_errors_drawing_names_every_class_under_its_parent() -> None:
    module = harness.errors
    defined = {
        name: cls
        for name, cls in vars(module).items()
        if isinstance(cls, type)
        and issubclass(cls, BaseException)
        and cls.__module__ == module.__name__
    }
    drawn = _drawing(module.__doc__ or "")
    assert set(drawn) == set(defined), "the drawing in harness/errors.py is out of date"
    for name, parent in drawn.items():
        expected = defined[name].__bases__[0].__name__ if parent else None
        assert parent == expected, f"{name} is drawn under {parent}, derives from {expected}"


def test_fake_providers_errors_drawing_names_every_class_under_its_parent() -> None:
    classes = _classes("fake_providers")
    under_root = {
        name for name in _exception_classes(classes) if _reaches(classes, name, "FakeProviderError")
    }
    drawn = _drawing(fake_providers.errors.__doc__ or "")
    assert set(drawn) == under_root, "the drawing in fake_providers/errors.py is out of date"
    for name, parent in drawn.items():
        expected = classes[name].bases[0] if parent else None
        assert parent == expected, f"{name} is drawn under {parent}, derives from {expected}"


def _in_validator(stack: list[ast.AST]) -> bool:
    for node in stack:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for decorator in node.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                if _base_name(target) in _VALIDATOR_DECORATORS:
                    return True
    return False


def _builtin_raises(path: Path) -> list[int]:
    """The lines of ``path`` that raise a built-in exception outside a pydantic validator."""
    found: list[int] = []

    def visit(node: ast.AST, stack: list[ast.AST]) -> None:
        if (
            isinstance(node, ast.Raise)
            and isinstance(node.exc, ast.Call)
            and _base_name(node.exc.func) in {"RuntimeError", "ValueError", "Exception"}
            and not _in_validator(stack)
        ):
            found.append(node.lineno)
        for child in ast.iter_child_nodes(node):
            visit(child, [*stack, node])

    visit(ast.parse(path.read_text(), filename=str(path)), [])
    return found


def test_no_builtin_exception_is_raised_for_a_harness_condition() -> None:
    found = [
        where
        for package in ("harness", "fake_providers")
        for path in sorted((ROOT / package).rglob("*.py"))
        for where in (f"{path.relative_to(ROOT)}:{line}" for line in _builtin_raises(path))
    ]
    assert not found, "raise an error of the tree instead:\n" + "\n".join(found)


def test_the_scan_sees_a_builtin_raise_and_spares_a_validator(tmp_path: Path) -> None:
    module = tmp_path / "sample.py"
    module.write_text(
        "class M:\n"
        "    @model_validator(mode='after')\n"
        "    def check(self):\n"
        "        raise ValueError('pydantic needs this')\n"
        "def helper():\n"
        "    raise RuntimeError('a harness condition')\n"
    )
    assert _builtin_raises(module) == [6]


def test_the_drawing_reader_sees_depth() -> None:
    doc = "Tree:\n\n    A\n    ├── B   text\n    │   └── C  more\n    └── D\n\nProse Names here.\n"
    assert _drawing(doc) == {"A": None, "B": "A", "C": "B", "D": "A"}
