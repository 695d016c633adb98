"""The intercepting proxy's routing, on mitmproxy's own test flows (no sockets).

mitmproxy is not a dependency of the package: it lives in its own venv, which the proxy
process runs with. test_intercept_addon_venv.py runs this module there; in an interpreter
without mitmproxy it skips.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip(
    "mitmproxy",
    reason="mitmproxy is not importable here: test_intercept_addon_venv.py runs these tests "
    "with the python of mitmproxy's venv (made by `n8n-chaos install`)",
)

from mitmproxy import connection, http
from mitmproxy.proxy import server_hooks
from mitmproxy.test import taddons, tflow, tutils

from harness.stack.intercept.addon import Intercept
from harness.stack.intercept.config import Listener, ProxyConfig, write_hosts
from harness.stack.intercept.journal import read_journal

WORKER0 = Listener("worker0", 41000, "127.0.0.1:42000")
NO_PROVIDER = Listener("main", 41001, None)


@pytest.fixture
def addon(tmp_path: Path) -> Intercept:
    config = ProxyConfig(
        confdir=tmp_path / "confdir",
        hosts_file=tmp_path / "hosts.json",
        journal=tmp_path / "journal.jsonl",
        listeners=(WORKER0, NO_PROVIDER),
    )
    write_hosts(config.hosts_file, ["API.Stripe.com"])
    return Intercept(config)


def flow_to(
    host: str, listener: Listener = WORKER0, scheme: str = "https", port: int = 443
) -> http.HTTPFlow:
    request = tutils.treq(
        host=host,
        port=port,
        scheme=scheme.encode(),
        method=b"POST",
        path=b"/v1/payment_intents?expand=x",
        headers=http.Headers(((b"Host", host.encode()),)),
        content=b"amount=1",
    )
    flow = tflow.tflow(req=request)
    flow.client_conn.sockname = ("127.0.0.1", listener.port)
    return flow


def run(addon: Intercept, flow: http.HTTPFlow) -> None:
    with taddons.context(addon):
        addon.request(flow)
        if flow.response is None:  # what the provider would answer
            flow.response = tutils.tresp(status_code=404)
        addon.response(flow)


def test_a_mapped_host_goes_to_the_listeners_link_with_its_host_header(addon: Intercept) -> None:
    flow = flow_to("api.stripe.com")
    with taddons.context(addon):
        addon.request(flow)
    request = flow.request
    assert flow.response is None
    assert (request.scheme, request.host, request.port) == ("http", "127.0.0.1", 42000)
    assert request.headers["Host"] == "api.stripe.com"
    assert request.headers["X-N8n-Chaos-Via"] == "worker0"
    assert request.path == "/v1/payment_intents?expand=x"


def test_an_unmapped_host_gets_the_proxys_own_502(addon: Intercept, tmp_path: Path) -> None:
    flow = flow_to("example.com")
    run(addon, flow)
    assert flow.response is not None and flow.response.status_code == 502
    body = json.loads(flow.response.content or b"")
    assert body == {
        "error": "n8n-chaos: no fake answers host example.com; "
        "map it in manifest.json field 'upstreams'"
    }
    assert flow.request.host == "example.com"  # not rewritten: nothing was sent anywhere
    [entry] = read_journal(tmp_path / "journal.jsonl")
    assert (entry.listener, entry.host, entry.status, entry.outcome) == (
        "worker0",
        "example.com",
        502,
        "refused",
    )


def test_without_a_provider_link_even_a_mapped_host_is_refused(addon: Intercept) -> None:
    flow = flow_to("api.stripe.com", listener=NO_PROVIDER)
    run(addon, flow)
    assert flow.response is not None and flow.response.status_code == 502


def test_loopback_targets_pass_unchanged(addon: Intercept, tmp_path: Path) -> None:
    flow = flow_to("127.0.0.1", scheme="http", port=5678)
    run(addon, flow)
    assert (flow.request.host, flow.request.port) == ("127.0.0.1", 5678)
    assert "X-N8n-Chaos-Via" not in flow.request.headers
    assert read_journal(tmp_path / "journal.jsonl")[0].outcome == "loopback"


def test_the_host_map_is_reread_when_replaced(addon: Intercept, tmp_path: Path) -> None:
    write_hosts(tmp_path / "hosts.json", ["api.notion.com"])
    stripe, notion = flow_to("api.stripe.com"), flow_to("api.notion.com")
    run(addon, stripe)
    run(addon, notion)
    assert [e.outcome for e in read_journal(tmp_path / "journal.jsonl")] == [
        "refused",
        "forwarded",
    ]


def test_the_journal_records_what_n8n_asked_for(addon: Intercept, tmp_path: Path) -> None:
    run(addon, flow_to("api.stripe.com"))
    [entry] = read_journal(tmp_path / "journal.jsonl")
    assert (entry.method, entry.scheme, entry.host, entry.path) == (
        "POST",
        "https",
        "api.stripe.com",
        "/v1/payment_intents?expand=x",
    )
    assert (entry.status, entry.outcome, entry.error) == (404, "forwarded", None)


def test_a_failed_upstream_is_journalled_without_status(addon: Intercept, tmp_path: Path) -> None:
    flow = flow_to("api.stripe.com")
    with taddons.context(addon):
        addon.request(flow)
        flow.error = tflow.terr("connection reset")  # e.g. a cut Toxiproxy link
        addon.error(flow)
    [entry] = read_journal(tmp_path / "journal.jsonl")
    assert entry.status is None and entry.outcome == "forwarded"
    assert entry.error is not None and "connection reset" in entry.error


@pytest.mark.parametrize(
    ("address", "refused"),
    [(("93.184.216.34", 443), True), (("api.stripe.com", 443), True), (("127.0.0.1", 1), False)],
)
def test_no_server_connection_leaves_the_machine(
    addon: Intercept, address: tuple[str, int], refused: bool
) -> None:
    server = connection.Server(address=address)
    addon.server_connect(server_hooks.ServerConnectionHookData(server, tflow.tclient_conn()))
    assert (server.error is not None) is refused


def test_a_partly_written_last_line_is_not_read(tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    journal.write_text('{"time": 1')
    assert read_journal(journal) == []
