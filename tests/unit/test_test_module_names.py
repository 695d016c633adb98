"""Test modules are collected by basename (rootdir imports, no packages): two modules of the
same name in different test folders make pytest refuse the second one at collection."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_every_test_module_name_is_unique() -> None:
    names = Counter(path.name for path in TESTS.rglob("test_*.py"))
    clashes = sorted(name for name, count in names.items() if count > 1)
    assert not clashes, f"rename one of each (e.g. test_x_live.py): {clashes}"
