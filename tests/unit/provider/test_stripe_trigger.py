"""The Stripe Trigger's personality, in-process: webhook endpoint registration as n8n's node
calls it, and signed deliveries to a real loopback receiver."""

from __future__ import annotations

import hashlib
import hmac
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from fake_providers.upstreams import Upstream

from .conftest import InProcessProvider
from .upstream_helpers import STRIPE_AUTH, configure, stripe_post

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]

STRIPE = Upstream("api.stripe.com", "stripe")
EVENT = {
    "id": "evt_1",
    "type": "checkout.session.completed",
    "data": {"object": {"id": "cs_1", "client_reference_id": "order-1"}},
}


class Receiver:
    """A loopback HTTP server standing in for n8n's webhook: records each request."""

    def __init__(self, status: int) -> None:
        self.requests: list[tuple[dict[str, str], bytes]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                receiver.requests.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/webhook/abc/webhook"


@pytest.fixture
def receiver(request: pytest.FixtureRequest) -> Iterator[Receiver]:
    served = Receiver(getattr(request, "param", 200))
    thread = threading.Thread(target=served.server.serve_forever, daemon=True)
    thread.start()
    yield served
    served.server.shutdown()
    served.server.server_close()


async def register(inproc: InProcessProvider, url: str) -> dict[str, Any]:
    """POST /v1/webhook_endpoints as the node's stripeApiRequest sends it (form, indices)."""
    await configure(inproc, STRIPE)
    form = [
        ("url", url),
        ("description", "Created by n8n for workflow ID: wf1"),
        ("enabled_events[0]", "checkout.session.completed"),
    ]
    answer = await stripe_post(inproc, "/v1/webhook_endpoints", form)
    assert answer.status_code == 200, answer.text
    document: dict[str, Any] = answer.json()
    return document


async def test_registration_answers_what_the_node_stores(inproc: InProcessProvider) -> None:
    endpoint = await register(inproc, "http://127.0.0.1:1/webhook/abc/webhook")
    assert endpoint["id"].startswith("we_")
    assert endpoint["secret"].startswith("whsec_")
    assert endpoint["status"] == "enabled"
    assert endpoint["enabled_events"] == ["checkout.session.completed"]
    path = f"/v1/webhook_endpoints/{endpoint['id']}"
    fetched = await inproc.public.get(path, headers={**STRIPE_AUTH, "Host": "api.stripe.com"})
    assert fetched.status_code == 200
    assert "secret" not in fetched.json()  # Stripe shows it on creation only
    listed = await inproc.public.get(
        "/v1/webhook_endpoints", headers={**STRIPE_AUTH, "Host": "api.stripe.com"}
    )
    assert [doc["id"] for doc in listed.json()["data"]] == [endpoint["id"]]
    assert await inproc.commits() == []  # registering is no effect


async def test_delete_then_check_exists_finds_nothing(inproc: InProcessProvider) -> None:
    endpoint = await register(inproc, "http://127.0.0.1:1/webhook/abc/webhook")
    headers = {**STRIPE_AUTH, "Host": "api.stripe.com"}
    path = f"/v1/webhook_endpoints/{endpoint['id']}"
    deleted = await inproc.public.delete(path, headers=headers)
    assert deleted.json() == {"id": endpoint["id"], "object": "webhook_endpoint", "deleted": True}
    gone = await inproc.public.get(path, headers=headers)
    assert gone.status_code == 404
    assert gone.json()["error"]["code"] == "resource_missing"  # the node's checkExists reads it


async def test_registration_needs_the_api_key(inproc: InProcessProvider) -> None:
    await configure(inproc, STRIPE)
    answer = await inproc.public.post(
        "/v1/webhook_endpoints", content="url=http://x", headers={"Host": "api.stripe.com"}
    )
    assert answer.status_code == 401


async def test_a_delivery_is_signed_with_the_endpoint_secret(
    inproc: InProcessProvider, receiver: Receiver
) -> None:
    endpoint = await register(inproc, receiver.url)
    sent = await inproc.control.post(
        "/_control/triggers/stripe/deliveries", json={"url": receiver.url, "event": EVENT}
    )
    assert sent.status_code == 200, sent.text
    assert sent.json()["status"] == 200
    [(headers, body)] = receiver.requests
    parts = dict(item.split("=", 1) for item in headers["stripe-signature"].split(","))
    assert parts["t"] == str(int(inproc.clock.now))
    expected = hmac.new(
        endpoint["secret"].encode(), parts["t"].encode() + b"." + body, hashlib.sha256
    ).hexdigest()
    assert hmac.compare_digest(parts["v1"], expected)
    assert b'"id": "evt_1"' in body and b'"object": "event"' in body


@pytest.mark.parametrize("receiver", [500], indirect=True)
async def test_a_non_2xx_answer_is_reported(inproc: InProcessProvider, receiver: Receiver) -> None:
    await register(inproc, receiver.url)
    sent = await inproc.control.post(
        "/_control/triggers/stripe/deliveries", json={"url": receiver.url, "event": EVENT}
    )
    assert sent.json()["status"] == 500


async def test_an_unregistered_url_is_refused_naming_what_is(inproc: InProcessProvider) -> None:
    await register(inproc, "http://127.0.0.1:1/webhook/abc/webhook")
    sent = await inproc.control.post(
        "/_control/triggers/stripe/deliveries",
        json={"url": "http://127.0.0.1:1/other", "event": EVENT},
    )
    assert sent.status_code == 404
    assert "http://127.0.0.1:1/webhook/abc/webhook" in sent.text


async def test_an_event_type_the_endpoint_does_not_listen_to_is_refused(
    inproc: InProcessProvider,
) -> None:
    url = "http://127.0.0.1:1/webhook/abc/webhook"
    await register(inproc, url)
    sent = await inproc.control.post(
        "/_control/triggers/stripe/deliveries",
        json={"url": url, "event": {**EVENT, "type": "charge.refunded"}},
    )
    assert sent.status_code == 409
