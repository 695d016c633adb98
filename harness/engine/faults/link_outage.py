"""A network link (or a set of them) is down for a while: Toxiproxy proxies disabled, so
connections are refused and open ones are closed.

- redis_blip:   every n8n -> Redis link for 2 s; healed once every n8n process says it
                reconnected (held responses stay well inside the nodes' 10 s timeout);
                the answer may still be lost, so a naive workflow may pass or be caught;
- redis_outage: every n8n -> Redis link for 14 s, past n8n's 10 s threshold: n8n processes
                exit by design and the heal restarts them;
- postgres_cut: the target worker's and main's links to Postgres for 8 s; the answer may
                be lost: n8n's connection monitor (a ping every 2 s, a rebuild of the pool
                after 3 failures, retried with backoff) may or may not have its pool back when
                the held response is released just after the heal, so a naive workflow may
                pass or be caught (a CI run on 2.40.7 saw it pass once, three matrices caught it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

from harness.engine.faults.base import FaultContext, NoAction, register
from harness.stack.toxiproxy import Proxy


@dataclass
class LinkOutage(NoAction):
    links: Callable[[FaultContext], list[Proxy]]
    duration_s: float | None = None
    loses_answer: bool = True  # type: ignore[misc]  # per instance: a blip is ridden out
    may_lose_answer: bool = False  # type: ignore[misc]
    offers: ClassVar[frozenset[str]] = frozenset({"link_outage"})
    needs_window: ClassVar[frozenset[str]] = frozenset({"response_held"})
    # The heal returns only once every n8n process that lost its Redis link says it is
    # back: what happens next then happens on a reconnected stack, every run.
    awaits_redis: bool = False
    _log_marks: dict[str, int] = field(default_factory=dict)
    _down: list[str] = field(default_factory=list)
    _disabled: list[Proxy] = field(default_factory=list)  # what the heal must enable again

    def proof(self, ctx: FaultContext) -> str | None:
        del ctx
        return f"Toxiproxy reported {', '.join(self._down)} disabled" if self._down else None

    def inject(self, ctx: FaultContext) -> None:
        proxies = self.links(ctx)  # first: no target means nothing is touched
        self._log_marks = ctx.stack.log_marks()
        self._disabled.extend(proxies)
        for proxy in proxies:
            proxy.disable()
        # Toxiproxy's own word that the links are down, read back from its API.
        down = [p.name for p in proxies if not ctx.stack.toxiproxy.proxy(p.name).enabled]
        self._down.extend(down)
        ctx.journal.record(
            "fault.inject", self.name, links=[p.name for p in proxies], duration_s=self.duration_s
        )

    def heal(self, ctx: FaultContext) -> None:
        # What inject disabled, not a fresh lookup: a fault that never found its target
        # (its window never opened) has nothing to heal.
        for proxy in self._disabled:
            proxy.enable()
        self._disabled.clear()
        marks, self._log_marks = self._log_marks, {}
        revived = ctx.stack.revive(marks if self.awaits_redis else None)
        ctx.journal.record("fault.heal", self.name, restarted=revived)


def _redis_links(ctx: FaultContext) -> list[Proxy]:
    return [ctx.stack.link(p, "redis") for p in ctx.stack.n8n_processes]


def _postgres_links(ctx: FaultContext) -> list[Proxy]:
    worker = ctx.target()  # WindowNotOpened when no worker ran the execution
    return [
        ctx.stack.worker_upstream_proxy(worker, "postgres"),
        ctx.stack.link(ctx.stack.main, "postgres"),
    ]


register(
    "redis_blip",
    lambda: LinkOutage(
        _redis_links,
        2.0,
        loses_answer=False,
        # Work that ends while main resubscribes to Redis may never reach the caller (seen on
        # 2.40.7 even with the release held until every process reconnected).
        may_lose_answer=True,
        awaits_redis=True,
    ),
)
register("redis_outage", lambda: LinkOutage(_redis_links, 14.0))
register(
    "postgres_cut",
    lambda: LinkOutage(_postgres_links, 8.0, loses_answer=False, may_lose_answer=True),
)
