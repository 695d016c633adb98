"""README.md stays true to the tree and the code: its layout block names what exists and every
package and top-level module, and its figures are the ones the code and bench/results give."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PACKAGES = ("harness", "fake_providers")  # every package folder and top-level module is named


def layout_lines(text: str) -> list[str]:
    """The lines of the fenced block under the "## Layout" heading."""
    found = re.search(r"^## Layout\n(?:.*\n)*?```text\n(?P<block>(?:.*\n)*?)```", text, re.M)
    assert found, 'README.md has no "## Layout" section with a ```text block'
    return [line for line in found.group("block").splitlines() if line.strip()]


def layout_paths(text: str) -> list[str]:
    return [line.split()[0] for line in layout_lines(text)]


def required_paths(root: Path) -> list[str]:
    """Each package folder (``name/``) and top-level module under PACKAGES, as the layout
    writes them; dunder modules (``__init__``, ``__main__``) belong to their folder."""
    paths: list[str] = []
    for top in PACKAGES:
        package = root / top
        paths += sorted(
            f"{init.parent.relative_to(root).as_posix()}/" for init in package.rglob("__init__.py")
        )
        paths += sorted(
            f"{top}/{module.name}"
            for module in package.glob("*.py")
            if not module.name.startswith("__")
        )
    return paths


def missing_lines(text: str, root: Path) -> list[str]:
    """The layout lines to add, each aligned with the block's descriptions."""
    named = set(layout_paths(text))
    absent = [path for path in required_paths(root) if path not in named]
    column = max(
        (len(line) - len(line.split(None, 1)[-1]) for line in layout_lines(text)), default=0
    )
    return [f"{path:<{max(column, len(path) + 2)}}<what it is, in a few words>" for path in absent]


def load_figures() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "readme_figures", ROOT / "scripts" / "readme_figures.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_path_in_the_layout_exists() -> None:
    absent = [path for path in layout_paths(README.read_text()) if not (ROOT / path).exists()]
    assert not absent, (
        f"README.md's layout names paths that do not exist: {absent}; "
        "fix or remove those lines of the ```text block under '## Layout'"
    )


def test_the_layout_names_every_package_and_module() -> None:
    lines = missing_lines(README.read_text(), ROOT)
    assert not lines, (
        "README.md's layout (the ```text block under '## Layout') misses these; add the "
        "line(s), next to their neighbours:\n" + "\n".join(lines)
    )


def test_a_new_module_is_asked_for_by_its_line(tmp_path: Path) -> None:
    (tmp_path / "harness" / "newpkg").mkdir(parents=True)
    (tmp_path / "harness" / "__init__.py").write_text("")
    (tmp_path / "harness" / "newpkg" / "__init__.py").write_text("")
    (tmp_path / "harness" / "chaos_new.py").write_text("")
    (tmp_path / "harness" / "__main__.py").write_text("")
    text = "## Layout\n\n```text\nharness/       the package\n```\n"
    assert [line.split()[0] for line in missing_lines(text, tmp_path)] == [
        "harness/newpkg/",
        "harness/chaos_new.py",
    ]


def test_readme_figures_are_current() -> None:
    figures = load_figures()
    _, problems = figures.render(README.read_text())
    assert not problems, (
        "README.md's figures differ from the code or bench/results:\n"
        + "\n".join(problems)
        + f"\nregenerate them with: {figures.COMMAND}"
    )


@pytest.mark.parametrize(
    ("typed", "problem"),
    [
        ("at most <!-- figure: held_answer_max_s -->8<!-- /figure --> s", "says '8'"),
        ("<!-- figure: no_such_figure -->1<!-- /figure -->", "unknown figure 'no_such_figure'"),
    ],
)
def test_a_drifted_or_unknown_figure_is_caught(typed: str, problem: str) -> None:
    figures = load_figures()
    _, problems = figures.render(README.read_text() + "\n" + typed + "\n")
    assert any(problem in p for p in problems), problems


def test_the_generator_fills_a_stale_figure() -> None:
    figures = load_figures()
    filled, _ = figures.render("at most <!-- figure: held_answer_max_s -->8<!-- /figure --> s")
    from harness.crashpoints.after_commit import RELEASE_AFTER_S

    assert f"-->{RELEASE_AFTER_S:g}<!--" in filled


def test_the_benchmark_tables_are_linked() -> None:
    text = README.read_text()
    assert "(bench/README.md)" in text
    assert (ROOT / "bench" / "README.md").is_file()
    for anchor in re.findall(r"\(bench/README\.md#([a-z0-9-]+)\)", text):
        headings = re.findall(r"^#+ (.+)$", (ROOT / "bench" / "README.md").read_text(), re.M)
        slugs = {re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-") for h in headings}
        assert anchor in slugs, f"README links bench/README.md#{anchor}, which has no heading"


def test_no_inline_figure_starts_a_line() -> None:
    """Markdown reads a line that starts with ``<!--`` as raw HTML and breaks the paragraph
    there; only a figure of several lines (its markers alone on their lines) may."""
    starting = [
        f"README.md:{number}: {line.strip()[:60]}"
        for number, line in enumerate(README.read_text().splitlines(), 1)
        if re.match(r"\s{0,3}<!-- /?figure", line)
        and not re.fullmatch(r"\s*<!-- (figure: \w+|/figure) -->\s*", line)
    ]
    assert not starting, "put a word before the marker on these lines:\n" + "\n".join(starting)
