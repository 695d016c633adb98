"""The bundled workflows under test on the real stack, with no fault (or only the provider's
own fault plan): each answers by its contract, and its side effect lands at the provider as
often as its promise says. Each is deployed with its companions (``deploy_under_test``).

Redelivery of the same business event: once for the workflows with a ledger; twice for the
naive one, which is its known flaw (what the chaos matrix has to catch). The negative controls
show their bug here wherever it shows without a crash.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from psycopg.types.json import Jsonb

from fake_providers.payment import FaultKind, ProviderControl
from harness.stack.stack import Stack
from harness.workflow.deployment import Deployment, deploy_under_test
from harness.workflow.manifest import Promise, WorkflowUnderTest, discover

pytestmark = pytest.mark.integration

BUNDLED = Path(__file__).resolve().parents[2] / "workflows_under_test"
# The workflows written for the bundled provider's API (the examples written as exported call
# their real hosts through the fakes; the matrix judges them).
WORKFLOWS = [w for w in discover(BUNDLED) if not w.upstreams]
# Workflows that answer once the effect is known, and keep their promise.
SYNCHRONOUS = [w.name for w in WORKFLOWS if w.negative_control is None and not w.acknowledges_early]
KEPT_PROMISES = [w.name for w in WORKFLOWS if w.negative_control is None]
TIMEOUT_S = 60.0
# How long an Error Workflow or the work after an early answer may take to show.
SETTLE_S = 30.0


@dataclass(frozen=True)
class Deployed:
    wut: WorkflowUnderTest
    deployed: Deployment
    stack: Stack

    @property
    def url(self) -> str:
        assert self.deployed.main.webhook_url is not None
        return self.deployed.main.webhook_url

    @property
    def control(self) -> ProviderControl:
        assert self.stack.provider is not None, "the stack runs without the fake provider"
        return self.stack.provider.control

    def deliver(self, key: str, event_id: str, **overrides: Any) -> httpx.Response:
        body = {**self.wut.render_body(key=key, event_id=event_id), **overrides}
        return httpx.request(self.wut.method, self.url, json=body, timeout=TIMEOUT_S)

    def reconcile(self, key: str) -> httpx.Response:
        assert self.wut.reconciler is not None and self.deployed.reconciler is not None
        url = self.deployed.reconciler.webhook_url
        assert url is not None
        body = self.wut.reconciler.render_body(key=key, event_id=f"evt-{key}")
        return httpx.request(self.wut.reconciler.method, url, json=body, timeout=TIMEOUT_S)

    def commits(self, key: str) -> int:
        return len(self.control.commits(reference=key, effect=self.wut.effect.provider_effect))

    def attempts(self, key: str) -> int:
        return len(self.control.attempts(reference=key))

    def ledger_state(self, key: str) -> str | None:
        if self.wut.ledger_state_query is None:
            return None
        with psycopg.connect(self.stack.ledger_dsn) as conn:
            row = conn.execute(self.wut.ledger_state_query, {"key": key}).fetchone()
        return None if row is None else str(row[0])

    def error_workflow_runs(self, key: str) -> int:
        assert self.wut.error_workflow is not None
        with psycopg.connect(self.stack.ledger_dsn) as conn:
            row = conn.execute(self.wut.error_workflow.runs_query, {"key": key}).fetchone()
        return 0 if row is None else int(row[0])

    def eventually(self, what: str, check: Callable[[], bool]) -> None:
        deadline = time.monotonic() + SETTLE_S
        while not check():
            assert time.monotonic() < deadline, f"{self.wut.name}: {what} not within {SETTLE_S} s"
            time.sleep(0.5)


@pytest.fixture(scope="module")
def deployments(n8n_stack: Stack) -> dict[str, Deployed]:
    """Each bundled workflow with its companions, deployed once for this module.

    The webhook paths get a per-module suffix: another module of the session (the chaos
    matrix) may deploy the same workflow, and n8n refuses two workflows on one path. They
    stay published until the session's stack ends (n8n 2.40 refuses to delete a published
    workflow).
    """
    suffix = uuid.uuid4().hex[:6]
    deployed: dict[str, Deployed] = {}
    for wut in WORKFLOWS:
        unique = wut.with_path_suffix(suffix)
        deployed[wut.name] = Deployed(unique, deploy_under_test(n8n_stack, unique), n8n_stack)
    return deployed


def deployments_promise(name: str) -> Promise:
    return next(w.promise for w in WORKFLOWS if w.name == name)


def fresh_key(name: str) -> tuple[str, str]:
    key = f"it-{name}-{uuid.uuid4().hex[:10]}"
    return key, f"evt-{key}"


@pytest.mark.parametrize("name", SYNCHRONOUS)
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
    if flow.wut.effect_id_field is not None:
        committed = flow.control.commits(reference=key)[0].effect_id
        assert flow.wut.effect_id_in(response.json()) == committed


@pytest.mark.parametrize("name", SYNCHRONOUS)
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
    assert flow.wut.effect_id_in(again.json()) == flow.wut.effect_id_in(first.json()) is not None


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


@pytest.mark.parametrize(
    "name", [w for w in KEPT_PROMISES if deployments_promise(w) is not Promise.NONE]
)
def test_definite_rejections_are_4xx_without_effect(
    deployments: dict[str, Deployed], name: str
) -> None:
    flow = deployments[name]
    key, event_id = fresh_key(name)
    invalid = flow.deliver(key, event_id, order_id="not a valid id")
    assert invalid.status_code == 400, invalid.text
    assert invalid.json()["status"] == "rejected"
    assert flow.deliver(key, event_id).is_success
    if flow.wut.acknowledges_early:
        flow.eventually("the charge after the 202", lambda: flow.ledger_state(key) == "confirmed")
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


# -- the Error Workflow (payment_error_handled) ----------------------------------------------


def test_error_workflow_runs_once_when_the_provider_is_down(
    deployments: dict[str, Deployed],
) -> None:
    """The provider fails every attempt before committing: the node's 3 tries run out, the
    execution fails, n8n (queue mode) runs the Error Workflow once; it finds no charge and
    marks the operation needs_action (a failed state of the manifest)."""
    flow = deployments["payment_error_handled"]
    key, event_id = fresh_key("down")
    flow.control.add_fault(FaultKind.ERROR_BEFORE_COMMIT, key=f"pay:{key}", attempts=None)
    try:
        response = flow.deliver(key, event_id)
        assert response.status_code == 500, response.text
        flow.eventually("the Error Workflow's verdict", lambda: flow.ledger_state(key) != "claimed")
    finally:
        flow.control.clear_faults()
    assert flow.ledger_state(key) == "needs_action"
    assert flow.ledger_state(key) in flow.wut.ledger_failed_states
    assert flow.error_workflow_runs(key) == 1
    assert flow.attempts(key) == 3  # the node's tries, each refused before a commit
    assert flow.commits(key) == 0
    # Once the provider is back, a redelivery reconciles and charges with the same key.
    again = flow.deliver(key, event_id)
    assert again.status_code == 200, again.text
    assert flow.commits(key) == 1 and flow.ledger_state(key) == "confirmed"
    assert flow.error_workflow_runs(key) == 1


def test_error_workflow_confirms_a_charge_committed_before_a_5xx(
    deployments: dict[str, Deployed],
) -> None:
    """Commit then 500: every try replays the stored 500, the execution fails, and the Error
    Workflow's lookup finds the charge: confirmed, never marked failed."""
    flow = deployments["payment_error_handled"]
    key, event_id = fresh_key("5xx")
    flow.control.add_fault(FaultKind.COMMIT_THEN_ERROR, key=f"pay:{key}", attempts=(1,))
    response = flow.deliver(key, event_id)
    assert response.status_code == 500, response.text
    flow.eventually("the Error Workflow's verdict", lambda: flow.ledger_state(key) != "claimed")
    assert flow.ledger_state(key) == "confirmed"
    assert flow.error_workflow_runs(key) == 1
    assert flow.commits(key) == 1
    again = flow.deliver(key, event_id)
    assert again.status_code == 200, again.text
    committed = flow.control.commits(reference=key)[0].effect_id
    assert flow.wut.effect_id_in(again.json()) == committed


