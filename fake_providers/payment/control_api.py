"""The control API, served on its own port so no fault proxy in front of the public port can
reach it. The harness drives it through `control.ProviderControl`."""

from __future__ import annotations

import json
import os
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..upstreams import UpstreamConfigError, upstreams_from_json, upstreams_to_json
from . import triggers
from .barriers import ArmedBarrier
from .fakes.router import seed as serve_seed
from .faults import FaultRule
from .kinds import CrashPoint, FaultKind
from .problems import ProblemError
from .runtime import ProviderRuntime
from .store import AttemptFilter, LedgerStore, Row
from .trigger_delivery import deliver, get_trigger

PREFIX = "/_control"


class TtlSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    seconds: float = Field(ge=0)


class FaultSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: FaultKind
    key: str | None = None
    reference_prefix: str | None = None
    # An `Effect`, or an upstream fake's effect kind ("payment_intent", "record", ...).
    effect: str | None = Field(default=None, min_length=1, max_length=100)
    # Attempt numbers the fault applies to; null means every attempt.
    attempts: list[Annotated[int, Field(ge=1)]] | None = [1]
    delay_ms: int = Field(default=0, ge=0)
    hang_ms: int = Field(default=30_000, ge=0)
    retry_after_s: int = Field(default=1, ge=0, le=3600)


class DeliverySpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    url: str = Field(min_length=1)  # the URL the trigger node registered
    event: dict[str, Any]
    timeout_s: float = Field(default=30.0, gt=0, le=600)


class SeedSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    host: str = Field(min_length=1)  # an upstream's host: its fake serves the seed
    method: str = Field(default="POST", pattern="^(POST|PUT|PATCH)$")
    path: str = Field(pattern="^/")
    body: dict[str, Any] = Field(default_factory=dict)


class BarrierSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    point: CrashPoint
    key: str | None = None
    reference: str | None = None
    hold_timeout_s: float = Field(default=30.0, gt=0)

    @model_validator(mode="after")
    def _needs_a_target(self) -> BarrierSpec:
        if self.key is None and self.reference is None:
            raise ValueError("arm a barrier for a key or a reference")
        return self


