"""Internal: Split the selected tests over N shards (``--shard I/N``), one per CI machine.

The split is stable: without timings each test goes to the shard its id hashes to, so a
test's shard never depends on what else is selected. With the timings of a previous run
(``timings.json`` in its run directory, one or several files) the tests are balanced by
their measured cost instead (longest first onto the least loaded shard; a test without a
measurement costs the median of the measured ones): the same selection and timings always
give the same split. There is no scheduler here: the CI's job matrix runs the shards.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import statistics
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from harness.errors import ConfigError

TIMINGS_FILE = "timings.json"


def parse_shard(text: str) -> tuple[int, int]:
    """'2/3' -> (2, 3); shards count from 1."""
    index, sep, total = text.partition("/")
    if not sep or not index.strip().isdigit() or not total.strip().isdigit():
        raise ConfigError(f"--shard {text!r} is not I/N (e.g. --shard 1/3)")
    i, n = int(index), int(total)
    if n < 1 or not 1 <= i <= n:
        raise ConfigError(f"--shard {text!r}: I must be between 1 and N (e.g. --shard 1/{n or 1})")
    return i, n


def hash_shard(test_id: str, total: int) -> int:
    """The shard (1..total) a test id hashes to."""
    digest = hashlib.sha256(test_id.encode()).digest()
    return int.from_bytes(digest[:8], "big") % total + 1


def assign(
    test_ids: Sequence[str], total: int, costs: Mapping[str, float] | None = None
) -> dict[str, int]:
    """Test id -> shard (1..total). Balanced by ``costs`` when given, else by hash."""
    if not costs:
        return {t: hash_shard(t, total) for t in test_ids}
    known = [costs[t] for t in test_ids if t in costs]
    default = statistics.median(known) if known else 1.0
    loads = [(0.0, shard) for shard in range(1, total + 1)]
    heapq.heapify(loads)
    chosen = {}
    for test_id in sorted(test_ids, key=lambda t: (-costs.get(t, default), t)):
        load, shard = heapq.heappop(loads)
        chosen[test_id] = shard
        heapq.heappush(loads, (load + costs.get(test_id, default), shard))
    return chosen


def load_timings(paths: Iterable[Path]) -> dict[str, float]:
    """Merge timings files (test id -> seconds); a later file wins for the same test."""
    merged: dict[str, float] = {}
    for path in paths:
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, ValueError) as exc:
            raise ConfigError(
                f"--shard-timings {path}: cannot read it ({exc}); pass the {TIMINGS_FILE} "
                "of an earlier run (its run directory), or leave the option out"
            ) from exc
        tests = data.get("tests") if isinstance(data, dict) else None
        if not isinstance(tests, dict):
            raise ConfigError(f"--shard-timings {path}: no 'tests' object; not a {TIMINGS_FILE}")
        merged.update({str(k): float(v) for k, v in tests.items()})
    return merged


def write_timings(path: Path, durations: Mapping[str, float]) -> None:
    path.write_text(json.dumps({"tests": dict(sorted(durations.items()))}, indent=1) + "\n")
