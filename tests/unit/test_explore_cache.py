"""The exploration cache: what its key covers, what it stores, and `n8n-chaos explore`
printing a cached report without starting anything."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.errors import InstallError
from harness.explore.boundary import Boundary, Trace
from harness.explore.cache import ExploreCache, cache_key, folder_sha256, harness_version
from harness.explore.cached_run import CachedRun
from harness.explore.explorer import Exploration
from harness.explore.plan import Probe
from harness.front.cli import main
from harness.workflow.manifest import BUNDLED_WORKFLOWS, load_manifest


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    copy = tmp_path / "workflows" / "stripe_naive"
    shutil.copytree(Path(BUNDLED_WORKFLOWS) / "stripe_naive", copy)
    return copy


def test_the_key_changes_with_the_workflow_its_manifest_n8n_and_the_harness(folder: Path) -> None:
    base = cache_key("stripe_naive", folder, "2.40.7", 2, harness="0.1.0+src.a")
    assert cache_key("stripe_naive", folder, "2.40.7", 2, harness="0.1.0+src.a") == base
    others = [
        cache_key("stripe_naive", folder, "2.33.7", 2, harness="0.1.0+src.a"),
        cache_key("stripe_naive", folder, "2.40.7", 3, harness="0.1.0+src.a"),
        cache_key("stripe_naive", folder, "2.40.7", 2, harness="0.1.0+src.b"),
        # a shared ledger schema (../_ledgers/) edited outside the folder
        cache_key("stripe_naive", folder, "2.40.7", 2, harness="0.1.0+src.a", ledger_sql="X"),
    ]
    assert len({base.sha256, *(k.sha256 for k in others)}) == 5
    before = folder_sha256(folder)
    (folder / ".DS_Store").write_text("editor litter")  # hidden files do not count
    assert folder_sha256(folder) == before
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["description"] += " (edited)"
    (folder / "manifest.json").write_text(json.dumps(manifest))
    edited = folder_sha256(folder)
    assert edited != before
    (folder / "ledger.sql").write_text("CREATE TABLE IF NOT EXISTS t (k text);")
    assert folder_sha256(folder) not in {before, edited}


def test_the_harness_version_is_the_package_and_a_hash_of_its_source() -> None:
    version, _, src = harness_version().partition("+src.")
    assert version == "0.1.0" and len(src) == 12


def test_an_entry_round_trips_and_a_torn_one_is_a_miss(tmp_path: Path, folder: Path) -> None:
    cache = ExploreCache(tmp_path / "cache")
    key = cache_key("stripe_naive", folder, "2.40.7", 2)
    assert cache.lookup(key) is None
    path = cache.store(key, ["stripe_naive: ...", "  VIOLATION ..."], {"a": 1}, True, tmp_path)
    assert path == tmp_path / "cache" / "stripe_naive" / f"{key.sha256}.json"
    hit = cache.lookup(key)
    assert hit is not None and hit.violation and hit.lines[1] == "  VIOLATION ..."
    assert hit.report == {"a": 1} and hit.run_dir == str(tmp_path)
    path.write_text('{"format": 1, "lines": [')
    assert cache.lookup(key) is None


def exploration(not_run: bool) -> Exploration:
    trace = Trace("stripe_naive", "k", [], [], [], [])
    found = Exploration(trace, "exactly_once")
    if not_run:
        boundary = Boundary("r1", "request", None, None)
        found.not_run.append(Probe("stripe_naive", boundary, "after_commit"))
    return found


def test_only_a_complete_exploration_is_stored(tmp_path: Path, folder: Path) -> None:
    workflow = load_manifest(folder)
    run = CachedRun(ExploreCache(tmp_path / "cache"), "2.40.7", 2)
    said: list[str] = []
    run.store(workflow, exploration(not_run=True), ["l"], {}, tmp_path, said.append)
    assert "not cached" in said[-1] and run.uncached([workflow], said.append) == [workflow]
    run.store(workflow, exploration(not_run=False), ["line 1"], {}, tmp_path, said.append)
    assert said[-1].startswith("  cached (hash ")
    again = CachedRun(ExploreCache(tmp_path / "cache"), "2.40.7", 2)
    assert again.uncached([workflow], said.append) == []
    assert said[-2].startswith("stripe_naive: cached (hash ") and said[-1] == "line 1"
    assert not again.violation
    assert CachedRun(None, "2.40.7", 2).uncached([workflow], said.append) == [workflow]


def test_explore_reprints_a_cached_report_and_starts_nothing(
    tmp_path: Path, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_install(*_: object) -> None:
        raise InstallError("explore tried to install: the cache was not used")

    monkeypatch.setattr("harness.stack.install.Installer.install", no_install)
    workflow = load_manifest(folder)
    cache = ExploreCache(tmp_path / "cache")
    key = cache_key(workflow.name, folder, "2.40.7", 2)
    lines = ["stripe_naive: 3 node runs", "  VIOLATION DUPLICATE: ..."]
    cache.store(key, lines, {}, True, tmp_path)
    args = ["explore", "--workflows", str(folder.parent), "--cache-dir", str(tmp_path / "cache")]
    done = CliRunner().invoke(main, args)
    assert done.exit_code == 1, done.output  # the cached report has a violation
    assert f"stripe_naive: cached (hash {key.short}" in done.output
    assert "  VIOLATION DUPLICATE: ..." in done.output
    forced = CliRunner().invoke(main, [*args, "--no-cache"])
    assert forced.exit_code == 2 and "explore tried to install" in forced.output
