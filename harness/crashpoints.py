"""Named crash points: WHEN a case's fault strikes, made deterministic with the provider's
barrier and Toxiproxy toxics, never with sleeps.

- before_send:     the worker's request to the provider is held in the proxy (dropped); the
                   fault strikes while the provider has received nothing.
- after_commit:    the provider committed and holds its response (barrier); the fault strikes,
                   then the response is released (into whatever is left of the caller).
- after_response:  the provider's response is let go while the worker's links to Postgres
                   (n8n's and the ledger's) are held; the fault strikes before n8n can write.
- in_ledger_write: as after_response, but only the ledger link is held: the workflow's own
                   ledger update is in flight when the fault strikes.
- none:            the fault is in place before the delivery (or is the delivery itself).
- after_completion / after_ttl: a late redelivery once the first delivery completed, or
                   once the provider forgot the idempotency key too.

Each point writes ``crashpoint.landed`` to the journal only when it holds the proof.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Protocol

from fake_providers.payment import CrashPoint as ProviderPoint
from harness.registry import Registry
from harness.runner import CaseRun
from harness.workload import Delivery

HOLD_S = 90.0  # how long the provider may hold a request at a barrier
REACH_S = 90.0  # how long a request may take to reach a barrier


class CrashPointDriver(Protocol):
    def drive(self, run: CaseRun) -> None: ...


CRASHPOINTS: Registry[CrashPointDriver] = Registry("crash point")
register = CRASHPOINTS.register
get_crashpoint = CRASHPOINTS.create
known_crashpoints = CRASHPOINTS.names


def _operator_retry_if_asked(run: CaseRun) -> None:
    """For operator_retry: once things settled, retry the failed execution via the API; if
    n8n's retry does not complete the work, the operator re-sends the event by hand."""
    if run.fault.delivery is not Delivery.OPERATOR_RETRY:
        return
    run.heal()
    run.settle()
    api = run.stack.api
    assert api is not None
    failed = [e for e in run.new_executions() if e["status"] in ("error", "crashed")]
    if failed:
        target = failed[0]["id"]
        try:
            retried = api.retry_execution(target)
            run.journal.record(
                "delivery.extra",
                "operator_retry",
                execution=target,
                new_execution=retried.get("id"),
            )
        except Exception as exc:  # a refusal is a finding, kept as evidence
            run.journal.record(
                "finding", "operator retry refused", execution=target, error=str(exc)[:300]
            )
        run.settle()
    retries = [e for e in run.new_executions() if e["mode"] == "retry"]
    if not any(e["status"] == "success" for e in retries):
        run.journal.record(
            "finding",
            "operator retry did not complete the work",
            retries=[(e["id"], e["status"]) for e in retries],
        )
        run.journal.record("delivery.extra", "operator redelivery by hand")
        run.sender(retry=True).deliver(run.body, delivery="operator")


@register("none")
class NoCrashPoint:
    def drive(self, run: CaseRun) -> None:
        run.fault.prepare(run.ctx)
        run.inject()
        sender = run.sender()
        if run.fault.delivery is Delivery.CONCURRENT:
            run.journal.record("delivery.extra", "concurrent", copies=5)
            sender.deliver_concurrently(run.body, copies=5)
        else:
            run.deliver()


@register("after_commit")
class AfterCommit:
    def drive(self, run: CaseRun) -> None:
        control = run.stack.require_provider().control
        barrier = control.arm_barrier(None, ProviderPoint.COMMITTED, HOLD_S, reference=run.key)
        run.fault.prepare(run.ctx)
        delivery = run.start_delivery()
        try:
            reached = barrier.wait_reached(REACH_S)
            run.journal.record(
                "crashpoint.reached",
                "after_commit",
                effect=reached.effect_id,
                provider_attempt=reached.attempt_id,
            )
            run.find_target(run.wait_running_execution())
            run.inject()
            # A timed fault (an outage) lasts while the response is held, so the response
            # is let go once it ended: one interleaving, every run.
            run.wait_timed_heal()
            run.journal.record(
                "crashpoint.landed",
                "after_commit",
                proof=f"fault struck while {reached.effect_id} was committed and its response held",
            )
        finally:
            barrier.release()
        run.finish(delivery)
        _operator_retry_if_asked(run)


