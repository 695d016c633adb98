"""The mitmproxy addon: route each intercepted request by its host and its listener.

- A host with a fake (in the host map): sent as plain HTTP to the listener's Toxiproxy link
  to the provider, keeping its ``Host`` header and adding ``X-N8n-Chaos-Via: <listener>``.
- A loopback target: passed through unchanged (NO_PROXY normally keeps those away).
- Any other host: answered 502 by the proxy itself, with a JSON body that names the fix.
- Whatever the flow, ``server_connect`` refuses every connection that is not to loopback:
  nothing the proxy does can reach the internet.

Every request (and every TLS handshake an n8n process refused) is one journal line.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import time

from mitmproxy import connection, http, tls
from mitmproxy.proxy import server_hooks

from harness.stack.intercept.config import (
    LOOPBACK_HOSTS,
    VIA_HEADER,
    HostMap,
    Listener,
    ProxyConfig,
)
from harness.stack.intercept.journal import JournalEntry, JournalWriter, Outcome, masked

log = logging.getLogger("n8n-chaos.intercept")
_OUTCOME = "n8n_chaos_outcome"
_LISTENER = "n8n_chaos_listener"
_TARGET = "n8n_chaos_target"  # (scheme, host, path) as n8n asked, before any rewrite
CA_HINT = (
    "the n8n process does not trust the run's CA: it must start with "
    "NODE_EXTRA_CA_CERTS={ca} (Node reads it once, at process start)"
)


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def refusal_body(host: str) -> bytes:
    message = f"n8n-chaos: no fake answers host {host}; map it in manifest.json field 'upstreams'"
    return json.dumps({"error": message}).encode()


class Intercept:
    def __init__(self, config: ProxyConfig) -> None:
        self.config = config
        self.by_port = {listener.port: listener for listener in config.listeners}
        self.host_map = HostMap(config.hosts_file)
        self.journal = JournalWriter(config.journal)
        self.ca_cert = config.ca_cert

    def listener_of(self, client: connection.Client) -> Listener:
        port = client.sockname[1] if client.sockname else 0
        return self.by_port.get(port) or Listener(f"port {port}", port, None)

    # -- hooks --------------------------------------------------------------------------
    def request(self, flow: http.HTTPFlow) -> None:
        listener = self.listener_of(flow.client_conn)
        request = flow.request
        host = request.pretty_host.lower()
        flow.metadata[_LISTENER] = listener.name
        flow.metadata[_TARGET] = (request.scheme, host, request.path)
        if is_loopback(host):
            flow.metadata[_OUTCOME] = "loopback"
            return
        if listener.upstream is None or host not in self.host_map.hosts():
            flow.metadata[_OUTCOME] = "refused"
            log.warning(
                "n8n-chaos: refused %s %s://%s%s from %s: no fake answers this host",
                request.method,
                request.scheme,
                host,
                request.path,
                listener.name,
            )
            flow.response = http.Response.make(
                502, refusal_body(host), {"Content-Type": "application/json"}
            )
            return
        flow.metadata[_OUTCOME] = "forwarded"
        host_header = request.host_header or request.pretty_host
        upstream_host, _, upstream_port = listener.upstream.rpartition(":")
        request.scheme = "http"
        request.host = upstream_host  # also rewrites Host: put the original back below
        request.port = int(upstream_port)
        request.host_header = host_header
        request.headers[VIA_HEADER] = listener.name

    def response(self, flow: http.HTTPFlow) -> None:
        status = flow.response.status_code if flow.response is not None else None
        self._record(flow, status, None)

    def error(self, flow: http.HTTPFlow) -> None:
        # The answer never came (e.g. a fault cut the worker's link to the provider).
        self._record(flow, None, str(flow.error) if flow.error else "no response")

    def server_connect(self, data: server_hooks.ServerConnectionHookData) -> None:
        address = data.server.address
        if address is None or not is_loopback(address[0]):
            data.server.error = (
                f"n8n-chaos: refusing to connect to {address}: nothing leaves the machine"
            )
            log.warning("%s", data.server.error)

    def tls_failed_client(self, data: tls.TlsData) -> None:
        client = data.context.client
        listener = self.listener_of(client)
        hint = CA_HINT.format(ca=self.ca_cert)
        error = f"TLS handshake failed for {client.sni}: {client.error}; {hint}"
        log.warning("n8n-chaos: %s (listener %s)", error, listener.name)
        entry = JournalEntry(
            time.time(), listener.name, "", "https", client.sni or "", "", None, "tls_failed", error
        )
        self.journal.append(entry)

    def done(self) -> None:
        self.journal.close()

    # -- journal ------------------------------------------------------------------------
    def _record(self, flow: http.HTTPFlow, status: int | None, error: str | None) -> None:
        outcome: Outcome | None = flow.metadata.get(_OUTCOME)
        if outcome is None:  # the request hook never ran for it (e.g. a malformed request)
            return
        scheme, host, path = flow.metadata[_TARGET]
        self.journal.append(
            JournalEntry(
                time=flow.request.timestamp_start,
                listener=flow.metadata[_LISTENER],
                method=flow.request.method,
                scheme=scheme,
                host=host,
                path=masked(path),
                status=status,
                outcome=outcome,
                error=error,
            )
        )
