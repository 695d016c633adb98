"""Every fault kind over real HTTP: what the client observes, and what the ledger says."""

from __future__ import annotations

import time

import httpx
import pytest

from fake_providers.payment import Effect, FaultKind, Outcome

from .conftest import LiveProvider, unique

pytestmark = pytest.mark.timeout(60)


def test_delay_before_commit_delays_then_commits(live: LiveProvider) -> None:
    key, reference = unique("k"), unique("order")
    live.control.add_fault(FaultKind.DELAY_BEFORE_COMMIT, key=key, delay_ms=300)
    started = time.monotonic()
    response = live.charge(key, reference)
    assert response.status_code == 200
    assert time.monotonic() - started >= 0.3
    [attempt] = live.control.attempts(key=key)
    assert attempt.fault is FaultKind.DELAY_BEFORE_COMMIT
    assert attempt.duration_s is not None and attempt.duration_s >= 0.3
    assert len(live.control.commits(reference=reference)) == 1


def test_error_before_commit_commits_nothing_and_retry_processes(live: LiveProvider) -> None:
    key, reference = unique("k"), unique("order")
    live.control.add_fault(FaultKind.ERROR_BEFORE_COMMIT, key=key)
    failed = live.charge(key, reference)
    assert failed.status_code == 500
    assert failed.headers["content-type"] == "application/problem+json"
    assert live.control.commits(reference=reference) == []
    retry = live.charge(key, reference)
    assert retry.status_code == 200
    assert "Idempotent-Replayed" not in retry.headers
    [commit] = live.control.commits(reference=reference)
    assert commit.attempt_no == 2
    first, second = live.control.attempts(key=key)
    assert (first.outcome, first.fault, first.http_status) == (
        Outcome.FAULT_INJECTED,
        FaultKind.ERROR_BEFORE_COMMIT,
        500,
    )
    assert second.outcome is Outcome.COMMITTED


def test_rate_limited_is_429_with_retry_after(live: LiveProvider) -> None:
    key, reference = unique("k"), unique("order")
    live.control.add_fault(FaultKind.RATE_LIMITED, key=key, retry_after_s=7)
    limited = live.charge(key, reference)
    assert limited.status_code == 429
    assert limited.headers["Retry-After"] == "7"
    assert live.control.commits(reference=reference) == []
    assert live.charge(key, reference).status_code == 200
    assert len(live.control.commits(reference=reference)) == 1


def test_commit_then_error_stores_the_500_and_replays_it(live: LiveProvider) -> None:
    key, reference = unique("k"), unique("order")
    live.control.add_fault(FaultKind.COMMIT_THEN_ERROR, key=key)
    failed = live.charge(key, reference)
    replay = live.charge(key, reference)
    assert failed.status_code == replay.status_code == 500
    assert replay.content == failed.content
    assert replay.headers["Idempotent-Replayed"] == "true"
    assert len(live.control.commits(reference=reference)) == 1
    first, _ = live.control.attempts(key=key)
    assert (first.outcome, first.fault, first.http_status) == (
        Outcome.COMMITTED,
        FaultKind.COMMIT_THEN_ERROR,
        500,
    )


@pytest.mark.parametrize(
    ("kind", "client_error"),
    [
        (FaultKind.COMMIT_THEN_CLOSE, httpx.RemoteProtocolError),  # FIN, no response
        (FaultKind.COMMIT_THEN_RESET, httpx.ReadError),  # RST
    ],
)
def test_commit_then_drop_gives_a_connection_error_and_one_commit(
    live: LiveProvider, kind: FaultKind, client_error: type[Exception]
) -> None:
    key, reference = unique("k"), unique("order")
    live.control.add_fault(kind, key=key)
    with pytest.raises(client_error):
        live.charge(key, reference)
    [commit] = live.control.commits(reference=reference)
    retry = live.charge(key, reference)
    assert retry.status_code == 200
    assert retry.headers["Idempotent-Replayed"] == "true"
    assert retry.json()["id"] == commit.effect_id
    first, _ = live.control.attempts(key=key)
    assert (first.outcome, first.fault, first.http_status) == (Outcome.COMMITTED, kind, None)
    assert live.control.faults()[0].hits == 1


def test_commit_then_hang_outlasts_the_client_timeout(live: LiveProvider) -> None:
    key, reference = unique("k"), unique("order")
    live.control.add_fault(FaultKind.COMMIT_THEN_HANG, key=key, hang_ms=20_000)
    with pytest.raises(httpx.ReadTimeout):
        live.charge(key, reference, timeout=0.5)
    assert len(live.control.commits(reference=reference)) == 1
    # The key is done even though the first response is still held: a retry replays.
    retry = live.charge(key, reference)
    assert retry.headers["Idempotent-Replayed"] == "true"
    first = live.control.attempts(key=key)[0]
    assert (first.outcome, first.finished_at) == (Outcome.COMMITTED, None)


def test_commit_then_hang_is_bounded(live: LiveProvider) -> None:
    key, reference = unique("k"), unique("order")
    live.control.add_fault(FaultKind.COMMIT_THEN_HANG, key=key, hang_ms=300)
    started = time.monotonic()
    response = live.charge(key, reference, timeout=10)
    assert response.status_code == 200
    assert time.monotonic() - started >= 0.3
    [attempt] = live.control.attempts(key=key)
    assert (attempt.http_status, attempt.fault) == (200, FaultKind.COMMIT_THEN_HANG)


def test_rules_match_by_reference_prefix_and_attempt_number(live: LiveProvider) -> None:
    prefix = unique("batch")
    live.control.add_fault(FaultKind.ERROR_BEFORE_COMMIT, reference_prefix=prefix, attempts=[2])
    email = {"to": "a@example.com", "subject": "Hi", "reference": f"{prefix}-1"}
    elsewhere = {**email, "reference": unique("other")}
    # Emails have no key, so attempts are numbered per reference.
    statuses = [live.http.post("/v1/emails", json=email).status_code for _ in range(3)]
    assert statuses == [200, 500, 200]
    assert [live.http.post("/v1/emails", json=elsewhere).status_code for _ in range(2)] == [
        200,
        200,
    ]
    assert [c.attempt_no for c in live.control.commits(reference=f"{prefix}-1")] == [1, 3]


def test_any_rule_applies_to_every_matching_attempt(live: LiveProvider) -> None:
    live.control.add_fault(FaultKind.RATE_LIMITED, effect=Effect.EMAIL, attempts=None)
    email = {"to": "a@example.com", "subject": "Hi", "reference": unique("order")}
    statuses = [live.http.post("/v1/emails", json=email).status_code for _ in range(3)]
    assert statuses == [429, 429, 429]
    assert live.charge(unique("k"), unique("order")).status_code == 200
    assert live.control.faults()[0].hits == 3


def test_email_faults_and_commits(live: LiveProvider) -> None:
    reference = unique("order")
    live.control.add_fault(FaultKind.COMMIT_THEN_CLOSE, reference_prefix=reference, attempts=[1])
    email = {"to": "a@example.com", "subject": "Receipt", "reference": reference}
    with pytest.raises(httpx.RemoteProtocolError):
        live.http.post("/v1/emails", json=email)
    # No idempotency on emails: the sender's retry sends the mail a second time.
    assert live.http.post("/v1/emails", json=email).status_code == 200
    commits = live.control.commits(reference=reference)
    assert [(c.effect, c.attempt_no) for c in commits] == [(Effect.EMAIL, 1), (Effect.EMAIL, 2)]
