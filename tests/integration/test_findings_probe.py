"""One probe for real: two operator retries of the same failed execution at once, on the
session's stack (the cheapest probe: no process is killed or paused)."""

from __future__ import annotations

import pytest

from harness.findings.base import UNDETERMINED, get_probe
from harness.findings.session import run_probe
from harness.stack.stack import Stack

pytestmark = pytest.mark.integration


def test_concurrent_operator_retry_answers_from_evidence(n8n_stack: Stack) -> None:
    probe = get_probe("concurrent_operator_retry_node_error")
    answer = run_probe(probe, n8n_stack)
    assert answer.answer != UNDETERMINED, answer.why
    assert answer.answer in probe.answers
    evidence = answer.evidence
    # The failed origin: one attempt refused by the provider before any commit.
    assert evidence["provider_attempts"][0]["fault"] == "error_before_commit"
    assert answer.facts["origin_status"] == "error"
    assert answer.facts["calls_overlapped"] is True
    # What the answer says is what the rows and the provider show.
    retries = [
        r for r in evidence["execution_rows"] if r["retry_of"] == answer.facts["origin_execution"]
    ]
    assert len(retries) == len(answer.facts["retry_executions"])
    assert answer.facts["commits_by_retries"] == len(evidence["provider_commits"])
