"""Typed, synchronous client for the provider's control API (httpx).

    control = ProviderControl("http://127.0.0.1:<control_port>")
    control.reset()
    control.add_fault(FaultKind.COMMIT_THEN_CLOSE, key="k-1")
    barrier = control.arm_barrier("k-1", CrashPoint.COMMITTED, hold_timeout=30)
    ...                               # the workflow sends its request
    info = barrier.wait_reached(10)   # returns as soon as the request is held (long-poll)
    barrier.release()
    assert len(control.commits(reference="order-1")) == 1

Every failure raises a `ProviderControlError` subclass.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeVar

import httpx

from ..errors import FakeProviderError
from ..upstreams import Upstream, upstreams_from_json, upstreams_to_json
from .kinds import BarrierState, CommitRow, CrashPoint, Effect, FaultKind, Outcome

NameT = TypeVar("NameT", bound=StrEnum)

# Long-polls answer on their own deadline; the HTTP timeout only needs to outlast it.
_LONG_POLL_SLACK_SECONDS = 5.0


class ProviderControlError(FakeProviderError):
    """Base of every error the control client raises."""


class ProviderUnreachable(ProviderControlError):
    """No HTTP answer from the control port (refused, reset, timed out)."""


class ControlRequestRejected(ProviderControlError):
    """The control API answered with a non-2xx status."""

    def __init__(self, status_code: int, problem: Any) -> None:
        super().__init__(f"control API answered {status_code}: {problem}")
        self.status_code = status_code
        self.problem = problem


class InvalidControlArgument(ProviderControlError, ValueError):
    """An argument the client can reject before sending (unknown fault kind, crash point...)."""


class BarrierNotReached(ProviderControlError):
    """No request reached the barrier before the wait timed out."""

    def __init__(self, barrier_id: str, timeout: float) -> None:
        super().__init__(f"barrier {barrier_id} not reached within {timeout} s")
        self.barrier_id = barrier_id
        self.timeout = timeout


@dataclass(frozen=True)
class Commit(CommitRow):
    """One committed side effect and its place in the ledger (`seq`). Commits per `reference`
    is the number the oracle checks; `effect_id` is the charge id (ch_...), email id (em_...)."""

    effect: Effect | str  # an Effect, or an upstream fake's kind ("payment_intent", "record")
    seq: int

    @property
    def charge_id(self) -> str | None:
        return self.effect_id if self.effect == Effect.CHARGE else None

    @classmethod
    def from_json(cls, row: dict[str, Any]) -> Commit:
        return cls(**{**row, "effect": effect_kind(row["effect"])})


@dataclass(frozen=True)
class Attempt:
    """One request to a side-effecting endpoint, whatever became of it."""

    id: int
    effect: Effect | str
    idempotency_key: str | None
    reference: str | None
    fingerprint: str | None
    attempt_no: int | None  # None: rejected before it had a key/reference
    outcome: Outcome
    fault: FaultKind | None
    http_status: int | None  # None: no response was sent (dropped, or still open)
    effect_id: str | None
    detail: str | None
    received_at: float
    finished_at: float | None
    preview: str | None = None  # an upstream fake's masked body preview
    reference_note: str | None = None  # where the reference was read; if empty, what was there

    @property
    def duration_s(self) -> float | None:
        return None if self.finished_at is None else self.finished_at - self.received_at

    @classmethod
    def from_json(cls, row: dict[str, Any]) -> Attempt:
        fault = row["fault"]
        return cls(
            **{
                **row,
                "effect": effect_kind(row["effect"]),
                "outcome": Outcome(row["outcome"]),
                "fault": FaultKind(fault) if fault else None,
            }
        )


@dataclass(frozen=True)
class Fault:
    id: str
    kind: FaultKind
    key: str | None
    reference_prefix: str | None
    effect: Effect | str | None
    attempts: tuple[int, ...] | None
    delay_ms: int
    hang_ms: int
    retry_after_s: int
    hits: int  # how many attempts got this fault: proof that it landed

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Fault:
        attempts = doc["attempts"]
        return cls(
            **{
                **doc,
                "kind": FaultKind(doc["kind"]),
                "effect": effect_kind(doc["effect"]) if doc["effect"] else None,
                "attempts": tuple(attempts) if attempts is not None else None,
            }
        )


@dataclass(frozen=True)
class BarrierInfo:
    id: str
    point: CrashPoint
    key: str | None
    reference: str | None
    hold_timeout_s: float
    state: BarrierState
    armed_at: float
    reached_at: float | None
    ended_at: float | None  # when the hold ended (released, expired) or the signal passed
    attempt_id: int | None  # the attempt that reached the barrier
    attempt_no: int | None
    reached_key: str | None
    reached_reference: str | None
    effect_id: str | None  # set from `committed` on: the charge/email id that was committed

    @property
    def reached(self) -> bool:
        return self.reached_at is not None

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> BarrierInfo:
        return cls(
            **{
                **doc,
                "point": CrashPoint(doc["point"]),
                "state": BarrierState(doc["state"]),
            }
        )


class Barrier:
    """An armed crash-point barrier; see `ProviderControl.arm_barrier`."""

    def __init__(self, control: ProviderControl, info: BarrierInfo) -> None:
        self._control = control
        self.id = info.id
        self.point = info.point

    def wait_reached(self, timeout: float) -> BarrierInfo:
        """Block until a request reaches the barrier (long-poll, no polling loop).

        Raises BarrierNotReached after `timeout` seconds."""
        doc = self._control._call(
            "POST",
            f"/_control/barriers/{self.id}/wait",
            params={"timeout": timeout},
            timeout=timeout + _LONG_POLL_SLACK_SECONDS,
        )
        info = BarrierInfo.from_json(doc)
        if not info.reached:
            raise BarrierNotReached(self.id, timeout)
        return info

    def release(self) -> BarrierInfo:
        """Let the held request go on. Releasing first makes a later arrival pass unheld."""
        return BarrierInfo.from_json(
            self._control._call("POST", f"/_control/barriers/{self.id}/release")
        )

    def info(self) -> BarrierInfo:
        return BarrierInfo.from_json(self._control._call("GET", f"/_control/barriers/{self.id}"))


class ProviderControl:
    """Client for one provider's control port. Use as a context manager, or call `close()`."""

    def __init__(self, base_url: str, *, timeout: float = 10.0) -> None:
        # Loopback, plain HTTP: no TLS set-up, no proxy from the environment. Idle connections
        # go after 1 s, well before the server's 5 s keep-alive ends them: reusing one as the
        # server closes it fails with "Server disconnected without sending a response".
        self._http = httpx.Client(
            base_url=base_url,
            timeout=timeout,
            verify=False,
            trust_env=False,
            limits=httpx.Limits(keepalive_expiry=1.0),
        )

    def __enter__(self) -> ProviderControl:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def health(self) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", "/_control/health")
        return result

    def reset(self) -> None:
        """Forget everything: ledger, attempts, keys, faults, barriers; TTL back to the default.
        Requests held at that moment are let go and commit nothing (they answer 503)."""
        self._call("POST", "/_control/reset")

    def set_ttl(self, seconds: float) -> None:
        """Set the key lifetime. Applies at once to stored keys too: completed keys older than
        `seconds` are treated as expired (0 expires every completed key)."""
        self._call("PUT", "/_control/ttl", json={"seconds": seconds})

    def catch_up_index(self) -> float:
        """Every record stored so far becomes searchable, as it is a day later: a service's
        search sees a new record only after its index lag (Stripe's, HubSpot's, Zendesk's).
        Returns the provider's time of the catch-up."""
        return float(self._call("POST", "/_control/index/catch-up")["caught_up_at"])

    def add_fault(
        self,
        kind: FaultKind | str,
        *,
        key: str | None = None,
        reference_prefix: str | None = None,
        effect: Effect | str | None = None,
        attempts: Iterable[int] | None = (1,),
        delay_ms: int = 0,
        hang_ms: int = 30_000,
        retry_after_s: int = 1,
    ) -> Fault:
        """Add a rule to the fault plan (semantics in `fake_providers.payment.faults`).

        With neither `key` nor `reference_prefix` the rule matches any request. `attempts`
        are 1-based attempt numbers per key (or per reference without a key); None means all.
        """
        spec = {
            "kind": _name(FaultKind, kind),
            "key": key,
            "reference_prefix": reference_prefix,
            "effect": str(effect) if effect else None,
            "attempts": sorted(attempts) if attempts is not None else None,
            "delay_ms": delay_ms,
            "hang_ms": hang_ms,
            "retry_after_s": retry_after_s,
        }
        return Fault.from_json(self._call("POST", "/_control/faults", json=spec))

    def faults(self) -> list[Fault]:
        return [Fault.from_json(doc) for doc in self._call("GET", "/_control/faults")]

    def clear_faults(self) -> None:
        self._call("DELETE", "/_control/faults")

    def remove_fault(self, fault_id: str) -> None:
        """Remove one rule of the plan; ControlRequestRejected (404) if it is gone."""
        self._call("DELETE", f"/_control/faults/{fault_id}")

    def arm_barrier(
        self,
        key: str | None,
        point: CrashPoint | str,
        hold_timeout: float = 30.0,
        *,
        reference: str | None = None,
    ) -> Barrier:
        """Arm a one-shot barrier for the next request with `key` (or `reference`, for requests
        without a key) that reaches `point`. At `received`/`committed` that request is held
        until `release()` or for `hold_timeout` seconds; `responded` only signals."""
        spec = {
            "point": _name(CrashPoint, point),
            "key": key,
            "reference": reference,
            "hold_timeout_s": hold_timeout,
        }
        info = BarrierInfo.from_json(self._call("POST", "/_control/barriers", json=spec))
        return Barrier(self, info)

    def set_upstreams(self, upstreams: Iterable[Upstream]) -> list[Upstream]:
        """Replace the host -> fake map (ControlRequestRejected 400 names a bad field).
        Kept across `reset()`; an empty list routes every host to the bundled JSON API."""
        docs = self._call("PUT", "/_control/upstreams", json=upstreams_to_json(list(upstreams)))
        return upstreams_from_json(docs)

    def upstreams(self) -> list[Upstream]:
        return upstreams_from_json(self._call("GET", "/_control/upstreams"))

    def seed(self, host: str, method: str, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        """Write state a case needs into the fake of ``host`` as set-up (never a commit, never
        faulted); the fake's answer: (status, JSON body). ControlRequestRejected 400: no such
        upstream."""
        spec = {"host": host, "method": method, "path": path, "body": body}
        answer = self._call("POST", "/_control/seed", json=spec)
        return int(answer["status"]), answer["body"]

    def trigger_endpoints(self, trigger: str) -> list[dict[str, Any]]:
        """The webhook endpoints n8n registered with service trigger ``trigger``."""
        result: list[dict[str, Any]] = self._call("GET", f"/_control/triggers/{trigger}/endpoints")
        return result

    def deliver_event(
        self, trigger: str, url: str, event: dict[str, Any], timeout_s: float
    ) -> dict[str, Any]:
        """One signed delivery attempt of ``event`` by the fake to the endpoint registered for
        ``url``: ``status`` (None: timeout or reset) and ``detail``. ControlRequestRejected
        (404) when nothing is registered for ``url``."""
        result: dict[str, Any] = self._call(
            "POST",
            f"/_control/triggers/{trigger}/deliveries",
            json={"url": url, "event": event, "timeout_s": timeout_s},
            timeout=timeout_s + 10.0,
        )
        return result

    def commits(
        self,
        reference: str | None = None,
        *,
        key: str | None = None,
        effect: Effect | str | None = None,
    ) -> list[Commit]:
        params = _params(reference=reference, key=key, effect=effect)
        return [
            Commit.from_json(row) for row in self._call("GET", "/_control/commits", params=params)
        ]

    def attempts(
        self,
        reference: str | None = None,
        *,
        key: str | None = None,
        outcome: Outcome | str | None = None,
        effect: Effect | str | None = None,
        since: float | None = None,
    ) -> list[Attempt]:
        """``since``: only attempts received at or after this time (epoch seconds)."""
        params = _params(reference=reference, key=key, outcome=outcome, effect=effect, since=since)
        return [
            Attempt.from_json(row) for row in self._call("GET", "/_control/attempts", params=params)
        ]

    def _call(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        timeout: float | None = None,
    ) -> Any:
        extra: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
        try:
            response = self._http.request(method, path, json=json, params=params, **extra)
        except httpx.TransportError as exc:
            raise ProviderUnreachable(f"{method} {path}: {exc!r}") from exc
        if response.status_code >= 300:
            try:
                problem: Any = response.json()
            except ValueError:
                problem = response.text
            raise ControlRequestRejected(response.status_code, problem)
        try:
            return response.json()
        except ValueError as exc:
            raise ProviderControlError(f"{method} {path}: answer is not JSON") from exc


def effect_kind(value: str) -> Effect | str:
    """The bundled API's effects as `Effect`; an upstream fake's kinds stay plain strings."""
    try:
        return Effect(value)
    except ValueError:
        return value


def _name(kind: type[NameT], value: NameT | str) -> str:
    try:
        return kind(value).value
    except ValueError as exc:
        known = ", ".join(member.value for member in kind)
        raise InvalidControlArgument(f"{value!r} is not a {kind.__name__} ({known})") from exc


def _params(**filters: str | float | None) -> dict[str, str]:
    return {name: str(value) for name, value in filters.items() if value is not None}
