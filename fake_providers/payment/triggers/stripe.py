"""The Stripe Trigger (n8n-nodes-base.stripeTrigger) against the `stripe` fake.

Registration, as the node's webhookMethods call it on activation (StripeTrigger.node.ts,
stripeApiRequest: form-encoded, ``https://api.stripe.com/v1`` + endpoint, Bearer secret key):
- checkExists: ``GET /v1/webhook_endpoints/{id}`` (404 ``resource_missing`` -> create);
- create: ``POST /v1/webhook_endpoints`` with url, description, enabled_events[] (and
  api_version); the node stores ``id``, ``enabled_events`` and ``secret`` and fails unless the
  answer has both and ``status`` is ``enabled``;
- delete: ``DELETE /v1/webhook_endpoints/{id}`` on deactivation. ``GET /v1/webhook_endpoints``
  lists (newest first; the secret is shown only on creation, as Stripe does).

Delivery, as Stripe sends it: the event JSON with ``Stripe-Signature: t=<unix>,v1=<hex
HMAC-SHA256("<t>.<payload>", endpoint secret)>``, which the node verifies with the stored secret
(StripeTriggerHelpers.verifySignature; 401 when it does not match). Stripe publishes its retry
schedule only as "exponential backoff for up to three days" (live mode): modelled as waits of
1, 2, 4, 8, 16 and 32 hours (63 h, 7 attempts), compressed one hour to half a second.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import TYPE_CHECKING, Any, ClassVar

from . import Document, UndeliverableEvent, endpoints, register

if TYPE_CHECKING:
    from starlette.responses import Response

    from ...upstreams import Upstream
    from ..fakes.inbound import UpstreamRequest
    from ..runtime import ProviderRuntime

PATH = "/v1/webhook_endpoints"
HOUR_S = 0.5  # one hour of Stripe's schedule, compressed
RETRY_HOURS = (1, 2, 4, 8, 16, 32)
API_VERSION = "2024-06-20"


def signature_header(payload: bytes, secret: str, timestamp: int) -> str:
    """Stripe's ``Stripe-Signature`` value for ``payload`` signed at ``timestamp``."""
    signed = f"{timestamp}.".encode() + payload
    digest = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"


@register
class StripeTrigger:
    name: ClassVar[str] = "stripe"
    node_type: ClassVar[str] = "n8n-nodes-base.stripeTrigger"
    fake: ClassVar[str] = "stripe"
    retry_delays_s: ClassVar[tuple[float, ...]] = tuple(hours * HOUR_S for hours in RETRY_HOURS)

    def owns(self, path: str) -> bool:
        return path == PATH or path.startswith(PATH + "/")

    async def register(
        self, inbound: UpstreamRequest, upstream: Upstream, runtime: ProviderRuntime
    ) -> Response:
        del upstream
        from ..fakes.stripe_errors import StripeError  # the server stack, loaded by the server

        try:
            return self._answer(inbound, runtime)
        except StripeError as error:
            return error.to_response()

    def _answer(self, inbound: UpstreamRequest, runtime: ProviderRuntime) -> Response:
        from starlette.responses import JSONResponse

        from ..fakes.stripe_errors import check_api_key, missing_object
        from ..fakes.stripe_objects import not_found_url

        check_api_key(inbound.headers.get("authorization"))
        known = endpoints(runtime, self)
        rest = inbound.path[len(PATH) :].strip("/")
        method = inbound.method
        if not rest and method == "GET":
            listed = [_public(doc) for doc in reversed(known.values())]
            return JSONResponse({"object": "list", "data": listed, "has_more": False, "url": PATH})
        if not rest and method == "POST":
            document = self._create(inbound.params, runtime.clock())
            known[document["id"]] = document
            return JSONResponse(document)
        if rest and "/" not in rest and method in ("GET", "DELETE"):
            if rest not in known:
                raise missing_object("webhook_endpoint", rest)
            if method == "GET":
                return JSONResponse(_public(known[rest]))
            del known[rest]
            return JSONResponse({"id": rest, "object": "webhook_endpoint", "deleted": True})
        raise not_found_url(method, inbound.path)

    def _create(self, params: Any, now: float) -> Document:
        from ..fakes.stripe_errors import invalid_request

        params = params if isinstance(params, dict) else {}
        url = params.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise invalid_request("parameter_missing", "Missing required param: url.", param="url")
        events = params.get("enabled_events")
        events = [events] if isinstance(events, str) else events
        if not isinstance(events, list) or not events:
            raise invalid_request(
                "parameter_missing",
                "Missing required param: enabled_events.",
                param="enabled_events",
            )
        return {
            "id": f"we_{secrets.token_hex(12)}",
            "object": "webhook_endpoint",
            "api_version": params.get("api_version") or None,
            "application": None,
            "created": int(now),
            "description": params.get("description"),
            "enabled_events": [str(e) for e in events],
            "livemode": False,
            "metadata": {},
            "secret": f"whsec_{secrets.token_hex(16)}",
            "status": "enabled",
            "url": url,
        }

    def envelope(self, event: Document, now: float) -> Document:
        if not event.get("id") or not event.get("type"):
            raise UndeliverableEvent(
                "a Stripe event needs an 'id' (evt_...) and a 'type'; set both in the "
                "manifest's trigger.body"
            )
        return {
            "object": "event",
            "api_version": API_VERSION,
            "created": int(now),
            "livemode": False,
            "pending_webhooks": 1,
            "request": {"id": None, "idempotency_key": None},
            **event,
        }

    def subscribed(self, endpoint: Document, event: Document) -> bool:
        listened = endpoint.get("enabled_events") or []
        return "*" in listened or event.get("type") in listened

    def headers(self, payload: bytes, endpoint: Document, now: float) -> dict[str, str]:
        return {
            "Content-Type": "application/json; charset=utf-8",
            "User-Agent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)",
            "Stripe-Signature": signature_header(payload, str(endpoint["secret"]), int(now)),
        }


def _public(document: Document) -> Document:
    """A listed or retrieved endpoint: Stripe shows its secret only on creation."""
    return {k: v for k, v in document.items() if k != "secret"}
