"""before_send: the worker's requests to the provider are swallowed by a toxic (held in the
proxy, never delivered); the fault strikes while the execution runs and the provider has
received nothing. Proof: n8n's execution row says running, the provider's attempt log has
no request for the key, both read at the strike."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.crashpoints.base import REACH_S, Window, register

if TYPE_CHECKING:
    from harness.case_run import CaseRun
    from harness.workload import BackgroundDelivery

TOXIC = "hold_send"


@register("before_send")
class BeforeSend(Window):
    name = "before_send"
    after_effect = False

    def arm(self, run: CaseRun) -> None:
        for proxy in run.stack.upstream_proxies("provider"):
            proxy.add_toxic("timeout", stream="upstream", name=TOXIC, timeout=0)

    def strike(self, run: CaseRun, delivery: BackgroundDelivery) -> None:
        execution = run.wait_running_execution(REACH_S, lambda: run.work_over(delivery))
        if execution is None or run.find_target(execution) is None:
            return
        control = run.stack.require_provider().control
        row = next((e for e in run.executions() if e["id"] == execution), None)
        if control.attempts(reference=run.key) or row is None or row["status"] != "running":
            return  # the request got through, or the execution ended: not this window
        run.inject()
        if not control.attempts(reference=run.key):
            self.fact = (
                f"execution {execution} was running in n8n's database and the provider had "
                "received no request for the key, before and after the strike"
            )

    def disarm(self, run: CaseRun) -> None:
        for proxy in run.stack.upstream_proxies("provider"):
            if any(t.name == TOXIC for t in proxy.toxics()):
                proxy.remove_toxic(TOXIC)
