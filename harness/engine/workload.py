"""Internal: The client side: deliveries of a business event to a webhook, each attempt recorded.

Every attempt ends as one of Jepsen's three outcomes:
- ok:   a 2xx was seen; the workflow says the effect is done;
- fail: a definite rejection (4xx other than 409/429): the effect did not and will not happen;
- info: anything else (timeout, reset, 409 in progress, 429, 5xx): it may or may not have
        happened. An ``info`` is never counted as a failure.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import httpx

from harness import loopback

Outcome = Literal["ok", "fail", "info"]


_RETRYABLE_4XX = (408, 409, 425, 429)


@dataclass(frozen=True)
class DeliveryAttempt:
    delivery: str  # which delivery of the event this attempt belongs to ("d1", "dup3", ...)
    number: int
    started_at: float
    ended_at: float
    outcome: Outcome
    status: int | None
    detail: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def classify(status: int | None) -> Outcome:
    if status is None:
        return "info"
    if 200 <= status < 300:
        return "ok"
    if 400 <= status < 500 and status not in _RETRYABLE_4XX:
        return "fail"
    return "info"


@dataclass
class History:
    """Every attempt of every delivery of one case, in completion order (thread-safe)."""

    attempts: list[DeliveryAttempt] = field(default_factory=list)
    # Called with each attempt as it ends (the runner appends it to the case's evidence on
    # disk at once, so a harness that dies mid-case still leaves the history).
    sink: Callable[[DeliveryAttempt], None] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, attempt: DeliveryAttempt) -> None:
        with self._lock:
            self.attempts.append(attempt)
            if self.sink is not None:
                self.sink(attempt)

    @property
    def acknowledged(self) -> bool:
        return any(a.outcome == "ok" for a in self.attempts)

    def to_json(self) -> list[dict[str, Any]]:
        return [a.to_json() for a in self.attempts]


@dataclass(frozen=True)
class SenderPolicy:
    """How the event's sender behaves, like a webhook provider: retry what is not definite."""

    attempt_timeout_s: float = 30.0
    max_attempts: int = 6
    backoff_s: float = 1.0  # the sender's own pacing between retries, doubled each time
    retry: bool = True


_NO_BODY_METHODS = ("GET", "HEAD")


def encoded_body(method: str, headers: Mapping[str, str], body: dict[str, Any]) -> dict[str, Any]:
    """httpx's arguments for the body, as the request's Content-Type says: JSON (the
    default), a multipart form (n8n's Form Trigger; each field a text part) or a urlencoded
    form. A GET or HEAD carries no body: its event is in the query string."""
    if method.upper() in _NO_BODY_METHODS:
        return {"headers": dict(headers)}
    content_type = next((v for k, v in headers.items() if k.lower() == "content-type"), "")
    fields = {k: v if isinstance(v, str) else json.dumps(v) for k, v in body.items()}
    if content_type.lower().startswith("multipart/form-data"):
        # httpx writes the Content-Type with its boundary: the manifest's value is dropped.
        rest = {k: v for k, v in headers.items() if k.lower() != "content-type"}
        return {"headers": rest, "files": {k: (None, v) for k, v in fields.items()}}
    if content_type.lower().startswith("application/x-www-form-urlencoded"):
        return {"headers": dict(headers), "data": fields}
    return {"headers": dict(headers), "json": body}


class Sender:
    def __init__(
        self,
        url: str,
        method: str,
        history: History,
        policy: SenderPolicy,
        headers: Mapping[str, str] | None = None,
        query: Mapping[str, str] | None = None,
    ) -> None:
        self.url = url
        self.method = method
        self.history = history
        self.policy = policy
        # The manifest's trigger headers and query string, already rendered for this case.
        self.headers = dict(headers or {})
        self.query = dict(query or {})

    def attempt(self, body: dict[str, Any], delivery: str, number: int) -> DeliveryAttempt:
        started = time.time()
        status: int | None = None
        try:
            response = loopback.request(
                self.method,
                self.url,
                # None, not {}: httpx replaces a URL's own query string (a resume URL's
                # signature) with an empty params dict.
                params=self.query or None,
                timeout=self.policy.attempt_timeout_s,
                **encoded_body(self.method, self.headers, body),
            )
            status = response.status_code
            detail = response.text[:2000]
        except httpx.HTTPError as exc:
            detail = f"{type(exc).__name__}: {exc}"[:300]
        result = DeliveryAttempt(
            delivery, number, started, time.time(), classify(status), status, detail
        )
        self.history.add(result)
        return result

    def deliver(
        self,
        body: dict[str, Any],
        delivery: str = "d1",
        before_retry: Callable[[DeliveryAttempt], None] | None = None,
    ) -> DeliveryAttempt:
        """Send until definite (ok/fail) or the attempts run out; returns the last attempt."""
        number = 1
        while True:
            last = self.attempt(body, delivery, number)
            if self.settled(last) or not self.policy.retry:
                return last
            if number >= self.policy.max_attempts:
                return last
            if before_retry is not None:
                before_retry(last)
            # The sender's retry pacing (part of the workload, not a sync).
            time.sleep(self.retry_wait_s(number))
            number += 1

    def settled(self, attempt: DeliveryAttempt) -> bool:
        """The sender stops once the answer is definite (ok or fail)."""
        return attempt.outcome != "info"

    def retry_wait_s(self, number: int) -> float:
        """The pause after attempt ``number`` failed: doubled each time, at most 8 s."""
        return float(min(self.policy.backoff_s * 2 ** (number - 1), 8.0))

    def deliver_concurrently(self, body: dict[str, Any], copies: int) -> list[DeliveryAttempt]:
        """``copies`` identical deliveries released together by a barrier, each retried."""
        gate = threading.Barrier(copies)
        results: list[DeliveryAttempt] = []
        lock = threading.Lock()

        def one(index: int) -> None:
            gate.wait(timeout=30)  # a barrier: all copies leave together
            last = self.deliver(body, delivery=f"dup{index + 1}")
            with lock:
                results.append(last)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(copies)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return results


class BackgroundDelivery:
    """Deliveries running in a thread, so the harness can act at a crash point meanwhile."""

    def __init__(self, send: Callable[[], object]) -> None:
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(send,), daemon=True)
        self._thread.start()

    def _run(self, send: Callable[[], object]) -> None:
        try:
            send()
        except BaseException as exc:  # reported by join(), never lost
            self.error = exc

    @property
    def done(self) -> bool:
        return not self._thread.is_alive()

    def join(self, timeout_s: float) -> bool:
        """Wait for the deliveries to end (True) or the deadline (False); re-raises their error."""
        self._thread.join(timeout=timeout_s)
        if self.error is not None:
            raise self.error
        return not self._thread.is_alive()
