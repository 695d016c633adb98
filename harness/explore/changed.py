"""``--changed-since REF``: the workflow folders a git change since REF touched.

A folder counts when any file in it differs between REF and the working tree (``git diff
--name-only REF``: committed and uncommitted changes to tracked files), or is new and not yet
tracked (``git ls-files --others --exclude-standard``), so a workflow added locally is
explored before its first commit. Renames count on both sides (``--no-renames``).
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from harness.errors import ConfigError

GIT_TIMEOUT_S = 60.0


def _git(args: Sequence[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            # quotepath off: a folder name with non-ASCII letters comes back as it is.
            ["git", "-c", "core.quotepath=false", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
        )
    except FileNotFoundError as exc:
        raise ConfigError("--changed-since needs git, and git is not on PATH") from exc


def changed_folders(workflows_dir: Path, ref: str) -> set[str]:
    """The names of the folders directly under ``workflows_dir`` that a change since ``ref``
    touched."""
    top = _git(["rev-parse", "--show-toplevel"], workflows_dir)
    if top.returncode != 0:
        raise ConfigError(
            f"--changed-since {ref}: {workflows_dir} is not in a git repository "
            f"({top.stderr.strip()}); drop --changed-since, or point --workflows into a clone"
        )
    root = Path(top.stdout.strip())
    known = _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], root)
    if known.returncode != 0:
        raise ConfigError(
            f"--changed-since {ref}: no such commit in {root} (a shallow clone may lack it: "
            "fetch it, e.g. actions/checkout with fetch-depth: 0)"
        )
    under = workflows_dir.resolve().relative_to(root.resolve())
    scope = ["--", under.as_posix()]
    diff = _git(["diff", "--name-only", "--no-renames", ref, *scope], root)
    if diff.returncode != 0:
        raise ConfigError(f"--changed-since {ref}: git diff failed: {diff.stderr.strip()}")
    new = _git(["ls-files", "--others", "--exclude-standard", *scope], root)
    found: set[str] = set()
    for line in (diff.stdout + new.stdout).splitlines():
        parts = PurePosixPath(line.strip()).parts[len(under.parts) :]
        if len(parts) > 1:  # a file inside a workflow's folder, not beside the folders
            found.add(parts[0])
    return found