# -- accept first, charge afterwards (payment_async and its reconciler) ---------------------


def test_payment_async_accepts_then_charges_once(deployments: dict[str, Deployed]) -> None:
    flow = deployments["payment_async"]
    key, event_id = fresh_key("async")
    first = flow.deliver(key, event_id)
    assert first.status_code == 202, first.text
    assert first.json()["status"] == "accepted"
    flow.eventually("the charge after the 202", lambda: flow.ledger_state(key) == "confirmed")
    assert flow.commits(key) == 1
    again = flow.deliver(key, event_id)
    assert again.status_code == 200, again.text
    committed = flow.control.commits(reference=key)[0].effect_id
    assert flow.wut.effect_id_in(again.json()) == committed
    settled = flow.reconcile(key)
    assert settled.status_code == 200 and settled.json()["reconciled"] is False
    assert flow.commits(key) == 1


def test_payment_async_reconciler_settles_what_a_crash_left_claimed(
    deployments: dict[str, Deployed], n8n_stack: Stack
) -> None:
    """A row claimed by a delivery whose worker died before the charge: redeliveries answer
    202 without charging; the reconciler finds no charge under the key and charges once."""
    flow = deployments["payment_async"]
    key, event_id = fresh_key("async-crash")
    with psycopg.connect(n8n_stack.ledger_dsn, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO async_ledger (op_key, order_id, request, status) "
            "VALUES (%s, %s, %s::jsonb, 'claimed')",
            (f"pay:{key}", key, Jsonb({"amount": 1250, "currency": "EUR", "reference": key})),
        )
    again = flow.deliver(key, event_id)
    assert again.status_code == 202, again.text
    time.sleep(1.0)
    assert flow.commits(key) == 0
    settled = flow.reconcile(key)
    assert settled.status_code == 200, settled.text
    assert settled.json()["status"] == "confirmed" and settled.json()["reconciled"] is True
    assert flow.ledger_state(key) == "confirmed"
    assert flow.commits(key) == 1
    assert flow.reconcile(key).json()["reconciled"] is False
    assert flow.commits(key) == 1