def build_control_router(runtime: ProviderRuntime) -> APIRouter:
    router = APIRouter()
    max_hold = runtime.config.max_hold_seconds

    def barrier_or_404(barrier_id: str) -> ArmedBarrier:
        barrier = runtime.barriers.get(barrier_id)
        if barrier is None:
            raise ProblemError(404, "no-such-barrier", "No such barrier", barrier_id[:255])
        return barrier

    @router.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok", "api": "control"}

    @router.get(PREFIX + "/health")
    async def control_health() -> dict[str, Any]:
        commits = await runtime.db(LedgerStore.commit_count)
        return {
            "status": "ok",
            "pid": os.getpid(),
            "db": str(runtime.config.db_path),
            "lenient": runtime.config.lenient,
            "key_ttl_seconds": runtime.key_ttl_seconds,
            "index_caught_up_at": runtime.index_caught_up_at,
            "commits": commits,
            "smtp_port": runtime.smtp_port,
        }

    @router.post(PREFIX + "/reset")
    async def reset() -> dict[str, str]:
        await runtime.reset()
        return {"status": "reset"}

    @router.get(PREFIX + "/ttl")
    async def get_ttl() -> dict[str, float]:
        return {"seconds": runtime.key_ttl_seconds}

    @router.put(PREFIX + "/ttl")
    async def set_ttl(spec: TtlSpec) -> dict[str, float]:
        runtime.key_ttl_seconds = spec.seconds
        return {"seconds": runtime.key_ttl_seconds}

    @router.post(PREFIX + "/index/catch-up")
    async def catch_up_index() -> dict[str, float]:
        return {"caught_up_at": runtime.catch_up_index()}

    @router.get(PREFIX + "/faults")
    async def list_faults() -> list[dict[str, Any]]:
        return [rule.to_json() for rule in runtime.faults.rules]

    @router.post(PREFIX + "/faults", status_code=201)
    async def add_fault(spec: FaultSpec) -> dict[str, Any]:
        rule = FaultRule(
            kind=spec.kind,
            key=spec.key,
            reference_prefix=spec.reference_prefix,
            effect=spec.effect,
            attempts=frozenset(spec.attempts) if spec.attempts is not None else None,
            delay_ms=spec.delay_ms,
            hang_ms=spec.hang_ms,
            retry_after_s=spec.retry_after_s,
        )
        return runtime.faults.add(rule).to_json()

    @router.delete(PREFIX + "/faults")
    async def clear_faults() -> dict[str, str]:
        runtime.faults.clear()
        return {"status": "cleared"}

    @router.delete(PREFIX + "/faults/{fault_id}")
    async def remove_fault(fault_id: str) -> dict[str, str]:
        if not runtime.faults.remove(fault_id):
            raise ProblemError(404, "no-such-fault", "No such fault", fault_id[:255])
        return {"status": "removed"}

    @router.post(PREFIX + "/barriers", status_code=201)
    async def arm_barrier(spec: BarrierSpec) -> dict[str, Any]:
        hold = min(spec.hold_timeout_s, max_hold)
        return runtime.barriers.arm(spec.point, spec.key, spec.reference, hold).to_json()

    @router.get(PREFIX + "/barriers/{barrier_id}")
    async def get_barrier(barrier_id: str) -> dict[str, Any]:
        return barrier_or_404(barrier_id).to_json()

    @router.post(PREFIX + "/barriers/{barrier_id}/wait")
    async def wait_barrier(
        barrier_id: str, timeout: Annotated[float, Query(gt=0)] = 30.0
    ) -> dict[str, Any]:
        """Long-poll: answers as soon as the barrier is reached, or after `timeout` seconds
        with the barrier still `armed`."""
        barrier = barrier_or_404(barrier_id)
        await runtime.barriers.wait_reached(barrier, min(timeout, max_hold))
        return barrier.to_json()

    @router.post(PREFIX + "/barriers/{barrier_id}/release")
    async def release_barrier(barrier_id: str) -> dict[str, Any]:
        barrier = barrier_or_404(barrier_id)
        runtime.barriers.release(barrier)
        return barrier.to_json()

    # Also served without the underscore: the shared design names it /control/upstreams.
    @router.put(PREFIX + "/upstreams")
    @router.put("/control/upstreams", include_in_schema=False)
    async def set_upstreams(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Replace the host -> fake map (a list of Upstream as JSON); not cleared by reset."""
        try:
            upstreams = upstreams_from_json(docs)
        except UpstreamConfigError as exc:
            raise ProblemError(400, "invalid-upstreams", "Invalid upstreams", str(exc)) from exc
        runtime.upstreams = {upstream.host: upstream for upstream in upstreams}
        return upstreams_to_json(upstreams)

    @router.get(PREFIX + "/upstreams")
    @router.get("/control/upstreams", include_in_schema=False)
    async def get_upstreams() -> list[dict[str, Any]]:
        return upstreams_to_json(list(runtime.upstreams.values()))

    @router.get(PREFIX + "/triggers/{name}/endpoints")
    async def trigger_endpoints(name: str) -> list[dict[str, Any]]:
        """The webhook endpoints n8n registered with a service trigger's fake."""
        return list(triggers.endpoints(runtime, get_trigger(name)).values())

    @router.post(PREFIX + "/triggers/{name}/deliveries")
    async def trigger_delivery(name: str, spec: DeliverySpec) -> dict[str, Any]:
        """One signed delivery attempt of an event to a registered endpoint, as the service
        sends it; answers its status (null: timeout or reset) and the start of its body."""
        trigger = get_trigger(name)
        return await deliver(runtime, trigger, spec.url, spec.event, spec.timeout_s)

    @router.post(PREFIX + "/seed")
    async def seed(spec: SeedSpec) -> dict[str, Any]:
        """State a case needs before its event, written as set-up (`fakes.seeding`): the
        fake's answer, its status and JSON body (a 4xx is the service's refusal, not ours)."""
        answer = await serve_seed(runtime, spec.host, spec.method, spec.path, spec.body)
        try:
            document = json.loads(bytes(answer.body))
        except ValueError:
            document = bytes(answer.body).decode("utf-8", "replace")
        return {"status": answer.status_code, "body": document}

    @router.get(PREFIX + "/commits")
    async def commits(
        reference: str | None = None, key: str | None = None, effect: str | None = None
    ) -> list[Row]:
        return await runtime.db(
            lambda store: store.commits(reference=reference, key=key, effect=effect)
        )

    @router.get(PREFIX + "/attempts")
    async def attempts(where: Annotated[AttemptFilter, Depends()]) -> list[Row]:
        return await runtime.db(lambda store: store.attempts(where))

    return router
