"""Exploration results cached by what decides them, so an unchanged workflow is not explored
twice (CI runs explore on every push).

The key is the sha256 of:

- the workflow's folder: every file in it (workflow JSON, manifest, ledger SQL, companion
  workflows), by relative path and bytes; hidden files and ``__pycache__`` left out;
- the n8n version and the number of workers (the matrix case ids a report names depend on it);
- the harness version: the package's version and a sha256 of the source of the ``harness``
  and ``fake_providers`` packages (every ``*.py``: a changed oracle or crash point judges
  differently even under the same version number).

An entry is ``<cache dir>/<workflow>/<key>.json``: the report's lines, its JSON and whether it
found a violation. Only a complete exploration is stored (every probe run, none cut short by a
harness error): a partial one would hide what it did not cover. A probe judged NO-EVIDENCE
(its strike not proven) is stored as it is: it is the harness's limit at that boundary, the
cached report says so ("covered: 1 NO-EVIDENCE"), and a new harness version is a new key.
The default cache dir is ``explore/`` in the install cache (``N8N_CHAOS_CACHE``, see
``harness.stack.install``).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import fake_providers
import harness
from harness.stack.install import default_cache_dir

PACKAGE = "n8n-chaos"
# Bumped when an entry's layout changes: older entries are then misses, not errors.
ENTRY_FORMAT = 1


def default_explore_cache() -> Path:
    return default_cache_dir() / "explore"


def _files(folder: Path) -> list[Path]:
    return sorted(
        p
        for p in folder.rglob("*")
        if p.is_file()
        and not any(
            part.startswith(".") or part == "__pycache__" for part in p.relative_to(folder).parts
        )
    )


def folder_sha256(folder: Path) -> str:
    """Every file under ``folder`` by its relative path and bytes."""
    digest = hashlib.sha256()
    for path in _files(folder):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


@cache
def harness_version() -> str:
    """``<package version>+src.<12 hex of the source's sha256>``."""
    try:
        version = importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        version = "0+unknown"
    digest = hashlib.sha256()
    for package in (harness, fake_providers):
        root = Path(package.__file__ or "").parent
        for path in sorted(root.rglob("*.py")):
            digest.update(path.relative_to(root.parent).as_posix().encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return f"{version}+src.{digest.hexdigest()[:12]}"


@dataclass(frozen=True)
class CacheKey:
    workflow: str
    parts: Mapping[str, str]

    @property
    def sha256(self) -> str:
        return hashlib.sha256(json.dumps(dict(self.parts), sort_keys=True).encode()).hexdigest()

    @property
    def short(self) -> str:
        return self.sha256[:12]


def cache_key(
    workflow: str,
    folder: Path,
    n8n_version: str,
    workers: int,
    harness: str | None = None,
    ledger_sql: str | None = None,
) -> CacheKey:
    return CacheKey(
        workflow,
        {
            "workflow_folder": folder_sha256(folder),
            # A schema shared from outside the folder (``../_ledgers/``), as the manifest made it.
            "ledger": hashlib.sha256((ledger_sql or "").encode()).hexdigest(),
            "n8n": n8n_version,
            "workers": str(workers),
            "harness": harness or harness_version(),
        },
    )


@dataclass(frozen=True)
class CachedExploration:
    key: CacheKey
    lines: list[str]
    report: dict[str, Any]
    violation: bool
    run_dir: str
    stored_at: str


class ExploreCache:
    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, key: CacheKey) -> Path:
        return self.root / key.workflow / f"{key.sha256}.json"

    def lookup(self, key: CacheKey) -> CachedExploration | None:
        """The stored exploration under this key; None when there is none or it is unreadable
        (a torn or older entry is a miss: the workflow is explored again)."""
        try:
            doc = json.loads(self.path(key).read_text())
            if doc.get("format") != ENTRY_FORMAT:
                return None
            return CachedExploration(
                key,
                [str(line) for line in doc["lines"]],
                dict(doc["report"]),
                bool(doc["violation"]),
                str(doc.get("run_dir", "")),
                str(doc.get("stored_at", "")),
            )
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None

    def store(
        self,
        key: CacheKey,
        lines: Iterable[str],
        report: Mapping[str, Any],
        violation: bool,
        run_dir: Path,
    ) -> Path:
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        doc = {
            "format": ENTRY_FORMAT,
            "workflow": key.workflow,
            "key": dict(key.parts),
            "stored_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "run_dir": str(run_dir),
            "violation": violation,
            "lines": list(lines),
            "report": dict(report),
        }
        # Written aside and renamed: a concurrent reader never sees half an entry.
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_text(json.dumps(doc, indent=2, default=str) + "\n")
        tmp.replace(path)
        return path
