"""What the intercepting proxy adds to one outbound request, measured two ways on one stack:

- client: an httpx client speaks to the provider as ``https://api.stripe.com`` through a
  worker's proxy listener (trusting the run's CA) against the same request sent straight to
  that worker's Toxiproxy link with ``Host: api.stripe.com``; both end at the same fake and
  route, so the difference is the proxy (TLS to it, its routing, its journal line). Requests
  alternate one by one, with keep-alive (one connection reused, as Node's agents do) and with
  a new connection each time (CONNECT and a TLS handshake on every request).
- n8n: a webhook whose HTTP Request node calls the same URL (intercepted) against one calling
  ``$env.N8N_CHAOS_UPSTREAM_PROVIDER`` with the same Host header (direct through Toxiproxy);
  executions alternate, one at a time; the difference of the medians is per execution.
"""

from __future__ import annotations

import socket
import ssl
import statistics
import time
from typing import Any

import httpx
from _common import load

from fake_providers.upstreams import Upstream
from harness.stack.stack import Stack
from harness.workflow.minimal_workflow import webhook_then_http

HOST = "api.stripe.com"
PATH = "/v1/customers?limit=1"
AUTH = {"Authorization": "Bearer sk_test_bench"}
# As Node's sockets (n8n). A kept-alive connection straight to a Toxiproxy link still stalls
# ~40 ms per request here (with or without it; not on new connections, not on mitmproxy's
# reused connection to the same link): read the keep-alive "direct" figure as an artifact.
NODELAY = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]


def route_to_stripe_fake(stack: Stack) -> None:
    stack.require_provider().control.set_upstreams([Upstream(host=HOST, fake="stripe")])
    assert stack.intercept is not None, "the stack runs without interception"
    stack.intercept.set_hosts([HOST])


def _median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 2)


def _timed(client: httpx.Client, statuses: set[int]) -> float:
    started = time.perf_counter()
    response = client.get(PATH)
    elapsed = time.perf_counter() - started
    statuses.add(response.status_code)
    return elapsed


def client_latency(stack: Stack, requests: int, worker: int = 0) -> dict[str, Any]:
    assert stack.intercept is not None
    link = f"http://127.0.0.1:{stack.listen_ports[f'worker{worker}_provider']}"
    proxy = f"http://{stack.intercept.addresses[f'worker{worker}']}"
    trust = ssl.create_default_context(cafile=str(stack.intercept.ca_cert))

    def direct_client() -> httpx.Client:
        transport = httpx.HTTPTransport(socket_options=NODELAY)
        return httpx.Client(
            base_url=link, headers={"Host": HOST, **AUTH}, timeout=30, transport=transport
        )

    def proxied_client() -> httpx.Client:
        transport = httpx.HTTPTransport(proxy=proxy, verify=trust, socket_options=NODELAY)
        return httpx.Client(
            base_url=f"https://{HOST}", headers=AUTH, timeout=30, transport=transport
        )

    result: dict[str, Any] = {"requests": requests, "load_before": load()}
    for mode in ("keep-alive", "new connection"):
        samples: dict[str, list[float]] = {"direct": [], "intercepted": []}
        statuses: dict[str, set[int]] = {"direct": set(), "intercepted": set()}
        makers = {"direct": direct_client, "intercepted": proxied_client}
        kept = {name: make() for name, make in makers.items()}
        try:
            for client in kept.values():  # warm up: connections, the proxy's leaf cert
                client.get(PATH)
            for _ in range(requests):
                for name, make in makers.items():
                    if mode == "keep-alive":
                        samples[name].append(_timed(kept[name], statuses[name]))
                    else:
                        with make() as fresh:
                            samples[name].append(_timed(fresh, statuses[name]))
        finally:
            for client in kept.values():
                client.close()
        direct, intercepted = _median_ms(samples["direct"]), _median_ms(samples["intercepted"])
        result[mode] = {
            "direct_median_ms": direct,
            "intercepted_median_ms": intercepted,
            "added_median_ms": round(intercepted - direct, 2),
            "direct_p90_ms": round(statistics.quantiles(samples["direct"], n=10)[-1] * 1000, 2),
            "intercepted_p90_ms": round(
                statistics.quantiles(samples["intercepted"], n=10)[-1] * 1000, 2
            ),
            "statuses": {name: sorted(codes) for name, codes in statuses.items()},
        }
    result["load_after"] = load()
    return result


def _get_workflow(path: str, url: str, headers: dict[str, str]) -> dict[str, Any]:
    parameters = {
        "method": "GET",
        "url": url,
        "sendHeaders": True,
        "headerParameters": {
            "parameters": [{"name": name, "value": value} for name, value in headers.items()]
        },
        "options": {"response": {"response": {"fullResponse": True, "neverError": True}}},
    }
    return webhook_then_http(path, "Call", parameters, name=f"bench {path}")


def n8n_latency(stack: Stack, executions: int) -> dict[str, Any]:
    workflows = {
        "intercepted": _get_workflow("bench-icpt", f"https://{HOST}{PATH}", AUTH),
        "direct": _get_workflow(
            "bench-icpt-direct",
            "={{ $env.N8N_CHAOS_UPSTREAM_PROVIDER }}" + PATH,
            {"Host": HOST, **AUTH},
        ),
    }
    urls = {}
    for name, workflow in workflows.items():
        deployed = stack.deploy(workflow)
        assert deployed.webhook_url is not None
        urls[name] = deployed.webhook_url
    samples: dict[str, list[float]] = {name: [] for name in urls}
    statuses: dict[str, set[int]] = {name: set() for name in urls}
    result: dict[str, Any] = {"executions": executions, "load_before": load()}
    with httpx.Client(timeout=60) as client:
        for url in urls.values():  # warm up
            client.post(url, json={})
        for _ in range(executions):
            for name, url in urls.items():
                started = time.perf_counter()
                response = client.post(url, json={})
                samples[name].append(time.perf_counter() - started)
                ok = response.status_code == 200
                statuses[name].add(response.json().get("statusCode", 0) if ok else -1)
    direct, intercepted = _median_ms(samples["direct"]), _median_ms(samples["intercepted"])
    result |= {
        "direct_median_ms": direct,
        "intercepted_median_ms": intercepted,
        "added_median_ms": round(intercepted - direct, 2),
        # The provider's status seen by the node (the same on both paths: same fake, route).
        "statuses": {name: sorted(codes) for name, codes in statuses.items()},
        "load_after": load(),
    }
    return result
