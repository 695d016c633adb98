"""README.md and docs/*.md stay true to the tree and the code: the README's layout block names
what exists, every top-level folder, package and top-level module; the README stays short and
links every docs page; every relative link leads to a file (and heading) that exists; and the
figures are the ones the code and bench/results give."""

from __future__ import annotations

import importlib.util
import re
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PACKAGES = ("harness", "fake_providers")  # every package folder and top-level module is named
README_MAX_LINES = 700  # the newcomer's path; reference material goes to docs/
# The two commands CI and users run, exactly as README's "## The two commands" gives them.
MAIN_JOB = "bash scripts/setup.sh && python3 -m harness run"
TEST_COMMAND = "bash scripts/setup.sh && bash scripts/docker-setup.sh && python3 -m pytest -n 5"


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


def tracked_top_folders(root: Path) -> list[str]:
    """The top-level folders that hold a file git tracks (``.ci``, ``harness``, ...)."""
    listed = subprocess.run(
        ["git", "ls-files"], cwd=root, capture_output=True, text=True, check=False
    )
    if listed.returncode != 0:
        pytest.skip(f"not a git checkout: {listed.stderr.strip()}")
    return sorted({line.split("/")[0] for line in listed.stdout.splitlines() if "/" in line})


def missing_folders(paths: list[str], folders: list[str]) -> list[str]:
    """The folders no layout path names (``name/``) or lies under (``name/...``)."""
    return [
        folder
        for folder in folders
        if not any(path == f"{folder}/" or path.startswith(f"{folder}/") for path in paths)
    ]


def pages() -> list[Path]:
    """README.md and every docs page."""
    return [README, *sorted(DOCS.glob("*.md"))]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but ``-`` and ``_`` dropped,
    spaces as ``-``."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of a Markdown file's headings (a repeated heading's as ``-1``, ``-2``)."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for heading in re.findall(r"^#+ (.+)$", without_code(page.read_text()), re.M):
        base = slug(heading)
        found.add(f"{base}-{seen[base]}" if base in seen else base)
        seen[base] = seen.get(base, 0) + 1
    return found


def without_code(text: str) -> str:
    """The text with its fenced code blocks blanked (their lines kept, empty)."""
    return re.sub(
        r"^```.*?^```", lambda block: "\n" * block.group(0).count("\n"), text, flags=re.M | re.S
    )


def relative_links(page: Path) -> list[str]:
    """The targets of the page's Markdown links that are neither a URL nor absolute."""
    targets = re.findall(r"\]\(([^)\s]+)\)", without_code(page.read_text()))
    return [t for t in targets if not re.match(r"[a-z][a-z0-9+.-]*:", t) and not t.startswith("/")]


def broken_links(page: Path) -> list[str]:
    """The page's relative links whose file, or heading in a Markdown file, does not exist."""
    broken: list[str] = []
    for target in relative_links(page):
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target} (no file {path})")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target} (no heading #{anchor} in {file.name})")
    return broken


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


def test_the_layout_names_every_top_level_folder() -> None:
    missing = missing_folders(layout_paths(README.read_text()), tracked_top_folders(ROOT))
    assert not missing, (
        "README.md's layout (the ```text block under '## Layout') names no path in these "
        f"top-level folders: {missing}; add a line `<folder>/  <what it holds>` for each"
    )


def test_a_new_folder_is_asked_for() -> None:
    paths = ["harness/", "tests/unit/", ".ci/run"]
    folders = [".ci", "docs", "harness", "tests"]
    assert missing_folders(paths, folders) == ["docs"]


def test_the_readme_is_short() -> None:
    lines = len(README.read_text().splitlines())
    assert lines < README_MAX_LINES, (
        f"README.md has {lines} lines; keep it under {README_MAX_LINES} (the newcomer's path) "
        "and move reference material to a page in docs/ that it links"
    )


