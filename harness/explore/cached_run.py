"""One ``n8n-chaos explore`` invocation's use of the cache: which workflows it may skip
(their cached report printed instead), and which explorations it stores."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harness.explore.cache import CachedExploration, CacheKey, ExploreCache, cache_key
from harness.explore.explorer import Exploration
from harness.explore.session import complete
from harness.workflow.manifest import WorkflowUnderTest


class CachedRun:
    """``cache`` None: nothing is read or stored (``--no-cache``, ``--only``)."""

    def __init__(self, cache: ExploreCache | None, n8n_version: str, workers: int) -> None:
        self.cache = cache
        self.n8n_version = n8n_version
        self.workers = workers
        self.violation = False  # a cached report found one
        self._keys: dict[str, CacheKey] = {}

    def key(self, workflow: WorkflowUnderTest) -> CacheKey | None:
        if self.cache is None or workflow.directory is None:
            return None
        if workflow.name not in self._keys:
            self._keys[workflow.name] = cache_key(
                workflow.name,
                workflow.directory,
                self.n8n_version,
                self.workers,
                ledger_sql=workflow.ledger_schema_sql,
            )
        return self._keys[workflow.name]

    def uncached(
        self,
        workflows: Sequence[WorkflowUnderTest],
        say: Callable[[str], None],
        on_hit: Callable[[CachedExploration], None] | None = None,
    ) -> list[WorkflowUnderTest]:
        """The workflows to explore; each cached one's report goes to ``say`` (and the whole
        entry to ``on_hit``)."""
        left = []
        for workflow in workflows:
            key = self.key(workflow)
            hit = self.cache.lookup(key) if self.cache is not None and key is not None else None
            if hit is None:
                left.append(workflow)
                continue
            say(
                f"{workflow.name}: cached (hash {key.short if key else '?'}; explored "
                f"{hit.stored_at} in {hit.run_dir})"
            )
            for line in hit.lines:
                say(line)
            if on_hit is not None:
                on_hit(hit)
            self.violation = self.violation or hit.violation
        return left

    def store(
        self,
        workflow: WorkflowUnderTest,
        found: Exploration,
        lines: list[str],
        report: dict[str, Any],
        run_dir: Path,
        say: Callable[[str], None],
    ) -> None:
        key = self.key(workflow)
        if self.cache is None or key is None:
            return
        if not complete(found):
            say(f"  not cached (hash {key.short}): incomplete (budget or harness error)")
            return
        violation = found.violation
        self.cache.store(key, lines, report, violation, run_dir)
        say(f"  cached (hash {key.short})")
