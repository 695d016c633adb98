"""The integration tests share the session's stack with the matrix: a worker a crash case
killed may still be booting again (``N8nProcess.start_again``), so a test that takes the
stack first waits until every process is ready."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _whole_stack(request: pytest.FixtureRequest) -> None:
    if "n8n_stack" in request.fixturenames:
        request.getfixturevalue("n8n_stack").revive()
