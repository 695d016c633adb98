"""The operator's path of docs/findings.md's "An incident of your own": the example under
examples/incident runs as written, on the session's stack, and gives a determined answer."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from harness.stack.stack import Stack

pytestmark = pytest.mark.integration
EXAMPLE = Path(__file__).parents[2] / "examples" / "incident" / "test_incident_retry_after_crash.py"


@pytest.mark.long
def test_the_incident_example_answers(n8n_stack: Stack, tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("incident_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.test_retry_after_crash(n8n_stack, tmp_path)
    assert (tmp_path / "findings.json").is_file()
