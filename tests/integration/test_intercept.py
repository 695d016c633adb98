"""Unmodified workflows' outbound HTTPS goes through the run's intercepting proxy: a host with
a fake reaches the provider over the worker's own link; any other host gets the proxy's 502
and nothing leaves the machine."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from harness.stack.intercept.launcher import InterceptProxy
from harness.stack.stack import Stack
from harness.workflow.minimal_workflow import webhook_then_http

pytestmark = pytest.mark.integration


def call_workflow(path: str, method: str, url: str) -> dict[str, Any]:
    """A webhook and one HTTP Request node to a literal URL, answering with the node's full
    response (status, headers, body) whatever its status."""
    request: dict[str, Any] = {
        "method": method,
        "url": url,
        "options": {"response": {"response": {"fullResponse": True, "neverError": True}}},
    }
    if method == "POST":
        request |= {
            "sendBody": True,
            "contentType": "form-urlencoded",
            "bodyParameters": {
                "parameters": [
                    {"name": "amount", "value": "1000"},
                    {"name": "currency", "value": "usd"},
                    {"name": "metadata[order_id]", "value": "A-1"},
                ]
            },
        }
    return webhook_then_http(path, "Call", request)


def trigger(stack: Stack, method: str, url: str, timeout_s: float = 60.0) -> dict[str, Any]:
    """Run ``call_workflow`` once; an answer not given by ``timeout_s`` fails the test with
    what the proxy and the n8n processes logged meanwhile (the run folder is gone with CI's
    machine, the test's output is not)."""
    deployed = stack.deploy(call_workflow("icpt-" + uuid.uuid4().hex[:8], method, url))
    assert deployed.webhook_url is not None
    offsets = {p.name: p.log_size() for p in stack.processes}
    try:
        response = httpx.post(deployed.webhook_url, json={}, timeout=timeout_s)
    except httpx.TimeoutException:
        logged = "\n".join(
            f"--- {p.name} ---\n{p.log_since(offsets.get(p.name, 0))[-4000:]}"
            for p in stack.processes
        )
        pytest.fail(
            f"{method} {url} through n8n: no answer in {timeout_s:.0f} s;"
            f" intercept journal: {stack.intercept and stack.intercept.journal()[-5:]}\n{logged}"
        )
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


@pytest.fixture
def intercept(n8n_stack: Stack) -> InterceptProxy:
    assert n8n_stack.intercept is not None, "the stack runs without interception"
    n8n_stack.intercept.set_hosts(["api.stripe.com"])
    return n8n_stack.intercept


def test_a_mapped_https_host_reaches_the_provider_through_the_workers_listener(
    n8n_stack: Stack, intercept: InterceptProxy
) -> None:
    seen = len(intercept.journal())
    answer = trigger(n8n_stack, "POST", "https://api.stripe.com/v1/payment_intents")
    new = [e for e in intercept.journal()[seen:] if e.host == "api.stripe.com"]
    assert len(new) == 1, intercept.journal()[seen:]
    [entry] = new
    worker_names = {w.name for w in n8n_stack.workers}
    assert (entry.method, entry.scheme, entry.path) == ("POST", "https", "/v1/payment_intents")
    assert entry.outcome == "forwarded" and entry.listener in worker_names
    # The answer is the provider's, not the proxy's: n8n trusted the run's CA and the request
    # went over the worker's link (the bundled API answers 404 problem+json until the stripe
    # fake answers the route).
    assert entry.status == answer["statusCode"] != 502
    assert "no fake answers" not in str(answer), answer
    assert not [e for e in intercept.journal() if e.outcome == "tls_failed"]


def test_an_unmapped_host_gets_the_proxys_502_and_never_leaves(
    n8n_stack: Stack, intercept: InterceptProxy
) -> None:
    seen = len(intercept.journal())
    answer = trigger(n8n_stack, "GET", "https://example.com/")
    assert answer["statusCode"] == 502, answer
    assert "no fake answers host example.com" in str(answer), answer
    new = [e for e in intercept.journal()[seen:] if e.host == "example.com"]
    assert [(e.outcome, e.status) for e in new] == [("refused", 502)]
    log = (n8n_stack.run.run_dir / "logs" / "intercept.log").read_text()
    assert "refusing to connect" not in log  # not even attempted: answered before any connect
