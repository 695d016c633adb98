"""A service trigger's delivery: one signed attempt of an event to the URL n8n registered, as
the service sends it (the personalities are ``triggers/``, one module each)."""

from __future__ import annotations

import json
import ssl
import time

import httpx

from .problems import ProblemError
from .runtime import ProviderRuntime
from .triggers import TRIGGERS, Document, ServiceTrigger, UndeliverableEvent, endpoints

# n8n registers plain-HTTP loopback URLs: a client needs no TLS, and building httpx's default
# context costs 25 ms of CPU on the provider's event loop (several times that on a loaded
# machine), so copies sent together left one after another, too far apart for n8n to run
# them at the same time (a concurrent case's window unproven). One context, never rebuilt.
_NO_TLS = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
_NO_TLS.check_hostname = False
_NO_TLS.verify_mode = ssl.CERT_NONE


def get_trigger(name: str) -> ServiceTrigger:
    if name not in TRIGGERS:
        raise ProblemError(
            404,
            "unknown-trigger",
            "Unknown service trigger",
            f"no service trigger {name!r}; known: {', '.join(sorted(TRIGGERS))}",
        )
    return TRIGGERS[name]


async def deliver(
    runtime: ProviderRuntime, trigger: ServiceTrigger, url: str, event: Document, timeout_s: float
) -> Document:
    """One delivery attempt of ``event`` to the endpoint registered for ``url``: its status
    (None for a timeout or a reset) and the start of its answer."""
    registered = [doc for doc in endpoints(runtime, trigger).values() if doc.get("url") == url]
    if not registered:
        known = sorted(str(doc.get("url")) for doc in endpoints(runtime, trigger).values())
        raise ProblemError(
            404,
            "no-endpoint",
            "No endpoint registered",
            f"no {trigger.name} webhook endpoint is registered for {url} (registered: "
            f"{', '.join(known) or 'none'}); the workflow's trigger did not register on "
            "activation",
        )
    endpoint = registered[-1]
    now = runtime.clock()
    try:
        document = trigger.envelope(event, now)
    except UndeliverableEvent as exc:
        raise ProblemError(422, "bad-event", "Event not deliverable", str(exc)) from exc
    if not trigger.subscribed(endpoint, document):
        raise ProblemError(
            409,
            "not-subscribed",
            "Endpoint not subscribed",
            f"endpoint {endpoint.get('id')} listens to {endpoint.get('enabled_events')}, not "
            f"to {document.get('type')!r}; send an event type the trigger node listens to",
        )
    payload = json.dumps(document, indent=2).encode()
    headers = trigger.headers(payload, endpoint, now)
    started = time.time()
    result: Document = {"endpoint": endpoint.get("id"), "url": url, "event": document.get("id")}
    try:
        async with httpx.AsyncClient(verify=_NO_TLS, trust_env=False, timeout=timeout_s) as client:
            response = await client.post(url, content=payload, headers=headers)
        result.update(status=response.status_code, detail=response.text[:2000])
    except httpx.HTTPError as exc:
        result.update(status=None, detail=f"{type(exc).__name__}: {exc}"[:300])
    result["seconds"] = round(time.time() - started, 3)
    return result
