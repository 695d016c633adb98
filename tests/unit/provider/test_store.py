"""The SQLite ledger on its own: claims, TTL takeover, recovery after a crash, reset guard."""

from __future__ import annotations

from pathlib import Path

from fake_providers.payment.kinds import Effect, Outcome
from fake_providers.payment.store import (
    AttemptFilter,
    AttemptStart,
    ClaimStatus,
    CommitRow,
    LedgerStore,
    StoredResponse,
)

OK = StoredResponse(200, [("content-type", "application/json")], b'{"id":"ch_1"}')


def start(key: str | None = "k1", fingerprint: str = "fp-a", reference: str = "r1") -> AttemptStart:
    return AttemptStart(Effect.CHARGE, key, reference, fingerprint, received_at=100.0)


def commit_row(attempt_id: int, attempt_no: int, effect_id: str = "ch_1") -> CommitRow:
    return CommitRow(Effect.CHARGE, effect_id, "r1", "k1", "fp-a", attempt_id, attempt_no, 101.0)


def settle_ok(store: LedgerStore, attempt_id: int, attempt_no: int, now: float = 101.0) -> bool:
    return store.settle(
        attempt_id,
        Outcome.COMMITTED,
        key="k1",
        effect_id="ch_1",
        charge=None,
        commit=commit_row(attempt_id, attempt_no),
        response=OK,
        now=now,
    )


def test_claim_states_follow_the_key_lifecycle(tmp_path: Path) -> None:
    store = LedgerStore(tmp_path / "l.db", now=0.0)
    first = store.begin_attempt(start(), ttl_seconds=60, now=100.0)
    assert (first.status, first.attempt_no) == (ClaimStatus.CLAIMED, 1)
    assert store.begin_attempt(start(), 60, 100.5).status is ClaimStatus.IN_PROGRESS
    assert store.begin_attempt(start(fingerprint="fp-b"), 60, 100.5).status is ClaimStatus.MISMATCH
    assert settle_ok(store, first.attempt_id, first.attempt_no)
    replay = store.begin_attempt(start(), 60, 102.0)
    assert replay.status is ClaimStatus.DONE
    assert replay.replay == OK
    assert replay.replay_effect_id == "ch_1"
    assert [a["attempt_no"] for a in store.attempts(AttemptFilter(key="k1"))] == [1, 2, 3, 4]
    assert [a["outcome"] for a in store.attempts(AttemptFilter(key="k1"))] == [
        Outcome.COMMITTED,
        Outcome.CONFLICT,
        Outcome.MISMATCH,
        Outcome.REPLAYED,
    ]


def test_completed_key_past_ttl_is_claimed_again(tmp_path: Path) -> None:
    store = LedgerStore(tmp_path / "l.db", now=0.0)
    first = store.begin_attempt(start(), 60, 100.0)
    assert settle_ok(store, first.attempt_id, first.attempt_no, now=101.0)
    assert store.begin_attempt(start(), 60, 160.9).status is ClaimStatus.DONE
    again = store.begin_attempt(start(), 60, 161.0)
    assert again.status is ClaimStatus.CLAIMED
    assert again.key_expired


def test_in_progress_key_never_expires(tmp_path: Path) -> None:
    store = LedgerStore(tmp_path / "l.db", now=0.0)
    store.begin_attempt(start(), 1, 100.0)
    assert store.begin_attempt(start(), 1, 10_000.0).status is ClaimStatus.IN_PROGRESS


def test_reopening_marks_unfinished_attempts_interrupted_and_frees_their_claims(
    tmp_path: Path,
) -> None:
    path = tmp_path / "l.db"
    crashed = LedgerStore(path, now=0.0)
    held = crashed.begin_attempt(start(), 60, 100.0)
    crashed.close()  # stands in for a killed process: nothing was settled

    reopened = LedgerStore(path, now=200.0)
    [attempt] = reopened.attempts(AttemptFilter(key="k1"))
    assert attempt["id"] == held.attempt_id
    assert attempt["outcome"] == Outcome.INTERRUPTED
    assert reopened.begin_attempt(start(), 60, 201.0).status is ClaimStatus.CLAIMED


def test_settle_after_reset_commits_nothing(tmp_path: Path) -> None:
    store = LedgerStore(tmp_path / "l.db", now=0.0)
    claim = store.begin_attempt(start(), 60, 100.0)
    store.reset()
    assert not settle_ok(store, claim.attempt_id, claim.attempt_no)
    assert store.commits() == []


def test_release_lets_the_next_attempt_claim(tmp_path: Path) -> None:
    store = LedgerStore(tmp_path / "l.db", now=0.0)
    claim = store.begin_attempt(start(), 60, 100.0)
    store.release(claim.attempt_id, "k1", Outcome.FAULT_INJECTED, "error_before_commit", 500, 100.1)
    retry = store.begin_attempt(start(), 60, 100.2)
    assert (retry.status, retry.attempt_no) == (ClaimStatus.CLAIMED, 2)


def test_attempts_without_key_are_numbered_per_reference(tmp_path: Path) -> None:
    store = LedgerStore(tmp_path / "l.db", now=0.0)
    numbers = [store.begin_attempt(start(key=None), 60, 100.0).attempt_no for _ in range(3)]
    other = store.begin_attempt(start(key=None, reference="r2"), 60, 100.0)
    assert numbers == [1, 2, 3]
    assert other.attempt_no == 1


def test_attempts_since_keeps_only_the_window(tmp_path: Path) -> None:
    store = LedgerStore(tmp_path / "l.db", now=0.0)
    for at in (100.0, 200.0, 300.0):
        store.begin_attempt(
            AttemptStart(Effect.CHARGE, f"k{at}", "r1", "fp", received_at=at), 60, at
        )
    assert [r["received_at"] for r in store.attempts(AttemptFilter(since=200.0))] == [200.0, 300.0]
    assert [r["received_at"] for r in store.attempts(AttemptFilter(since=200.0, key="k300.0"))] == [
        300.0
    ]
    assert len(store.attempts()) == 3
