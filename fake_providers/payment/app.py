"""Building the two ASGI apps of one provider: public (charges, emails) and control."""

from __future__ import annotations

import time
from dataclasses import dataclass

from fastapi import FastAPI

from .config import ProviderConfig
from .control_api import build_control_router
from .fakes.router import UpstreamHostRouter
from .problems import install_problem_handlers
from .public_api import build_public_router
from .runtime import Clock, ProviderRuntime


@dataclass(frozen=True)
class ProviderApp:
    """The public and control apps sharing one runtime (ledger, fault plan, barriers)."""

    public: FastAPI
    control: FastAPI
    runtime: ProviderRuntime

    def close(self) -> None:
        self.runtime.close()


def create_app(config: ProviderConfig, *, clock: Clock = time.time) -> ProviderApp:
    """Open the ledger at `config.db_path` and build both apps; call `close()` when done.

    In-process use (tests): drive `public`/`control` with `httpx.ASGITransport`. All requests
    must then run on one event loop, as they do under the real server.
    """
    runtime = ProviderRuntime(config, clock)
    public = FastAPI(
        title="n8n-chaos fake payment provider",
        version="1.0",
        description="Stripe/IETF-style idempotent charges, plus a non-idempotent email endpoint.",
    )
    public.include_router(build_public_router(runtime))
    # Hosts configured as upstreams (api.stripe.com, ...) go to their fake, others come here.
    public.add_middleware(UpstreamHostRouter, runtime=runtime)
    install_problem_handlers(public)
    control = FastAPI(title="n8n-chaos fake payment provider: control API", version="1.0")
    control.include_router(build_control_router(runtime))
    install_problem_handlers(control)
    return ProviderApp(public=public, control=control, runtime=runtime)
