"""A case whose fault did not land runs again (``--chaos-harness-retries``): each try's
evidence stays on disk, a try that lands gives the verdict, and running out of tries is a
harness error, never a pass."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import harness.front.suite as suite
from harness.engine.batch import SharedRuns
from harness.engine.runner import CaseResult
from harness.judge.oracle import Judgement, Verdict
from harness.matrix.cases import matrix
from harness.terminal.reporter import VERDICT_PROPERTY
from tests.unit.test_cases import workflow


def fake_run_case(verdicts: Iterator[Verdict], calls: list[int]) -> Any:
    def run_case(case: Any, stack: Any, *_: Any) -> CaseResult:
        case_dir = stack.run.run_dir / "cases" / case.id
        case_dir.mkdir(parents=True, exist_ok=True)
        calls.append(len(calls) + 1)
        (case_dir / "evidence.json").write_text(json.dumps({"try": len(calls)}))
        verdict = next(verdicts)
        judgement = Judgement(verdict, f"made up {verdict.value}")
        return CaseResult(case.id, judgement, None, case_dir / "evidence.json")  # type: ignore[arg-type]

    return run_case


def run_test(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, verdicts: list[Verdict], retries: int
) -> tuple[list[int], dict[str, Any]]:
    calls: list[int] = []
    monkeypatch.setattr(suite, "run_case", fake_run_case(iter(verdicts), calls))
    monkeypatch.setattr(suite, "label_case", lambda case: None)
    monkeypatch.setattr(suite, "attach_result", lambda result, reset_from: None)
    case = next(c for c in matrix([workflow()]) if c.id == "pay-retry-worker_kill-after_commit")
    stack = SimpleNamespace(run=SimpleNamespace(run_dir=tmp_path))
    recorded: dict[str, Any] = {}
    deployments = {case.workflow: (None, None)}
    # The test picks its stack and deployments by fixture name (the webhook-processor stack
    # or the session's): both names answer the same here.
    fixtures = {
        "n8n_stack": stack,
        "n8n_webhook_stack": stack,
        "chaos_deployments": deployments,
        "chaos_webhook_deployments": deployments,
        "chaos_shared_runs": SharedRuns({}),  # a worker_kill case takes the stack alone
    }
    request = SimpleNamespace(getfixturevalue=fixtures.__getitem__)
    suite.test_exactly_once(case, request, [], retries, recorded.__setitem__)  # type: ignore[arg-type]
    return calls, recorded


def test_a_missed_fault_runs_again_and_keeps_the_first_try(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls, recorded = run_test(tmp_path, monkeypatch, [Verdict.NO_EVIDENCE, Verdict.PASS], 1)
    assert calls == [1, 2]
    cases = tmp_path / "cases"
    kept = cases / "pay-retry-worker_kill-after_commit.try1" / "evidence.json"
    assert json.loads(kept.read_text()) == {"try": 1}
    assert json.loads(
        (cases / "pay-retry-worker_kill-after_commit" / "evidence.json").read_text()
    ) == {"try": 2}
    verdict = recorded[VERDICT_PROPERTY]
    assert verdict["verdict"] == "PASS"
    assert "try 1 NO-EVIDENCE" in verdict["explanation"]


def test_out_of_tries_is_a_harness_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(suite.HarnessCaseError, match="NO-EVIDENCE"):
        run_test(tmp_path, monkeypatch, [Verdict.NO_EVIDENCE] * 2, 1)


def test_a_violation_is_never_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(pytest.fail.Exception, match="DUPLICATE where PASS"):
        run_test(tmp_path, monkeypatch, [Verdict.DUPLICATE, Verdict.PASS], 3)
    assert not list((tmp_path / "cases").glob("*.try*"))
