"""One side-effecting request from claim to response, shared by charges and emails.

    claim key -> [barrier received] -> [pre-commit fault] -> commit + store response
              -> [barrier committed] -> [post-commit fault] -> respond -> [barrier responded]

Requests that do not claim (409, 422, replay) are answered straight from the claim step.
The error answers are the bundled API's problem+json by default; an upstream fake passes its
own `PipelineAnswers` (Stripe's error shape). A request that is not an effect route
(`observed=False`) still claims and replays its key but meets no barrier and no fault, and
commits nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from starlette.background import BackgroundTask
from starlette.responses import Response

from .barriers import ReachedBy
from .connection import DroppedConnection
from .faults import FaultRule
from .kinds import CrashPoint, FaultKind, Outcome
from .problems import PROBLEM_MEDIA_TYPE, problem_body, problem_response
from .runtime import ProviderRuntime
from .store import (
    AttemptStart,
    ChargeRow,
    Claim,
    ClaimStatus,
    CommitRow,
    LedgerStore,
    ObjectRow,
    StoredResponse,
)

REPLAY_HEADER = "Idempotent-Replayed"
JSON_HEADERS = [("content-type", "application/json")]
_ERROR_AFTER_COMMIT = StoredResponse(
    500,
    [("content-type", PROBLEM_MEDIA_TYPE)],
    problem_body(
        500,
        "injected-error-after-commit",
        "Internal server error",
        "injected fault: commit_then_error",
    ),
)


@dataclass(frozen=True)
class EffectResult:
    """What processing produced: the response to store, and what (if anything) to commit."""

    effect_id: str
    response: StoredResponse
    commits: bool
    outcome: Outcome
    charge: ChargeRow | None = None
    objects: Sequence[ObjectRow] = ()  # state an upstream fake reads back later
    upsert: bool = False  # objects already stored are updated, and then nothing commits
    # An upsert's answer when every one of its objects is stored already (None: `response`).
    upserted: StoredResponse | None = None
    # A write that depends on what is stored (a unique key, a refund's charge): decided on the
    # database thread as the attempt settles, so two at once see each other's write. Returns
    # the result to settle (its objects and answer may change) or the service's refusal, and
    # then nothing is written or committed (PostgREST's 409, Stripe's charge_already_refunded).
    settle_check: SettleCheck | None = None


SettleCheck = Callable[[LedgerStore, EffectResult], "EffectResult | StoredResponse"]


def unique(answer: StoredResponse) -> SettleCheck:
    """A unique write: when one of its objects is stored already, `answer`."""

    def check(store: LedgerStore, result: EffectResult) -> EffectResult | StoredResponse:
        return answer if store.has_objects(result.objects) else result

    return check


def _problem(status: int, slug: str, title: str, detail: str) -> Any:
    """A default answer: this problem+json, a new response each time (one is sent once).
    It is a `field(...)`, which RUF009 cannot see through: hence the noqa where it is used."""
    return field(default=partial(problem_response, status, slug, title, detail))


@dataclass(frozen=True)
class PipelineAnswers:
    """The answers the pipeline itself gives (not the effect's own response)."""

    mismatch: Callable[[], Response] = _problem(  # noqa: RUF009
        422,
        "idempotency-key-mismatch",
        "Idempotency key reused",
        "this Idempotency-Key was used with a different request payload",
    )
    in_flight: Callable[[], Response] = _problem(  # noqa: RUF009
        409,
        "idempotency-key-in-flight",
        "Request in progress",
        "a request with this Idempotency-Key is still being processed; retry later",
    )
    error_before_commit: Callable[[], Response] = _problem(  # noqa: RUF009
        500, "injected-error", "Internal server error", "injected fault: error_before_commit"
    )
    # Retry-After is the fault's: the pipeline sets it on this answer, a service's own or not.
    rate_limited: Callable[[], Response] = _problem(  # noqa: RUF009
        429, "rate-limited", "Too many requests", "injected fault: rate_limited"
    )
    error_after_commit: StoredResponse = _ERROR_AFTER_COMMIT
    reset: Callable[[], Response] = _problem(  # noqa: RUF009
        503,
        "provider-reset",
        "Provider reset",
        "the provider was reset while this request was in flight",
    )


PROBLEM_ANSWERS = PipelineAnswers()


# Set while a fake serves a seed (``fakes.seeding``): set-up for a case, served unobserved.
SEEDING: ContextVar[bool] = ContextVar("seeding", default=False)


# Builds the effect (ids, response) once the attempt is processing; gets the current time.
EffectBuilder = Callable[[float], EffectResult]


def json_response(status: int, document: dict[str, Any]) -> StoredResponse:
    body = json.dumps(document, separators=(",", ":"), sort_keys=True).encode()
    return StoredResponse(status=status, headers=list(JSON_HEADERS), body=body)


def to_response(
    stored: StoredResponse, *, replayed: bool = False, background: BackgroundTask | None = None
) -> Response:
    headers = dict(stored.headers)
    if replayed:
        headers[REPLAY_HEADER] = "true"
    return Response(stored.body, status_code=stored.status, headers=headers, background=background)


class EffectPipeline:
    def __init__(
        self, runtime: ProviderRuntime, answers: PipelineAnswers = PROBLEM_ANSWERS
    ) -> None:
        self._runtime = runtime
        self._answers = answers
        # The attempt log keeps the status the sender got, whichever service answered.
        self._refusals = {
            ClaimStatus.MISMATCH: answers.mismatch().status_code,
            ClaimStatus.IN_PROGRESS: answers.in_flight().status_code,
        }

    async def run(
        self, start: AttemptStart, build: EffectBuilder, *, observed: bool = True
    ) -> Response:
        runtime = self._runtime
        observed = observed and not SEEDING.get()  # a seed is set-up, never the case's effect
        claim = await runtime.db(
            lambda store: store.begin_attempt(
                start, runtime.key_ttl_seconds, runtime.clock(), self._refusals
            )
        )
        if claim.status in (ClaimStatus.CLAIMED, ClaimStatus.NO_KEY):
            if not observed:
                return await self._process_unobserved(start, claim, build)
            return await self._process(start, claim, build)
        return self._answer_unclaimed(claim)

    async def _process_unobserved(
        self, start: AttemptStart, claim: Claim, build: EffectBuilder
    ) -> Response:
        runtime = self._runtime
        result = replace(build(runtime.clock()), commits=False, outcome=Outcome.PROCESSED)
        if SEEDING.get():  # state from long before the event: every search index has it
            objects = [replace(row, created_at=0.0) for row in result.objects]
            result = replace(result, outcome=Outcome.SEEDED, objects=objects)
        stored = result.response
        settled = await self._settle(start, claim, result, stored)
        if settled is None:
            return self._answers.reset()
        stored = settled[0]
        await self._finish(claim, None, stored.status)
        return to_response(stored)

    async def _process(self, start: AttemptStart, claim: Claim, build: EffectBuilder) -> Response:
        runtime = self._runtime
        reached_by = ReachedBy(claim.attempt_id, claim.attempt_no, start.key, start.reference)
        await runtime.barriers.reach(CrashPoint.RECEIVED, reached_by)
        fault = runtime.faults.take(start.effect, start.key, start.reference, claim.attempt_no)
        fault_kind = fault.kind if fault else None
        if fault is not None and not fault.kind.commits:
            early = await self._before_commit(start, claim, fault)
            if early is not None:
                return early
        result = build(runtime.clock())
        stored = result.response
        if fault_kind is FaultKind.COMMIT_THEN_ERROR:
            # Stripe stores a 500 after commit: retries replay it
            stored = self._answers.error_after_commit
        settled = await self._settle(start, claim, result, stored)
        if settled is None:
            return self._answers.reset()
        stored, refused = settled
        if refused:  # refused as it settled: no commit to hold or to fault after
            await self._finish(claim, None, stored.status)
            return to_response(stored)
        reached_by = replace(reached_by, effect_id=result.effect_id)
        await runtime.barriers.reach(CrashPoint.COMMITTED, reached_by)
        if fault is not None and fault.kind is FaultKind.COMMIT_THEN_HANG:
            await runtime.pause(fault.hang_ms / 1000)
        dropped = fault_kind in (FaultKind.COMMIT_THEN_CLOSE, FaultKind.COMMIT_THEN_RESET)
        await self._finish(claim, fault_kind, None if dropped else stored.status)
        if dropped:
            return DroppedConnection(reset=fault_kind is FaultKind.COMMIT_THEN_RESET)
        signal_responded = BackgroundTask(runtime.barriers.reach, CrashPoint.RESPONDED, reached_by)
        return to_response(stored, background=signal_responded)

    async def _settle(
        self, start: AttemptStart, claim: Claim, result: EffectResult, stored: StoredResponse
    ) -> tuple[StoredResponse, bool] | None:
        """The response as stored with the attempt's end, and whether the service refused it
        as it settled (None: a reset came first)."""
        now = self._runtime.clock()
        settle = partial(_settle, start=start, claim=claim, result=result, stored=stored, now=now)
        return await self._runtime.db(settle)

    async def _before_commit(
        self, start: AttemptStart, claim: Claim, fault: FaultRule
    ) -> Response | None:
        """Apply a pre-commit fault; a response means the attempt ends here with no commit."""
        runtime = self._runtime
        if fault.kind is FaultKind.DELAY_BEFORE_COMMIT:
            await runtime.pause(fault.delay_ms / 1000)
            return None
        if fault.kind is FaultKind.RATE_LIMITED:
            response = self._answers.rate_limited()
            response.headers["Retry-After"] = str(fault.retry_after_s)
        else:
            response = self._answers.error_before_commit()
        status = response.status_code
        await runtime.db(
            lambda store: store.release(
                claim.attempt_id,
                start.key,
                Outcome.FAULT_INJECTED,
                fault.kind.value,
                status,
                runtime.clock(),
            )
        )
        return response

    async def _finish(self, claim: Claim, fault: FaultKind | None, status: int | None) -> None:
        runtime = self._runtime
        await runtime.db(
            lambda store: store.finish_attempt(
                claim.attempt_id, None, fault.value if fault else None, status, runtime.clock()
            )
        )

    def _answer_unclaimed(self, claim: Claim) -> Response:
        if claim.status is ClaimStatus.DONE:
            assert claim.replay is not None
            return to_response(claim.replay, replayed=True)
        if claim.status is ClaimStatus.MISMATCH:
            return self._answers.mismatch()
        return self._answers.in_flight()


def _settle(
    store: LedgerStore,
    *,
    start: AttemptStart,
    claim: Claim,
    result: EffectResult,
    stored: StoredResponse,
    now: float,
) -> tuple[StoredResponse, bool] | None:
    """The answer settled and whether it is a refusal (None: a reset wiped the attempt). Runs
    on the one database thread, so a unique write's check and its insert are one step."""
    checked = result if result.settle_check is None else result.settle_check(store, result)
    detail = None
    if isinstance(checked, StoredResponse):
        stored, detail = checked, _refusal(checked)
        result = replace(result, commits=False, objects=(), outcome=Outcome.REJECTED_4XX)
    else:
        if stored is result.response:  # not a fault's own answer
            stored = checked.response
        result = checked
        if result.upserted is not None and store.has_all_objects(result.objects):
            stored = result.upserted
    commit = None
    if result.commits:
        commit = CommitRow(
            effect=start.effect,
            effect_id=result.effect_id,
            reference=start.reference,
            idempotency_key=start.key,
            fingerprint=start.fingerprint,
            attempt_id=claim.attempt_id,
            attempt_no=claim.attempt_no,
            committed_at=now,
        )
    settled = store.settle(
        claim.attempt_id,
        result.outcome,
        key=start.key,
        effect_id=result.effect_id,
        charge=result.charge,
        commit=commit,
        response=stored,
        now=now,
        objects=result.objects,
        upsert=result.upsert,
        detail=detail,
    )
    return (stored, detail is not None) if settled else None


def _refusal(answer: StoredResponse) -> str:
    """What a service's refusal says, for the attempt log: Stripe's error message, a problem's
    detail, else the body's start."""
    text = answer.body.decode("utf-8", "replace")
    try:
        body = json.loads(text)
    except ValueError:
        return text[:200]
    said = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(said, dict):
        code = said.get("code")
        code = code if isinstance(code, str) else None
        for name in ("message", "detail", "title"):
            if isinstance(word := said.get(name), str):
                return (f"{code}: {word}" if code else word)[:200]
        if code:
            return code
    return text[:200]
