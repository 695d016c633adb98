"""The operator-retry plans press "retry" through the CaseWorld: the concurrent one has both
calls in flight at once, and proves itself only when both reached n8n (no stack)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from harness.engine.deliveries import get_delivery
from harness.engine.deliveries.operator_retry import OperatorRetry
from harness.engine.journal import Journal
from harness.errors import SetupError


class RetryingWorld:
    """Just what the plans use of a CaseWorld: rows, the retry call, settle, deliver."""

    def __init__(self, refuse_second: bool = False, retry_status: str = "success") -> None:
        self.journal = Journal()
        self.retry_status = retry_status
        self.rows: list[dict[str, Any]] = [{"id": "7", "status": "crashed", "mode": "webhook"}]
        self.in_flight = 0
        self.most_in_flight = 0
        self.both_in = threading.Barrier(2, timeout=5.0)
        self.refuse_second = refuse_second
        self.lock = threading.Lock()
        self.resent: list[str] = []

    def executions(self) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.rows)

    def retry_execution(self, execution_id: str) -> Mapping[str, Any]:
        with self.lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            new_id = str(8 + len(self.rows) - 1)
            self.rows.append({"id": new_id, "status": self.retry_status, "mode": "retry"})
        self.both_in.wait()  # returns only once the other operator's call is in flight too
        with self.lock:
            self.in_flight -= 1
        if self.refuse_second and new_id == "9":
            raise SetupError(f"retry execution {execution_id}: 409 already retried")
        return {"id": new_id}

    def failures(self, rows: list[dict[str, Any]]) -> list[str]:
        return [f"execution {r['id']}: failed outside any node: too many times" for r in rows]

    def settle(self, deadline_s: float, why: str) -> None:
        del deadline_s, why

    def deliver(self, delivery: str = "d1", **_: Any) -> None:
        self.resent.append(delivery)


def test_two_operators_press_retry_at_the_same_instant() -> None:
    plan = get_delivery("concurrent_operator_retry")
    world = RetryingWorld()
    assert plan.after_settle(world)  # type: ignore[arg-type]
    assert world.most_in_flight == 2
    assert len([r for r in world.rows if r["mode"] == "retry"]) == 2
    assert world.resent == []  # the retries completed the work: nobody re-sends by hand
    proof = plan.proof()
    assert proof is not None and proof.count("n8n started retry execution") == 2


def test_a_refusal_is_n8ns_answer_and_still_proves_both_calls() -> None:
    plan = get_delivery("concurrent_operator_retry")
    world = RetryingWorld(refuse_second=True)
    plan.after_settle(world)  # type: ignore[arg-type]
    proof = plan.proof()
    assert proof is not None and "refused" in proof and "started" in proof
    refused = [e.data["operator"] for e in world.journal.entries if e.kind == "finding"]
    assert len(refused) == 1 and refused[0] in (1, 2)  # the operator whose call lost


def test_one_call_answered_is_no_proof_of_two_operators() -> None:
    plan = get_delivery("concurrent_operator_retry")
    plan.fact = "n8n started retry execution 8 of 7"
    assert plan.proof() is None
    single = OperatorRetry()
    single.fact = "n8n started retry execution 8 of 7"
    assert single.proof() == single.fact


def test_a_retry_that_failed_is_a_finding_with_n8ns_reason_and_a_resend() -> None:
    world = RetryingWorld(retry_status="error")
    world.both_in = threading.Barrier(1)
    plan = OperatorRetry()
    assert plan.after_settle(world)  # type: ignore[arg-type]
    finding = next(e for e in world.journal.entries if e.what.startswith("operator retry did"))
    assert finding.data["retries"] == [("8", "error")]
    assert finding.data["why"] == ["execution 8: failed outside any node: too many times"]
    assert world.resent == ["operator"]


def test_executions_that_failed_alike_share_one_line() -> None:
    """n8n's stall sweep gives up three executions with one message: one line names all."""
    from types import SimpleNamespace

    from harness.engine.case_run import CaseRun
    from harness.stack.execution_failure import NodeFailure

    failures = {"19": NodeFailure(None, "too many times"), "21": NodeFailure("Pay", "boom")}
    api = SimpleNamespace(
        node_failure=lambda i: failures.get(i, NodeFailure(None, "too many times"))
    )
    run = SimpleNamespace(stack=SimpleNamespace(api=api))
    rows = [{"id": i, "status": "crashed"} for i in ("19", "20", "21")] + [
        {"id": "22", "status": "success"}
    ]
    assert CaseRun.failures(run, rows) == [  # type: ignore[arg-type]
        "executions 19, 20: failed outside any node: too many times",
        "execution 21: node 'Pay' failed: boom",
    ]
