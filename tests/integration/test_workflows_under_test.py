"""The bundled workflows under test on the real stack, with no fault: each answers by its
contract, and its side effect lands at the provider as often as its promise says.

Redelivery of the same business event: once for the workflows with a ledger; twice for the
naive one, which is its known flaw (what the chaos matrix has to catch).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from psycopg.types.json import Jsonb

from harness.manifest import Promise, WorkflowUnderTest, discover
from harness.stack.deploy import DeployedWorkflow
from harness.stack.stack import Stack

pytestmark = pytest.mark.integration

BUNDLED = Path(__file__).resolve().parents[2] / "workflows_under_test"
WORKFLOWS = discover(BUNDLED)
NAMES = [w.name for w in WORKFLOWS]
TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Deployed:
    wut: WorkflowUnderTest
    deployed: DeployedWorkflow
    stack: Stack

    @property
    def url(self) -> str:
        assert self.deployed.webhook_url is not None
        return self.deployed.webhook_url

    def deliver(self, key: str, event_id: str, **overrides: Any) -> httpx.Response:
        body = {**self.wut.render_body(key=key, event_id=event_id), **overrides}
        return httpx.request(self.wut.method, self.url, json=body, timeout=TIMEOUT_S)

    def commits(self, key: str) -> int:
        control = self.stack.provider.control if self.stack.provider else None
        assert control is not None, "the stack runs without the fake provider"
        return len(control.commits(reference=key, effect=self.wut.effect.provider_effect))

    def ledger_state(self, key: str) -> str | None:
        if self.wut.ledger_state_query is None:
            return None
        with psycopg.connect(self.stack.ledger_dsn) as conn:
            row = conn.execute(self.wut.ledger_state_query, {"key": key}).fetchone()
        return None if row is None else str(row[0])


@pytest.fixture(scope="module")
def deployments(n8n_stack: Stack) -> dict[str, Deployed]:
    """Each bundled workflow, its ledger schema applied, deployed once for this module.

    The webhook path gets a per-module suffix: another module of the session (the chaos
    matrix) may deploy the same workflow, and n8n refuses two workflows on one path. They
    stay published until the session's stack ends (n8n 2.40 refuses to delete a published
    workflow).
    """
    suffix = uuid.uuid4().hex[:6]
    deployed: dict[str, Deployed] = {}
    for wut in WORKFLOWS:
        if wut.ledger_schema_sql is not None:
            with psycopg.connect(n8n_stack.ledger_dsn, autocommit=True) as conn:
                conn.execute(wut.ledger_schema_sql.encode())
        unique = wut.with_path(f"{wut.path}-{suffix}")
        deployed[wut.name] = Deployed(unique, n8n_stack.deploy(unique.workflow), n8n_stack)
    return deployed


def fresh_key(name: str) -> tuple[str, str]:
    key = f"it-{name}-{uuid.uuid4().hex[:10]}"
    return key, f"evt-{key}"


@pytest.mark.parametrize("name", NAMES)
def test_one_delivery_is_one_effect(deployments: dict[str, Deployed], name: str) -> None:
    flow = deployments[name]
    key, event_id = fresh_key(name)
    response = flow.deliver(key, event_id)
    assert response.is_success, response.text
    assert flow.commits(key) == 1
    if flow.wut.ledger_done_state is not None:
        assert flow.ledger_state(key) == flow.wut.ledger_done_state
        assert response.json()["status"] == flow.wut.ledger_done_state
        assert response.json()["replayed"] is False


@pytest.mark.parametrize("name", NAMES)
def test_redelivery_of_the_same_event(deployments: dict[str, Deployed], name: str) -> None:
    flow = deployments[name]
    key, event_id = fresh_key(name)
    first = flow.deliver(key, event_id)
    again = flow.deliver(key, event_id)
    assert first.is_success, first.text
    assert again.is_success, again.text
    if flow.wut.promise is Promise.NONE:
        # The naive workflow's known flaw: every delivery is a new charge.
        assert flow.commits(key) == 2
        assert first.json()["id"] != again.json()["id"]
        return
    assert flow.commits(key) == 1
    assert flow.ledger_state(key) == flow.wut.ledger_done_state
    assert again.json()["replayed"] is True
    effect_id = "email_id" if name == "email_no_idempotency" else "charge_id"
    assert again.json()[effect_id] == first.json()[effect_id]


def test_payment_idempotent_replays_after_the_provider_forgot_the_key(
    deployments: dict[str, Deployed], n8n_stack: Stack
) -> None:
    """Past the key's TTL the provider would charge again; the ledger's 'confirmed' row is
    replayed without calling the provider at all."""
    flow = deployments["payment_idempotent"]
    control = n8n_stack.provider.control if n8n_stack.provider else None
    assert control is not None
    key, event_id = fresh_key("ttl")
    assert flow.deliver(key, event_id).is_success
    with n8n_stack.require_provider().keys_expired():
        again = flow.deliver(key, event_id)
    assert again.status_code == 200, again.text
    assert again.json()["replayed"] is True
    assert flow.commits(key) == 1
    assert len(control.attempts(reference=key)) == 1  # the provider never saw the replay


def test_payment_idempotent_reconciles_by_lookup_after_the_key_expired(
    deployments: dict[str, Deployed], n8n_stack: Stack
) -> None:
    """A row left 'unknown' (the charge's answer was lost) past the key's TTL: the lookup by
    idempotency key still finds the charge, so the redelivery confirms it, no second charge."""
    flow = deployments["payment_idempotent"]
    control = n8n_stack.provider.control if n8n_stack.provider else None
    assert control is not None
    key, event_id = fresh_key("lookup")
    first = flow.deliver(key, event_id)
    assert first.is_success, first.text
    with psycopg.connect(n8n_stack.ledger_dsn, autocommit=True) as conn:
        conn.execute("UPDATE pay_ledger SET status = 'unknown' WHERE op_key = %s", (f"pay:{key}",))
    with n8n_stack.require_provider().keys_expired():
        again = flow.deliver(key, event_id)
    assert again.status_code == 200, again.text
    assert again.json()["reconciled"] is True
    assert again.json()["charge_id"] == first.json()["charge_id"]
    assert flow.ledger_state(key) == "confirmed"
    assert flow.commits(key) == 1


@pytest.mark.parametrize("name", [w.name for w in WORKFLOWS if w.promise is not Promise.NONE])
def test_definite_rejections_are_4xx_without_effect(
    deployments: dict[str, Deployed], name: str
) -> None:
    flow = deployments[name]
    key, event_id = fresh_key(name)
    invalid = flow.deliver(key, event_id, order_id="not a valid id")
    assert invalid.status_code == 400, invalid.text
    assert invalid.json()["status"] == "rejected"
    assert flow.deliver(key, event_id).is_success
    changed = {"amount": 999} if flow.wut.effect == "charges" else {"subject": "another"}
    mismatch = flow.deliver(key, event_id, **changed)
    assert mismatch.status_code == 422, mismatch.text
    assert flow.commits(key) == 1
    assert flow.ledger_state(key) == flow.wut.ledger_done_state


def test_email_left_sending_by_a_crash_is_never_sent_again(
    deployments: dict[str, Deployed], n8n_stack: Stack
) -> None:
    """An earlier attempt claimed the email and died: nobody knows whether it went. The
    redelivery marks it 'unknown' and answers 202 without sending (at most once)."""
    flow = deployments["email_no_idempotency"]
    key, event_id = fresh_key("email")
    request = {
        k: v for k, v in flow.wut.render_body(key, event_id).items() if k in ("to", "subject")
    }
    with psycopg.connect(n8n_stack.ledger_dsn, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO email_ledger (op_key, order_id, request, status) "
            "VALUES (%s, %s, %s::jsonb, 'sending')",
            (
                f"email:order-confirmation:{key}",
                key,
                Jsonb({**request, "reference": key}),
            ),
        )
    for _ in range(2):
        response = flow.deliver(key, event_id)
        assert response.status_code == 202, response.text
        assert response.json()["status"] == "unknown"
        assert response.json()["retry"] is False
    assert flow.ledger_state(key) == "unknown"
    assert flow.commits(key) == 0
