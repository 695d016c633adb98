"""Service triggers: a service's own webhook registration and event delivery, one module each.

An n8n trigger node such as the Stripe Trigger registers a webhook with its service when the
workflow is activated (webhookMethods.checkExists/create, in n8n's main process) and removes it
when the workflow is deactivated. A personality here answers that registration on its fake's
host (the same Host-routed public port as the fake) and later delivers events to the URL n8n
registered, the way the service does: signed with the endpoint's secret, one attempt per
control call (the harness's delivery plans decide when to send again; ``retry_delays_s`` is the
service's own backoff, compressed in time). Another service trigger is one more module here,
registered with ``@register``.

The harness imports this package (node types, names, backoff) without the server stack: a
personality imports starlette and the fakes inside the methods the server calls. The delivery
itself is ``fake_providers.payment.trigger_delivery``.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from fake_providers.errors import FakeProviderError

if TYPE_CHECKING:
    from starlette.responses import Response

    from ...upstreams import Upstream
    from ..fakes.inbound import UpstreamRequest
    from ..runtime import ProviderRuntime

Document = dict[str, Any]


class UndeliverableEvent(FakeProviderError, ValueError):
    """The harness's event lacks what the service's deliveries carry (the message says what)."""


class ServiceTrigger(Protocol):
    name: ClassVar[str]  # the registry name, also the control API's path segment
    node_type: ClassVar[str]  # the n8n node type it serves, e.g. n8n-nodes-base.stripeTrigger
    fake: ClassVar[str]  # the fake whose host the node registers with ("stripe")
    retry_delays_s: ClassVar[tuple[float, ...]]  # the service's backoff, compressed

    def owns(self, path: str) -> bool:
        """True for the registration API's paths on the fake's host."""
        ...

    async def register(
        self, inbound: UpstreamRequest, upstream: Upstream, runtime: ProviderRuntime
    ) -> Response:
        """Answer one registration request (create, list, retrieve, delete)."""
        ...

    def envelope(self, event: Document, now: float) -> Document:
        """The event as the service sends it (the harness's body, completed);
        UndeliverableEvent names what the body lacks."""
        ...

    def subscribed(self, endpoint: Document, event: Document) -> bool: ...

    def headers(self, payload: bytes, endpoint: Document, now: float) -> dict[str, str]:
        """The delivery's headers, its signature among them."""
        ...


TRIGGERS: dict[str, ServiceTrigger] = {}


def register(cls: type[ServiceTrigger]) -> type[ServiceTrigger]:
    TRIGGERS[cls.name] = cls()
    return cls


def endpoints(runtime: ProviderRuntime, trigger: ServiceTrigger) -> dict[str, Document]:
    """The endpoints n8n registered for ``trigger``, by id (kept across the provider's reset:
    a registration lives as long as the workflow stays active)."""
    return runtime.trigger_endpoints.setdefault(trigger.name, {})


def _load_personalities() -> None:
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")  # each registers itself


_load_personalities()
