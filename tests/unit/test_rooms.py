"""harness/ is in rooms (sub-packages by concern), lowest first; a room imports only the rooms
below it. Runtime imports count (those under ``if TYPE_CHECKING:`` do not: annotations may
name a higher room). The top-level modules (errors, loopback) are the floor: any room may
import them, and they import no room. ``harness/__init__`` and ``__main__`` are the package's
face and may name any room."""

from __future__ import annotations

import ast
from pathlib import Path

HARNESS = Path(__file__).resolve().parents[2] / "harness"
# Lowest first; rooms of one rank are peers, which must not import each other.
ROOMS: dict[str, int] = {
    "judge": 1,  # the oracle and the verdict vocabulary
    "stack": 2,  # the real stack: processes, ports, Postgres, Redis, Toxiproxy, n8n
    "workflow": 3,  # workflows under test: manifests, credentials, deployment
    "engine": 4,  # one case end to end, and the plug-ins
    "matrix": 5,  # the crash matrix: cases, sharding
    "terminal": 6,  # what the terminal shows
    "explore": 7,  # `n8n-chaos explore`
    "findings": 7,  # `n8n-chaos findings` (a peer of explore)
    "report": 8,  # the single-file report, timelines, saved cases read back
    "front": 9,  # the command, the pytest plugin and suite, the warm runner, attach
}
FLOOR = 0  # the top-level modules: harness.errors, harness.loopback
FACE = {"__init__", "__main__"}  # the package itself: may import every room
MAX_TOP_LEVEL_MODULES = 10


def room_of(module: str) -> str | None:
    """The room of a dotted module under harness (a top-level module is its own name)."""
    parts = module.split(".")
    if parts[0] != "harness" or len(parts) < 2:
        return None
    return parts[1]


def rank_of(room: str, root: Path) -> int | None:
    if room in ROOMS:
        return ROOMS[room]
    return FLOOR if (root / f"{room}.py").is_file() and room not in FACE else None


def _is_type_checking(test: ast.expr) -> bool:
    return "TYPE_CHECKING" in ast.unparse(test)


def runtime_imports(tree: ast.AST) -> list[tuple[str, int]]:
    """(dotted module, line) of every import outside ``if TYPE_CHECKING:`` blocks, in
    functions too; ``from harness import x`` counts as ``harness.x``."""
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for other in child.orelse:
                    visit_one(other)
                continue
            visit_one(child)

    def visit_one(node: ast.AST) -> None:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "harness":
                found.extend((f"harness.{alias.name}", node.lineno) for alias in node.names)
            else:
                found.append((node.module, node.lineno))
        elif isinstance(node, ast.Import):
            found.extend((alias.name, node.lineno) for alias in node.names)
        visit(node)

    visit(tree)
    return found


def wrong_imports(root: Path) -> list[str]:
    """``file:line: room -> room (module)`` for each import that goes up or sideways."""
    wrong: list[str] = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root.parent)
        dotted = ".".join(relative.with_suffix("").parts)
        here = room_of(dotted)
        if here is None or here in FACE:
            continue
        here_rank = rank_of(here, root)
        if here_rank is None:
            wrong.append(f"{relative}: harness/{here} is in no room (give it a rank in ROOMS)")
            continue
        for module, line in runtime_imports(ast.parse(path.read_text(), str(path))):
            there = room_of(module)
            if there is None or there == here:
                continue
            there_rank = rank_of(there, root)
            if there_rank is None or there_rank < here_rank:
                continue  # a lower room, or no module of harness (the package itself)
            wrong.append(f"{relative}:{line}: {here} -> {there} ({module})")
    return wrong


def test_no_room_imports_a_higher_room_or_a_peer() -> None:
    wrong = wrong_imports(HARNESS)
    order = " < ".join(f"{room}({rank})" for room, rank in ROOMS.items())
    assert not wrong, (
        f"harness/'s rooms import only lower rooms ({order}); move the module or the "
        "function to a lower room, or import it under `if TYPE_CHECKING:` if only types "
        "need it:\n" + "\n".join(wrong)
    )


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    root = tmp_path / "harness"
    for room in ("judge", "engine", "explore", "findings"):
        (root / room).mkdir(parents=True)
        (root / room / "__init__.py").write_text('"""A room."""\n')
    (root / "errors.py").write_text("")
    (root / "judge" / "oracle.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from harness import errors\n"
        "if TYPE_CHECKING:\n"
        "    from harness.engine import runner\n"
        "def f():\n"
        "    from harness.engine import runner\n"
    )
    (root / "explore" / "a.py").write_text("import harness.findings.b\n")
    (root / "engine" / "runner.py").write_text("from harness.judge import oracle\n")
    assert [line.split(": ", 1)[1] for line in wrong_imports(root)] == [
        "explore -> findings (harness.findings.b)",
        "judge -> engine (harness.engine)",
    ]


def test_harness_has_few_top_level_modules() -> None:
    modules = sorted(path.name for path in HARNESS.glob("*.py"))
    assert len(modules) <= MAX_TOP_LEVEL_MODULES, (
        f"harness/ has {len(modules)} top-level modules (at most {MAX_TOP_LEVEL_MODULES}); "
        f"put new ones in a room: {modules}"
    )


def test_every_room_is_a_package_that_says_what_it_is_for() -> None:
    folders = sorted(
        path.name
        for path in HARNESS.iterdir()
        if path.is_dir() and any(path.glob("*.py")) and path.name != "__pycache__"
    )
    assert folders == sorted(ROOMS), (
        "harness/'s sub-packages are its rooms, each with a rank in tests/unit/test_rooms.py "
        f"ROOMS: unranked {sorted(set(folders) - set(ROOMS))}, "
        f"missing {sorted(set(ROOMS) - set(folders))}"
    )
    undocumented = [
        room
        for room in ROOMS
        if not (HARNESS / room / "__init__.py").is_file()
        or not ast.get_docstring(ast.parse((HARNESS / room / "__init__.py").read_text()))
    ]
    assert not undocumented, f"give these rooms an __init__.py with a docstring: {undocumented}"
