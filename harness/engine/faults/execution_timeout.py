"""The workflow's execution timeout (its own ``settings.executionTimeout``, else n8n's
instance default ``EXECUTIONS_TIMEOUT`` from its manifest's ``env``) runs out while its
node waits at the provider, after the effect committed: the worker cancels the execution
(its HTTP request aborted, the row ``canceled``), though the charge happened. Only a
workflow that sets a timeout of at most ``STRIKABLE_S`` runs it (capability
``execution_timeout``); held past the timeout by ``MARGIN_S``, then the committed answer goes
to a request n8n gave up on. A longer timeout cannot strike inside the window: the crash
point lets the answer go 9 s into a hold (the nodes' own 10 s timeout would come first), so
such a workflow does not get the case rather than get a harness error.

Proof, from n8n's own database: the case's execution row ended ``canceled`` at least the
timeout after it started.
"""

from __future__ import annotations

from harness.engine.faults.base import FaultContext, NoAction, register

MARGIN_S = 1.5
STRIKABLE_S = 7.0  # + MARGIN_S stays inside after_commit's longest hold (RELEASE_AFTER_S)


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
