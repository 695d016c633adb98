"""The workload: outcome classes, the sender's retries, background deliveries."""

from __future__ import annotations

import threading

import httpx
import pytest
import respx

from harness.engine.workload import BackgroundDelivery, History, Sender, SenderPolicy, classify


@pytest.mark.parametrize(
    ("status", "outcome"),
    [
        (200, "ok"),
        (202, "ok"),
        (400, "fail"),
        (422, "fail"),
        (409, "info"),
        (429, "info"),
        (500, "info"),
        (503, "info"),
        (None, "info"),
    ],
)
def test_outcome_classes(status: int | None, outcome: str) -> None:
    assert classify(status) == outcome


@respx.mock
def test_sender_retries_until_definite_and_records_every_attempt() -> None:
    route = respx.post("http://127.0.0.1:9/webhook/pay").mock(
        side_effect=[
            httpx.ConnectError("refused"),
            httpx.Response(500),
            httpx.Response(200, json={}),
        ]
    )
    history = History()
    healed: list[int | None] = []
    sender = Sender("http://127.0.0.1:9/webhook/pay", "POST", history, SenderPolicy(backoff_s=0.0))
    last = sender.deliver({"order_id": "1"}, before_retry=lambda a: healed.append(a.status))
    assert last.outcome == "ok"
    assert [a.outcome for a in history.attempts] == ["info", "info", "ok"]
    assert healed == [None, 500]
    assert route.call_count == 3


@respx.mock
def test_sender_without_retry_stops_at_the_first_answer() -> None:
    respx.post("http://127.0.0.1:9/webhook/pay").mock(return_value=httpx.Response(500))
    history = History()
    Sender("http://127.0.0.1:9/webhook/pay", "POST", history, SenderPolicy(retry=False)).deliver({})
    assert len(history.attempts) == 1


def test_background_delivery_reports_done_and_reraises() -> None:
    gate = threading.Event()
    delivery = BackgroundDelivery(gate.wait)
    assert not delivery.done
    assert delivery.join(0.01) is False
    gate.set()
    assert delivery.join(5) is True and delivery.done

    def boom() -> None:
        raise RuntimeError("sender crashed")

    failing = BackgroundDelivery(boom)
    with pytest.raises(RuntimeError, match="sender crashed"):
        failing.join(5)


def test_history_hands_each_attempt_to_its_sink_as_it_ends() -> None:
    seen: list[str] = []
    history = History(sink=lambda a: seen.append(a.delivery))
    sender = Sender("http://127.0.0.1:9/x", "POST", history, SenderPolicy(retry=False))
    with respx.mock:
        respx.post("http://127.0.0.1:9/x").mock(return_value=httpx.Response(200))
        sender.deliver({}, delivery="d1")
    assert seen == ["d1"]
