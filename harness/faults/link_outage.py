"""A network link (or a set of them) is down for a while: Toxiproxy proxies disabled, so
connections are refused and open ones are closed.

- redis_blip:   every n8n -> Redis link for 3 s (n8n reconnects);
- redis_outage: every n8n -> Redis link for 14 s, past n8n's 10 s threshold: n8n processes
                exit by design and the heal restarts them;
- postgres_cut: the target worker's and main's links to Postgres for 8 s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from harness.faults.base import FaultContext, NoAction, register
from harness.stack.toxiproxy import Proxy


@dataclass
class LinkOutage(NoAction):
    name: str
    links: Callable[[FaultContext], list[Proxy]]
    duration_s: float | None = None

    def inject(self, ctx: FaultContext) -> None:
        proxies = self.links(ctx)
        for proxy in proxies:
            proxy.disable()
        ctx.journal.record(
            "fault.inject", self.name, links=[p.name for p in proxies], duration_s=self.duration_s
        )

    def heal(self, ctx: FaultContext) -> None:
        for proxy in self.links(ctx):
            proxy.enable()
        revived = ctx.stack.revive()
        ctx.journal.record("fault.heal", self.name, restarted=revived)


def _redis_links(ctx: FaultContext) -> list[Proxy]:
    return [p for name, p in ctx.stack.proxies.items() if name.endswith("_redis")]


def _postgres_links(ctx: FaultContext) -> list[Proxy]:
    return [ctx.stack.proxies[f"worker{ctx.target()}_postgres"], ctx.stack.proxies["main_postgres"]]


register("redis_blip")(lambda: LinkOutage("redis_blip", _redis_links, 3.0))
register("redis_outage")(lambda: LinkOutage("redis_outage", _redis_links, 14.0))
register("postgres_cut")(lambda: LinkOutage("postgres_cut", _postgres_links, 8.0))
