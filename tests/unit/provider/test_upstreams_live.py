"""The fakes in the real provider process: Host routing over a socket, the control client's
view of their commits, a connection dropped after a Stripe commit, the SMTP port on READY."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from fake_providers.payment import FaultKind
from fake_providers.upstreams import ReferenceSource, Upstream

from .conftest import LiveProvider, unique
from .upstream_helpers import FORM, STRIPE_AUTH

STRIPE = Upstream("api.stripe.com", "stripe", ReferenceSource("form", "metadata[order_id]"))


def intent(live: LiveProvider, order: str, key: str) -> httpx.Response:
    headers = {**STRIPE_AUTH, "Host": "api.stripe.com", "Idempotency-Key": key}
    headers["Content-Type"] = FORM
    body = f"amount=900&currency=eur&metadata[order_id]={order}"
    return live.http.post("/v1/payment_intents", content=body, headers=headers)


@pytest.fixture
def stripe_live(live: LiveProvider) -> Iterator[LiveProvider]:
    live.control.set_upstreams([STRIPE])
    yield live
    live.control.set_upstreams([])


def test_commits_of_a_fake_show_through_the_control_client(stripe_live: LiveProvider) -> None:
    order = unique("order")
    answer = intent(stripe_live, order, unique("k"))
    assert answer.status_code == 200, answer.text
    [commit] = stripe_live.control.commits(order, effect="payment_intent")
    assert commit.effect == "payment_intent"
    assert commit.effect_id == answer.json()["id"]
    assert commit.charge_id is None
    [attempt] = stripe_live.control.attempts(order)
    assert attempt.effect == "payment_intent"


def test_commit_then_close_drops_a_stripe_answer_after_the_commit(
    stripe_live: LiveProvider,
) -> None:
    order, key = unique("order"), unique("k")
    fault = stripe_live.control.add_fault(
        FaultKind.COMMIT_THEN_CLOSE, key=key, effect="payment_intent"
    )
    with pytest.raises(httpx.TransportError):
        intent(stripe_live, order, key)
    assert len(stripe_live.control.commits(order)) == 1
    assert stripe_live.control.faults()[0].hits == 1 and fault.effect == "payment_intent"
    replay = intent(stripe_live, order, key)
    assert replay.headers["idempotent-replayed"] == "true"
    assert len(stripe_live.control.commits(order)) == 1


def test_ready_line_reports_the_smtp_port(live: LiveProvider) -> None:
    assert live.process.smtp_port > 0
    assert live.control.health()["smtp_port"] == live.process.smtp_port
