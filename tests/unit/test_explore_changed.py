"""`n8n-chaos explore --changed-since REF` on a temporary git repository: the workflow folders
a change touched, and clear errors outside git or for an unknown REF."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.errors import ConfigError, InstallError
from harness.explore.cache import ExploreCache, cache_key
from harness.explore.changed import changed_folders
from harness.front.cli import main
from harness.front.cli.explore_command import only_changed
from harness.workflow.manifest import BUNDLED_WORKFLOWS, load_manifest

IDENTITY = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **IDENTITY},
    )
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with workflows/{stripe_naive,payment_naive} committed, and a README."""
    root = tmp_path / "repo"
    for name in ("stripe_naive", "payment_naive"):
        shutil.copytree(Path(BUNDLED_WORKFLOWS) / name, root / "workflows" / name)
    (root / "README.md").write_text("workflows\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "first")
    return root


def test_only_the_folders_a_change_touched(repo: Path) -> None:
    workflows = repo / "workflows"
    assert changed_folders(workflows, "HEAD") == set()
    (repo / "README.md").write_text("changed, but no workflow\n")
    (workflows / "notes.txt").write_text("beside the folders")
    assert changed_folders(workflows, "HEAD") == set()
    manifest = workflows / "payment_naive" / "manifest.json"
    manifest.write_text(manifest.read_text() + "\n")
    git(repo, "commit", "-qam", "payment_naive's manifest")
    assert changed_folders(workflows, "HEAD~1") == {"payment_naive"}
    assert changed_folders(workflows, "HEAD") == set()
    (workflows / "stripe_naive" / "workflow.json").write_text("{}")  # uncommitted
    shutil.copytree(workflows / "payment_naive", workflows / "new_one")  # not yet tracked
    assert changed_folders(workflows, "HEAD~1") == {"payment_naive", "stripe_naive", "new_one"}
    assert changed_folders(workflows / "..", "HEAD") == {"workflows"}  # the folders of the root


def test_outside_git_or_an_unknown_ref_is_a_clear_error(repo: Path, tmp_path: Path) -> None:
    plain = tmp_path / "plain"  # tmp_path is not inside a repository
    plain.mkdir()
    with pytest.raises(ConfigError, match=r"--changed-since main: .* is not in a git repository"):
        changed_folders(plain, "main")
    with pytest.raises(ConfigError, match="--changed-since nope: no such commit"):
        changed_folders(repo / "workflows", "nope")


def test_explore_changed_since_picks_the_changed_workflows(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_install(*_: object) -> None:
        raise InstallError("explore tried to install")

    monkeypatch.setattr("harness.stack.install.Installer.install", no_install)
    workflows = repo / "workflows"
    base = ["explore", "--workflows", str(workflows), "--cache-dir", str(tmp_path / "cache")]
    unchanged = CliRunner().invoke(main, [*base, "--changed-since", "HEAD"])
    assert unchanged.exit_code == 0, unchanged.output
    assert "changed since HEAD: 0 of 2 workflow(s): none" in unchanged.output
    folder = workflows / "stripe_naive"
    (folder / "manifest.json").write_text((folder / "manifest.json").read_text() + "\n")
    key = cache_key("stripe_naive", folder, "2.40.7", 2)
    ExploreCache(tmp_path / "cache").store(key, ["stripe_naive: clean"], {}, False, tmp_path)
    picked = CliRunner().invoke(main, [*base, "--changed-since", "HEAD"])
    assert picked.exit_code == 0, picked.output
    assert "changed since HEAD: 1 of 2 workflow(s): stripe_naive" in picked.output
    assert "stripe_naive: cached (hash" in picked.output and "payment_naive" not in picked.output
    assert load_manifest(folder).name == "stripe_naive"
    bad = CliRunner().invoke(main, [*base, "--changed-since", "v9"])
    assert bad.exit_code == 2 and "--changed-since v9: no such commit" in bad.output


def test_a_change_in_a_shared_folder_picks_every_workflow(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workflows = repo / "workflows"
    loaded = [load_manifest(workflows / name) for name in ("payment_naive", "stripe_naive")]
    (workflows / "_ledgers").mkdir()  # a schema the manifests may share (../_ledgers/)
    (workflows / "_ledgers" / "charge.sql").write_text("CREATE TABLE IF NOT EXISTS {prefix}_t ();")
    assert only_changed(loaded, workflows, "HEAD") == loaded
    assert "2 of 2 workflow(s) (shared _ledgers changed: all of them)" in capsys.readouterr().out