@register("before_send")
class BeforeSend:
    TOXIC = "hold_send"

    def drive(self, run: CaseRun) -> None:
        proxies = run.stack.upstream_proxies("provider")
        for proxy in proxies:  # requests to the provider are swallowed, never delivered
            proxy.add_toxic("timeout", stream="upstream", name=self.TOXIC, timeout=0)
        run.fault.prepare(run.ctx)
        delivery = run.start_delivery()
        try:
            run.find_target(run.wait_running_execution())
            run.inject()
            seen = run.stack.require_provider().control.attempts(reference=run.key)
            if not seen:
                run.journal.record(
                    "crashpoint.landed",
                    "before_send",
                    proof="fault struck; the provider had received nothing",
                )
        finally:
            for proxy in proxies:
                proxy.remove_toxic(self.TOXIC)
        run.finish(delivery)
        _operator_retry_if_asked(run)


class _HeldWrite:
    """Let the provider's response go while the worker's writes are held, then strike."""

    TOXIC = "hold_write"
    point = "after_response"

    def held_links(self, run: CaseRun, worker: int) -> list[str]:
        return [f"worker{worker}_postgres", "ledger_postgres"]

    def drive(self, run: CaseRun) -> None:
        control = run.stack.require_provider().control
        committed = control.arm_barrier(None, ProviderPoint.COMMITTED, HOLD_S, reference=run.key)
        responded = control.arm_barrier(None, ProviderPoint.RESPONDED, HOLD_S, reference=run.key)
        run.fault.prepare(run.ctx)
        delivery = run.start_delivery()
        held = []
        try:
            committed.wait_reached(REACH_S)
            worker = run.find_target(run.wait_running_execution())
            held = [run.stack.proxies[name] for name in self.held_links(run, worker)]
            for proxy in held:
                proxy.add_toxic("timeout", stream="upstream", name=self.TOXIC, timeout=0)
            committed.release()
            reached = responded.wait_reached(REACH_S)
            state = run.ledger_state()
            run.inject()
            run.journal.record(
                "crashpoint.landed",
                self.point,
                proof=f"response of {reached.effect_id} handed over while "
                f"{[p.name for p in held]} were held; ledger state at "
                f"the strike: {state}",
            )
        finally:
            committed.release()
            for proxy in held:
                proxy.remove_toxic(self.TOXIC)
        run.finish(delivery)
        _operator_retry_if_asked(run)


@register("after_response")
class AfterResponse(_HeldWrite):
    pass


@register("in_ledger_write")
class InLedgerWrite(_HeldWrite):
    point = "in_ledger_write"

    def held_links(self, run: CaseRun, worker: int) -> list[str]:
        return ["ledger_postgres"]


@register("after_completion")
class AfterCompletion:
    expire_keys = False

    def drive(self, run: CaseRun) -> None:
        first = run.deliver()
        if first.outcome != "ok":
            return  # no completed first delivery: no proof, the oracle says NO-EVIDENCE
        provider = run.stack.require_provider()
        with provider.keys_expired() if self.expire_keys else nullcontext():
            run.journal.record("delivery.extra", "late_redelivery", keys_expired=self.expire_keys)
            run.journal.record(
                "crashpoint.landed",
                "after_completion",
                proof="redelivered after a 2xx" + (" and key expiry" if self.expire_keys else ""),
            )
            run.sender().deliver(run.body, delivery="d2")


@register("after_ttl")
class AfterTtl(AfterCompletion):
    expire_keys = True
