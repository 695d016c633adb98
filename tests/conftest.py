"""Session-wide test wiring. The stack is one per session, whichever directory first asks
for it, so the echo upstream the integration tests use is declared here for all of them."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.upstream import UpstreamState, running_upstream


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked ``long`` (minutes, on a stack of their own) first: under xdist they then
    run beside the matrix on the other workers instead of alone at the end."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)  # a stable sort


@pytest.fixture(scope="session")
def echo_upstream() -> Iterator[tuple[str, UpstreamState]]:
    with running_upstream() as upstream:
        yield upstream


@pytest.fixture(scope="session")
def n8n_chaos_upstreams(echo_upstream: tuple[str, UpstreamState]) -> dict[str, str]:
    return {"echo": echo_upstream[0]}


@pytest.fixture
def short_dir() -> Iterator[Path]:
    # A unix socket path must stay under ~100 bytes; pytest's tmp_path can be longer.
    path = Path(tempfile.mkdtemp(prefix="n8n-chaos-test-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)
