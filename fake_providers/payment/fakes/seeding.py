"""Seeding: state a case needs before its event (the charge a refund workflow refunds), written
by the harness through the control API into an upstream's fake.

A seed is a request the fake serves as it serves the workflow's own (same routes, same
documents, a later read finds it), but as set-up: the pipeline serves it unobserved, so it is
never a commit and meets no fault or barrier. The object keeps an `id` the seed gives (a
Stripe charge's `ch_{key}`, a Pipedrive deal's number), so the trigger's body can name it.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.types import Message, Scope

from ..pipeline import SEEDING
from .inbound import nest_form

# Any test key opens the Stripe fake; a seed is the harness's own request, not the workflow's.
SEED_AUTHORIZATION = b"Bearer sk_test_n8n_chaos_seed"


def seed_request(host: str, method: str, path: str, body: dict[str, Any]) -> Request:
    """The seed as the request a fake's `handle` reads: JSON body, the upstream's Host. Keys
    written as a form's (Stripe's `metadata[order_id]`) nest as they do in a form."""
    if any("[" in key for key in body):
        body = nest_form(list(body.items()))
    raw = json.dumps(body).encode()
    scope: Scope = {
        "type": "http",
        "http_version": "1.1",
        "method": method.upper(),
        "scheme": "https",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", host.encode()),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(raw)).encode()),
            (b"authorization", SEED_AUTHORIZATION),
        ],
        "server": (host, 443),
        "client": ("127.0.0.1", 0),
    }
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": raw, "more_body": False}

    return Request(scope, receive)


def seeded_id(params: Any) -> Any:
    """The id a seed gives its object, as given (a number for a Pipedrive deal), or None: the
    fake makes ids as the service does otherwise."""
    if SEEDING.get() and isinstance(params, dict) and params.get("id") not in (None, ""):
        return params["id"]
    return None