# -- negative controls: the bugs that show without a crash -----------------------------------


def test_broken_never_charges_never_charges(deployments: dict[str, Deployed]) -> None:
    flow = deployments["broken_never_charges"]
    key, event_id = fresh_key("never")
    response = flow.deliver(key, event_id)
    assert response.status_code == 503, response.text
    assert flow.attempts(key) == 0 and flow.commits(key) == 0


def test_broken_unknown_as_failure_says_failed_after_a_commit(
    deployments: dict[str, Deployed],
) -> None:
    flow = deployments["broken_unknown_as_failure"]
    key, event_id = fresh_key("unknown-failed")
    flow.control.add_fault(FaultKind.COMMIT_THEN_ERROR, key=f"pay:{key}", attempts=(1,))
    response = flow.deliver(key, event_id)
    assert response.status_code == 422, response.text
    assert flow.ledger_state(key) == "failed"
    assert flow.commits(key) == 1  # the lie: told 'failed', but charged


def test_broken_resend_on_unknown_charges_again_after_the_key_expired(
    deployments: dict[str, Deployed], n8n_stack: Stack
) -> None:
    flow = deployments["broken_resend_on_unknown"]
    key, event_id = fresh_key("resend")
    assert flow.deliver(key, event_id).status_code == 200
    with psycopg.connect(n8n_stack.ledger_dsn, autocommit=True) as conn:
        conn.execute("UPDATE bru_ledger SET status = 'unknown' WHERE op_key = %s", (f"pay:{key}",))
    with n8n_stack.require_provider().keys_expired():
        again = flow.deliver(key, event_id)
    assert again.status_code == 200, again.text
    assert flow.commits(key) == 2


@pytest.mark.parametrize(
    "name",
    [
        "broken_key_from_execution",
        "broken_no_idempotency_key",
        "broken_read_then_insert",
    ],
)
def test_broken_controls_look_fine_without_a_fault(
    deployments: dict[str, Deployed], name: str
) -> None:
    """Without a fault each of these charges once and answers 200: only the matrix shows them."""
    flow = deployments[name]
    key, event_id = fresh_key(name)
    response = flow.deliver(key, event_id)
    assert response.status_code == 200, response.text
    assert flow.commits(key) == 1
