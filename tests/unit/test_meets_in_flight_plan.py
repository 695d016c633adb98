"""The meets_in_flight plan and the workflows it is for: a workflow that sends an idempotency
key (a keypair header, a JSON header object, a record upstream's ``idempotency_header``) and
answers after its work gets the case; the plan proves itself only by the provider's 409 to a
request with the held key while the first was held (no stack)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.engine.deliveries import get_delivery
from harness.engine.deliveries.meets_in_flight import MeetsInFlight
from harness.matrix.cases import matrix
from harness.workflow.manifest import load_manifest
from harness.workflow.manifest_upstreams import UpstreamSpec
from harness.workflow.workflow_json import sends_idempotency_key
from tests.unit.test_cases import workflow

BUNDLED = Path(__file__).resolve().parents[2] / "workflows_under_test"
KEYPAIR = {
    "name": "Charge",
    "type": "n8n-nodes-base.httpRequest",
    "parameters": {
        "headerParameters": {"parameters": [{"name": "Idempotency-Key", "value": "={{ 1 }}"}]}
    },
}
JSON_HEADERS = {
    "name": "Charge",
    "type": "n8n-nodes-base.httpRequest",
    "parameters": {"specifyHeaders": "json", "jsonHeaders": '{ "idempotency-key": "k" }'},
}


def plans(**overrides: Any) -> set[str]:
    return {c.delivery for c in matrix([workflow(**overrides)])}


def test_a_workflow_that_sends_a_key_and_answers_after_its_work_gets_the_case() -> None:
    assert "meets_in_flight" in plans(workflow={"nodes": [KEYPAIR]})
    assert "meets_in_flight" in plans(workflow={"nodes": [JSON_HEADERS]})
    assert "meets_in_flight" not in plans()  # no key: the service never answers "in flight"
    assert "meets_in_flight" not in plans(workflow={"nodes": [{**KEYPAIR, "disabled": True}]})
    early = plans(workflow={"nodes": [KEYPAIR]}, acknowledges_early=True)
    assert "meets_in_flight" not in early and "retry" in early


def test_a_record_upstreams_idempotency_header_counts_as_a_key() -> None:
    node = {"name": "Send", "parameters": {"headerParameters": {"parameters": [
        {"name": "X-Request-Id", "value": "={{ $json.id }}"}
    ]}}}  # fmt: skip
    assert not sends_idempotency_key({"nodes": [node]})
    assert sends_idempotency_key({"nodes": [node]}, ["X-Request-Id"])
    spec = UpstreamSpec(fake="record", idempotency_header="x-request-id")
    keyed = workflow(workflow={"nodes": [node]}, upstreams={"api.example.com": spec})
    assert keyed.sends_idempotency_key


def test_the_bundled_keyed_workflows_that_answer_after_their_work_run_it() -> None:
    names = ["payment_idempotent", "stripe_idempotent", "payment_async", "payment_naive"]
    cases = matrix([load_manifest(BUNDLED / n) for n in names])
    assert {c.workflow for c in cases if c.delivery == "meets_in_flight"} == {
        "payment_idempotent",
        "stripe_idempotent",
    }  # payment_async answers first; payment_naive sends no key


@dataclass
class Info:
    reached_at: float | None
    ended_at: float | None
    reached_key: str | None
    attempt_id: int | None = 1


@dataclass
class Attempt:
    id: int
    idempotency_key: str | None
    http_status: int | None
    received_at: float


class Held:
    def __init__(self, info: Info) -> None:
        self._info = info

    def info(self) -> Info:
        return self._info


class Provider:
    def __init__(self, attempts: list[Attempt]) -> None:
        self._attempts = attempts

    def attempts(self, key: str | None = None) -> list[Attempt]:
        return [a for a in self._attempts if key in (None, a.idempotency_key)]


class Run:
    def __init__(self, attempts: list[Attempt]) -> None:
        self.provider = Provider(attempts)


def proof(info: Info, attempts: list[Attempt]) -> str | None:
    plan = get_delivery("meets_in_flight")
    assert isinstance(plan, MeetsInFlight)
    plan.run, plan.held = Run(attempts), Held(info)  # type: ignore[assignment]
    return plan.proof()


def test_the_proof_is_a_409_to_the_held_key_while_it_was_held() -> None:
    held = Info(reached_at=10.0, ended_at=20.0, reached_key="pay:k")
    first = Attempt(1, "pay:k", 200, 9.9)
    fact = proof(held, [first, Attempt(2, "pay:k", 409, 15.0)])
    assert fact is not None and "attempt 2" in fact and "409" in fact
    assert proof(held, [first, Attempt(2, "pay:k", 409, 21.0)]) is None  # after the release
    assert proof(held, [first, Attempt(2, "pay:other", 409, 15.0)]) is None  # another key
    assert proof(held, [first, Attempt(2, "pay:k", 200, 15.0)]) is None  # a replay, no 409
    never = Info(reached_at=None, ended_at=None, reached_key=None)
    assert proof(never, [Attempt(2, "pay:k", 409, 15.0)]) is None


def test_a_key_sent_by_a_called_sub_workflow_counts() -> None:
    """subflow_checkout_idempotent's key is sent by the sub-workflow it calls, not by itself."""
    from dataclasses import replace

    from harness.workflow.manifest import discover

    [project] = [w for w in discover(BUNDLED) if w.name == "subflow_checkout_idempotent"]
    assert not sends_idempotency_key(project.workflow) and project.sends_idempotency_key
    every_scenario = replace(project, scenarios=())
    assert "meets_in_flight" in {c.delivery for c in matrix([every_scenario])}
