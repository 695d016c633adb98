"""The wait_resume plan and the workflows it is for: a workflow that parks at a Wait node
(On Webhook Call) runs only the plans that call its resume URL; the plan reads the URL from
the answers, calls each parked execution's URL twice at once and once more late, and proves
itself only by n8n's rows showing the executions waiting (no stack)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from harness.engine.deliveries import get_delivery
from harness.engine.deliveries.wait_resume import resume_urls
from harness.engine.journal import Journal
from harness.engine.workload import BackgroundDelivery, DeliveryAttempt, History
from harness.errors import ConfigError
from harness.matrix.cases import matrix
from harness.workflow.manifest import NegativeControl, load_manifest
from tests.unit.test_cases import workflow

URL = "http://127.0.0.1:5678/webhook-waiting/{}?signature=abc123"
WAIT_NODE = {
    "name": "Wait for approval",
    "type": "n8n-nodes-base.wait",
    "parameters": {"resume": "webhook", "httpMethod": "POST"},
}
ASK_NODE = {
    "name": "Ask",
    "type": "n8n-nodes-base.respondToWebhook",
    "parameters": {"responseBody": "={{ { approval_url: $execution.resumeUrl } }}"},
}
BUNDLED = Path(__file__).resolve().parents[2] / "workflows_under_test"


def test_resume_urls_are_read_from_answers_escaped_or_not() -> None:
    answers = [
        '{"approval_url":"' + URL.format(12) + '"}',
        '{"approval_url":"' + URL.format(13).replace("/", "\\/") + '"}',
        "no url here",
        '{"again":"' + URL.format(12) + '&x=1"}',
    ]
    assert resume_urls(answers) == {"12": URL.format(12), "13": URL.format(13)}


def test_a_parking_workflow_runs_only_the_plans_that_resume_it() -> None:
    parking = workflow("appr", workflow={"nodes": [ASK_NODE, WAIT_NODE]})
    plain = workflow("pay")
    assert {c.delivery for c in matrix([parking])} == {"wait_resume"}
    assert "wait_resume" not in {c.delivery for c in matrix([plain])}
    # A disabled Wait, or one that resumes after an interval, does not park for a call.
    disabled = workflow("off", workflow={"nodes": [{**WAIT_NODE, "disabled": True}]})
    assert "wait_resume" not in {c.delivery for c in matrix([disabled])}


def test_a_negative_control_cannot_name_a_scenario_its_workflow_never_runs() -> None:
    parking = workflow(
        "appr",
        workflow={"nodes": [ASK_NODE, WAIT_NODE]},
        negative_control=NegativeControl("bug", {"retry-no_fault-none": "DUPLICATE"}),
    )
    with pytest.raises(ConfigError, match="parks at a Wait node"):
        matrix([parking])
    plain = workflow(
        "pay", negative_control=NegativeControl("bug", {"wait_resume-no_fault-none": "DUPLICATE"})
    )
    with pytest.raises(ConfigError, match="no Wait node resumes"):
        matrix([plain])


def test_a_parking_workflow_that_hands_out_no_resume_url_is_warned_about(tmp_path: Path) -> None:
    source, copy = BUNDLED / "stripe_approval", tmp_path / "stripe_approval"
    copy.mkdir()
    for name in ("manifest.json", "workflow.json"):
        (copy / name).write_text((source / name).read_text())
    assert load_manifest(copy).warnings == ()
    text = (copy / "workflow.json").read_text()
    (copy / "workflow.json").write_text(text.replace("$execution.resumeUrl", "'later'"))
    (warning,) = load_manifest(copy).warnings
    assert "'Wait for approval'" in warning and "$execution.resumeUrl" in warning


class ParkingWorld:
    """What the plan uses of a CaseWorld: each delivery parks one execution and answers its
    resume URL; a resume call of a waiting execution runs it, any later call gets 409."""

    key = "k1"

    def __init__(self, hand_out_url: bool = True) -> None:
        self.journal = Journal()
        self.history = History()
        self.rows: dict[str, str] = {}
        self.hand_out_url = hand_out_url
        self.lock = threading.Lock()
        self.in_flight = 0
        self.most_in_flight = 0

    def start_work(self, work: Callable[[], object]) -> BackgroundDelivery:
        return BackgroundDelivery(work)

    def deliver(self, delivery: str = "d1", **_: Any) -> DeliveryAttempt:
        execution = str(10 + len(self.rows))
        self.rows[execution] = "waiting"
        body = f'{{"approval_url":"{URL.format(execution)}"}}' if self.hand_out_url else "{}"
        return self._attempt(delivery, 202, body)

    def call(self, url: str, body: dict[str, Any], delivery: str) -> DeliveryAttempt:
        assert body["key"] == self.key
        execution = url.split("/webhook-waiting/")[1].split("?")[0]
        with self.lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        time.sleep(0.05)  # keeps the calls in flight together (a test's stand-in for n8n)
        with self.lock:
            self.in_flight -= 1
            first = self.rows[execution] == "waiting"
            self.rows[execution] = "success"
        return self._attempt(delivery, 200 if first else 409, "")

    def _attempt(self, delivery: str, status: int, body: str) -> DeliveryAttempt:
        now = time.time()
        attempt = DeliveryAttempt(
            delivery, 1, now, now, "ok" if status < 300 else "info", status, body
        )
        self.history.add(attempt)
        return attempt

    def attempts(self, delivery: str | None = None) -> list[DeliveryAttempt]:
        return [a for a in self.history.attempts if delivery in (None, a.delivery)]

    def executions(self) -> list[dict[str, Any]]:
        return [{"id": e, "status": s} for e, s in self.rows.items()]

    def wait_for(self, what: str, probe: Callable[[], bool], deadline_s: float) -> bool:
        del what, deadline_s
        return probe()


def statuses(attempts: Iterable[DeliveryAttempt], delivery: str) -> list[int | None]:
    return sorted(a.status or 0 for a in attempts if a.delivery == delivery)


def test_each_parked_execution_is_resumed_twice_at_once_then_once_late() -> None:
    plan = get_delivery("wait_resume")
    world = ParkingWorld()
    assert plan.start(world).join(10.0)  # type: ignore[arg-type]
    assert [a.delivery for a in world.attempts()][:2] == ["d1", "redelivery"]
    assert statuses(world.attempts(), "resume") == [200, 200, 409, 409]
    assert world.most_in_flight == 4  # both executions' calls, released together
    assert plan.after_settle(world)  # type: ignore[arg-type]
    assert statuses(world.attempts(), "late resume") == [409, 409]
    proof = plan.proof()
    assert proof is not None and "10, 11 waiting" in proof and "late resume: 409" in proof


def test_no_resume_url_in_the_answers_is_no_proof_and_says_why() -> None:
    plan = get_delivery("wait_resume")
    world = ParkingWorld(hand_out_url=False)
    assert plan.start(world).join(10.0)  # type: ignore[arg-type]
    assert not plan.after_settle(world)  # type: ignore[arg-type]
    assert plan.proof() is None
    assert any("no resume URL" in e.what for e in world.journal.entries)


def test_a_resume_url_off_this_machine_is_never_called() -> None:
    plan = get_delivery("wait_resume")
    world = ParkingWorld()
    world.deliver = lambda delivery="d1", **_: world._attempt(  # type: ignore[method-assign]
        delivery, 202, '{"u":"https://approvals.example.com/webhook-waiting/5?signature=x"}'
    )
    assert plan.start(world).join(10.0)  # type: ignore[arg-type]
    assert not [a for a in world.attempts() if a.delivery == "resume"]
    assert plan.proof() is None


def test_explore_leaves_a_parking_workflow_to_its_matrix_and_says_so() -> None:
    from harness.explore.plan import Budget
    from harness.explore.session import explore_workflows

    parking = workflow("appr", workflow={"nodes": [ASK_NODE, WAIT_NODE]})
    said: list[str] = []
    found = explore_workflows(None, [parking], Budget(cases=5), say=said.append)  # type: ignore[arg-type]
    assert found == []
    assert said and "not explored" in said[0] and "n8n-chaos run -k appr" in said[0]
