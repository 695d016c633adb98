"""The workflow's own execution timeout (``settings.executionTimeout``) runs out while its
node waits at the provider, after the effect committed: the worker cancels the execution
(its HTTP request aborted, the row ``canceled``), though the charge happened. Only a
workflow that sets a timeout runs it (capability ``execution_timeout``); held past the timeout
by ``MARGIN_S``, then the committed answer goes to a request n8n gave up on.

A timeout at or past the crash point's longest hold (9 s) cannot strike inside the window:
the node's own timeout or the release comes first, and the case says so (NO-EVIDENCE).

Proof, from n8n's own database: the case's execution row ended ``canceled`` at least the
timeout after it started.
"""

from __future__ import annotations

from harness.faults.base import FaultContext, NoAction, register

MARGIN_S = 1.5


@register("execution_timeout")
class ExecutionTimeout(NoAction):
    offers = frozenset({"n8n_limit"})
    needs_window = frozenset({"response_held"})
    needs = frozenset({"execution_timeout"})
    loses_answer = True

    def inject(self, ctx: FaultContext) -> None:
        timeout = ctx.execution_timeout_s or 0.0
        self.duration_s = timeout + MARGIN_S
        ctx.journal.record("fault.inject", self.name, execution_timeout_s=timeout)

    def proof(self, ctx: FaultContext) -> str | None:
        timeout = ctx.execution_timeout_s
        if timeout is None or not ctx.workflow_id:
            return None
        for row in ctx.stack.executions(ctx.workflow_id, ctx.reference):
            started, stopped = row.get("started_at"), row.get("stopped_at")
            if row.get("status") != "canceled" or started is None or stopped is None:
                continue
            if stopped - started >= timeout - 0.5:  # n8n's clock and Postgres' rounding
                return (
                    f"n8n's execution {row['id']} ended 'canceled' {stopped - started:.1f} s "
                    f"after it started (executionTimeout {timeout:.0f} s)"
                )
        return None