def test_the_two_commands_are_as_ci_runs_them() -> None:
    found = re.search(
        r"^## The two commands\n(?:.*\n)*?```bash\n(?P<block>(?:.*\n)*?)```",
        README.read_text(),
        re.M,
    )
    assert found, 'README.md has no "## The two commands" section with a ```bash block'
    commands = [
        line for line in found.group("block").splitlines() if line and not line.startswith("#")
    ]
    assert commands == [MAIN_JOB, TEST_COMMAND]
    # .ci/run runs setup.sh on its own (beside an early docker-setup.sh), then the rest.
    ci_run = (ROOT / ".ci" / "run").read_text().rstrip()
    assert ci_run.endswith(TEST_COMMAND.removeprefix("bash scripts/setup.sh && "))


def test_every_docs_page_is_linked_from_the_readme() -> None:
    linked = {(ROOT / target.partition("#")[0]).resolve() for target in relative_links(README)}
    unlinked = [
        page.relative_to(ROOT).as_posix()
        for page in sorted(DOCS.glob("*.md"))
        if page.resolve() not in linked
    ]
    assert DOCS.is_dir() and list(DOCS.glob("*.md")), "docs/ has no page"
    assert not unlinked, f"README.md links none of these docs pages: {unlinked}"


@pytest.mark.parametrize("page", pages(), ids=lambda page: page.relative_to(ROOT).as_posix())
def test_every_relative_link_leads_somewhere(page: Path) -> None:
    broken = broken_links(page)
    assert not broken, (
        f"{page.relative_to(ROOT)} links what does not exist (a link from docs/ to a file of "
        "the repository starts with ../):\n" + "\n".join(broken)
    )


def test_a_broken_link_is_caught(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    (tmp_path / "there.md").write_text("# A heading: `with code`\n\n## Twice\n\n## Twice\n")
    page.write_text(
        "[ok](there.md#a-heading-with-code) [ok](there.md#twice-1) [web](https://n8n.io)\n"
        "[gone](missing.md) [no heading](there.md#nowhere) [self](#nowhere-here)\n"
        "```text\n[in code](not/a/link.md)\n```\n"
    )
    broken = broken_links(page)
    assert [b.split()[0] for b in broken] == ["missing.md", "there.md#nowhere", "#nowhere-here"]


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
    assert figures.pages() == [page.relative_to(ROOT).as_posix() for page in pages()]
    _, problems = figures.render_pages(figures.read_pages())
    assert not problems, (
        "the figures of README.md and docs/*.md differ from the code or bench/results:\n"
        + "\n".join(problems)
        + f"\nregenerate them with: {figures.COMMAND}"
    )


def test_a_figure_in_a_docs_page_links_from_there() -> None:
    figures = load_figures()
    texts = {"docs/x.md": "<!-- figure: what_n8n_does -->stale<!-- /figure -->"}
    filled, problems = figures.render_pages(texts)
    assert "](../bench/results/findings-" in filled["docs/x.md"]
    assert "](bench/results/" not in filled["docs/x.md"]
    assert any(p.startswith("docs/x.md: figure 'what_n8n_does' says") for p in problems)
    assert any(p.endswith("never uses it") for p in problems)  # the other figures


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
    from harness.engine.crashpoints.after_commit import RELEASE_AFTER_S

    assert f"-->{RELEASE_AFTER_S:g}<!--" in filled


def test_the_benchmark_tables_are_linked() -> None:
    """The README links bench/README.md (its anchors are checked with every other link)."""
    assert "(bench/README.md)" in README.read_text()
    assert (ROOT / "bench" / "README.md").is_file()


def test_no_inline_figure_starts_a_line() -> None:
    """Markdown reads a line that starts with ``<!--`` as raw HTML and breaks the paragraph
    there; only a figure of several lines (its markers alone on their lines) may."""
    starting = [
        f"{page.relative_to(ROOT)}:{number}: {line.strip()[:60]}"
        for page in pages()
        for number, line in enumerate(page.read_text().splitlines(), 1)
        if re.match(r"\s{0,3}<!-- /?figure", line)
        and not re.fullmatch(r"\s*<!-- (figure: \w+|/figure) -->\s*", line)
    ]
    assert not starting, "put a word before the marker on these lines:\n" + "\n".join(starting)
