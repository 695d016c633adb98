"""The provider's response is lost on the way back (Toxiproxy ``limit_data`` downstream on
every worker's link to the provider): the provider committed, n8n sees a dropped connection."""

from __future__ import annotations

from harness.faults.base import FaultContext, NoAction, register
from harness.stack.toxiproxy import ToxiproxyNotFound

TOXIC = "response_drop"


@register("response_drop")
class ResponseDrop(NoAction):
    name = "response_drop"

    def prepare(self, ctx: FaultContext) -> None:
        for proxy in ctx.stack.upstream_proxies("provider"):
            proxy.add_toxic("limit_data", stream="downstream", name=TOXIC, bytes=0)
        ctx.journal.record("fault.inject", self.name, toxic="limit_data bytes=0 downstream")

    def heal(self, ctx: FaultContext) -> None:
        for proxy in ctx.stack.upstream_proxies("provider"):
            try:
                proxy.remove_toxic(TOXIC)
            except ToxiproxyNotFound:
                continue
            ctx.journal.record("fault.heal", self.name, proxy=proxy.name)

    def proof(self, ctx: FaultContext) -> str | None:
        # Landed if the provider committed while the toxic was in place.
        start = next((e.at for e in ctx.journal.entries if e.kind == "fault.inject"), None)
        heal = next((e.at for e in ctx.journal.entries if e.kind == "fault.heal"), None)
        control = ctx.stack.require_provider().control
        for commit in control.commits(reference=ctx.reference):
            if (
                start is not None
                and commit.committed_at >= start
                and (heal is None or commit.committed_at <= heal)
            ):
                return f"commit {commit.effect_id} at {commit.committed_at:.3f} under the toxic"
        return None
