"""The provider's durable state in SQLite (WAL): attempt log, idempotency keys, charges, commits.

`LedgerStore` is synchronous and not thread-safe on purpose: `runtime.py` runs every call on one
dedicated thread, which serialises writes without lock juggling. Each public method is one
transaction, so a provider killed at any instant leaves either all or none of a step behind.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from enum import StrEnum
from importlib import resources
from pathlib import Path
from typing import Any

from ..personalities.documents import deep_merge
from .kinds import CommitRow as CommitRow  # the ledger's row, imported from here too
from .kinds import Outcome

Row = dict[str, Any]


@dataclass(frozen=True)
class StoredResponse:
    """A response kept for replay, byte for byte."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes


class ClaimStatus(StrEnum):
    CLAIMED = "claimed"  # this attempt owns the key (new, or the old one expired)
    NO_KEY = "no_key"  # nothing to claim (lenient charge, email)
    IN_PROGRESS = "in_progress"
    MISMATCH = "mismatch"
    DONE = "done"


# What a refused claim is answered with, by default the IETF idempotency-key draft's statuses
# (a service's own answers may differ: Stripe refuses a reused key with 400).
IETF_REFUSALS = {ClaimStatus.MISMATCH: 422, ClaimStatus.IN_PROGRESS: 409}


@dataclass(frozen=True)
class Claim:
    attempt_id: int
    attempt_no: int
    status: ClaimStatus
    replay: StoredResponse | None = None
    replay_effect_id: str | None = None
    key_expired: bool = False  # the key existed but was past its TTL, so it was claimed anew


@dataclass(frozen=True)
class AttemptStart:
    effect: str  # an `Effect`, or an upstream fake's effect kind
    key: str | None
    reference: str
    fingerprint: str
    received_at: float
    # What the evidence shows of the request (``fakes.explain``): a masked body preview, and
    # where the reference was read (and what was there when it is empty).
    preview: str = ""
    reference_note: str = ""


@dataclass(frozen=True)
class ChargeRow:
    id: str
    amount: int
    currency: str
    reference: str
    status: str
    description: str | None
    idempotency_key: str | None
    created_at: float


@dataclass(frozen=True)
class ObjectRow:
    """An object an upstream fake keeps for later reads; written with the commit, or updated."""

    host: str
    kind: str
    id: str
    document: dict[str, Any]
    created_at: float


@dataclass(frozen=True)
class AttemptFilter:
    """Which attempts a query returns (every field that is set must match); the control API
    reads it from the query string as it is."""

    reference: str | None = None
    key: str | None = None
    outcome: str | None = None
    effect: str | None = None
    # Received at or after it: a case's window (a stack's list grows with every case it ran,
    # and a poll should not carry them all).
    since: float | None = None


class LedgerStore:
    def __init__(self, path: Path, now: float) -> None:
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        # NORMAL in WAL mode survives a killed process; only an OS crash may lose the last commit.
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA busy_timeout=5000")
        self._db.executescript(resources.files(__package__).joinpath("schema.sql").read_text())
        self._add_columns()
        self._recover(now)

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def _add_columns(self) -> None:
        """Columns added since a store's file may have been made (a provider restarted on it)."""
        have = {row["name"] for row in self._db.execute("PRAGMA table_info(attempts)")}
        for column in ("preview", "reference_note"):
            if column not in have:
                self._db.execute(f"ALTER TABLE attempts ADD COLUMN {column} TEXT")

    def _recover(self, now: float) -> None:
        """Attempts and claims left over by a previous process that died mid-request."""
        with self._transaction() as db:
            db.execute(
                "UPDATE attempts SET outcome = ?, finished_at = ? WHERE outcome = ?",
                (Outcome.INTERRUPTED, now, Outcome.IN_FLIGHT),
            )
            # Commit and the `done` mark share a transaction, so `in_progress` never committed.
            db.execute("DELETE FROM idempotency_keys WHERE state = 'in_progress'")

    def reset(self) -> None:
        with self._transaction() as db:
            for table in ("attempts", "idempotency_keys", "charges", "commits", "objects"):
                db.execute(f"DELETE FROM {table}")

    # -- attempts -------------------------------------------------------------------------------

    def record_rejected(
        self,
        effect: str,
        key: str | None,
        reference: str | None,
        status: int,
        detail: str,
        received_at: float,
        now: float,
    ) -> int:
        """An attempt refused before it got a subject (bad body, bad key): logged, not numbered."""
        with self._transaction() as db:
            cursor = db.execute(
                "INSERT INTO attempts (effect, idempotency_key, reference, outcome, http_status,"
                " detail, received_at, finished_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    effect,
                    key,
                    reference,
                    Outcome.REJECTED_4XX,
                    status,
                    detail[:500],
                    received_at,
                    now,
                ),
            )
            return _lastrowid(cursor)

    def begin_attempt(
        self,
        start: AttemptStart,
        ttl_seconds: float,
        now: float,
        refusals: Mapping[ClaimStatus, int] = IETF_REFUSALS,
    ) -> Claim:
        """Log the attempt and claim its key, atomically. Non-claims are finished right here,
        a refused one with the HTTP status its service answers (`refusals`)."""
        subject = start.key if start.key is not None else start.reference
        with self._transaction() as db:
            attempt_no = int(
                db.execute(
                    "SELECT COALESCE(MAX(attempt_no), 0) + 1 FROM attempts"
                    " WHERE effect = ? AND subject = ?",
                    (start.effect, subject),
                ).fetchone()[0]
            )
            attempt_id = _lastrowid(
                db.execute(
                    "INSERT INTO attempts (effect, subject, idempotency_key, reference,"
                    " fingerprint, attempt_no, outcome, received_at, preview, reference_note)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        start.effect,
                        subject,
                        start.key,
                        start.reference,
                        start.fingerprint,
                        attempt_no,
                        Outcome.IN_FLIGHT,
                        start.received_at,
                        start.preview or None,
                        start.reference_note or None,
                    ),
                )
            )
            if start.key is None:
                return Claim(attempt_id, attempt_no, ClaimStatus.NO_KEY)
            claim = self._claim(db, start, attempt_id, attempt_no, ttl_seconds, now)
            if claim.status is not ClaimStatus.CLAIMED:
                self._finish_unclaimed(db, claim, now, refusals)
            return claim

    def _claim(
        self,
        db: sqlite3.Connection,
        start: AttemptStart,
        attempt_id: int,
        attempt_no: int,
        ttl_seconds: float,
        now: float,
    ) -> Claim:
        existing = db.execute(
            "SELECT * FROM idempotency_keys WHERE key = ?", (start.key,)
        ).fetchone()
        # The claim itself: insert, or take over a completed key that is past its TTL.
        claimed = db.execute(
            "INSERT INTO idempotency_keys (key, fingerprint, state, owner_attempt_id, claimed_at)"
            " VALUES (?, ?, 'in_progress', ?, ?)"
            " ON CONFLICT (key) DO UPDATE SET fingerprint = excluded.fingerprint,"
            "  state = 'in_progress', owner_attempt_id = excluded.owner_attempt_id,"
            "  claimed_at = excluded.claimed_at, completed_at = NULL, effect_id = NULL,"
            "  response_status = NULL, response_headers = NULL, response_body = NULL"
            " WHERE idempotency_keys.state = 'done' AND idempotency_keys.completed_at <= ?"
            " RETURNING owner_attempt_id",
            (start.key, start.fingerprint, attempt_id, now, now - ttl_seconds),
        ).fetchone()
        if claimed is not None:
            return Claim(
                attempt_id, attempt_no, ClaimStatus.CLAIMED, key_expired=existing is not None
            )
        assert existing is not None
        if existing["fingerprint"] != start.fingerprint:
            return Claim(attempt_id, attempt_no, ClaimStatus.MISMATCH)
        if existing["state"] == "in_progress":
            return Claim(attempt_id, attempt_no, ClaimStatus.IN_PROGRESS)
        replay = StoredResponse(
            status=int(existing["response_status"]),
            headers=[(name, value) for name, value in json.loads(existing["response_headers"])],
            body=bytes(existing["response_body"]),
        )
        return Claim(
            attempt_id,
            attempt_no,
            ClaimStatus.DONE,
            replay=replay,
            replay_effect_id=existing["effect_id"],
        )

    def _finish_unclaimed(
        self,
        db: sqlite3.Connection,
        claim: Claim,
        now: float,
        refusals: Mapping[ClaimStatus, int],
    ) -> None:
        outcome, status = {
            ClaimStatus.MISMATCH: (Outcome.MISMATCH, refusals[ClaimStatus.MISMATCH]),
            ClaimStatus.IN_PROGRESS: (Outcome.CONFLICT, refusals[ClaimStatus.IN_PROGRESS]),
            ClaimStatus.DONE: (Outcome.REPLAYED, claim.replay.status if claim.replay else 0),
        }[claim.status]
        db.execute(
            "UPDATE attempts SET outcome = ?, http_status = ?, finished_at = ?, effect_id = ?"
            " WHERE id = ?",
            (outcome, status, now, claim.replay_effect_id, claim.attempt_id),
        )

    def settle(
        self,
        attempt_id: int,
        outcome: Outcome,
        *,
        key: str | None,
        effect_id: str | None,
        charge: ChargeRow | None,
        commit: CommitRow | None,
        response: StoredResponse | None,
        now: float,
        objects: Sequence[ObjectRow] = (),
        upsert: bool = False,
        detail: str | None = None,
    ) -> bool:
        """Commit the effect (if any) and store the response for replay, in one transaction.
        `detail`: why the service refused it (the attempt log's word for a 4xx).

        `upsert`: an object already stored is merged into; when every one was, nothing
        commits (the service's upsert: the same identity is one effect). Returns False,
        changing nothing, when a reset wiped the attempt while it was held.
        """
        with self._transaction() as db:
            if upsert:
                objects, existed = self._merged(db, objects)
                if existed:
                    commit, outcome = None, Outcome.PROCESSED
            still_ours = db.execute(
                "UPDATE attempts SET outcome = ?, effect_id = ?, detail = COALESCE(?, detail)"
                " WHERE id = ? AND outcome = ?",
                (outcome, effect_id, detail, attempt_id, Outcome.IN_FLIGHT),
            ).rowcount
            if still_ours != 1:
                return False
            if charge is not None:
                db.execute(
                    "INSERT INTO charges (id, amount, currency, reference, status, description,"
                    " idempotency_key, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        charge.id,
                        charge.amount,
                        charge.currency,
                        charge.reference,
                        charge.status,
                        charge.description,
                        charge.idempotency_key,
                        charge.created_at,
                    ),
                )
            for obj in objects:
                db.execute(
                    "INSERT INTO objects (host, kind, id, document, created_at)"
                    " VALUES (?, ?, ?, ?, ?) ON CONFLICT (host, kind, id)"
                    " DO UPDATE SET document = excluded.document",
                    (obj.host, obj.kind, obj.id, json.dumps(obj.document), obj.created_at),
                )
            if commit is not None:
                db.execute(
                    "INSERT INTO commits (effect, effect_id, reference, idempotency_key,"
                    " fingerprint, attempt_id, attempt_no, committed_at)"
                    " VALUES (:effect, :effect_id, :reference, :idempotency_key, :fingerprint,"
                    " :attempt_id, :attempt_no, :committed_at)",
                    asdict(commit),
                )
            if key is not None and response is not None:
                db.execute(
                    "UPDATE idempotency_keys SET state = 'done', completed_at = ?, effect_id = ?,"
                    " response_status = ?, response_headers = ?, response_body = ?"
                    " WHERE key = ? AND owner_attempt_id = ?",
                    (
                        now,
                        effect_id,
                        response.status,
                        json.dumps(response.headers),
                        response.body,
                        key,
                        attempt_id,
                    ),
                )
            return True

    def release(
        self,
        attempt_id: int,
        key: str | None,
        outcome: Outcome,
        fault: str | None,
        http_status: int,
        now: float,
    ) -> None:
        """Give up a claim without committing (pre-commit fault): a retry may process anew."""
        self.finish_attempt(attempt_id, outcome, fault, http_status, now, released_key=key)

    def finish_attempt(
        self,
        attempt_id: int,
        outcome: Outcome | None,
        fault: str | None,
        http_status: int | None,
        now: float,
        *,
        released_key: str | None = None,
    ) -> None:
        """End an attempt; with `released_key`, in the same transaction, drop the attempt's
        claim on that key (still in progress) so that a retry processes anew."""
        with self._transaction() as db:
            if released_key is not None:
                db.execute(
                    "DELETE FROM idempotency_keys"
                    " WHERE key = ? AND owner_attempt_id = ? AND state = 'in_progress'",
                    (released_key, attempt_id),
                )
            db.execute(
                "UPDATE attempts SET outcome = COALESCE(?, outcome), fault = ?, http_status = ?,"
                " finished_at = ? WHERE id = ?",
                (outcome, fault, http_status, now, attempt_id),
            )

    # -- queries --------------------------------------------------------------------------------

    def commits(
        self, *, reference: str | None = None, key: str | None = None, effect: str | None = None
    ) -> list[Row]:
        return self._select(
            "commits", "seq", reference=reference, idempotency_key=key, effect=effect
        )

    def attempts(self, where: AttemptFilter | None = None) -> list[Row]:
        where = where or AttemptFilter()
        rows = self._select(
            "attempts",
            "id",
            since=None if where.since is None else ("received_at", where.since),
            reference=where.reference,
            idempotency_key=where.key,
            outcome=where.outcome,
            effect=where.effect,
        )
        for row in rows:
            del row["subject"]
        return rows

    def charges(
        self, *, reference: str | None = None, key: str | None = None, limit: int = 100
    ) -> list[Row]:
        return self._select("charges", "created_at", reference=reference, idempotency_key=key)[
            :limit
        ]

    @staticmethod
    def _merged(
        db: sqlite3.Connection, objects: Sequence[ObjectRow]
    ) -> tuple[list[ObjectRow], bool]:
        """The objects laid over those already stored; whether every one was stored."""
        merged, existed = [], bool(objects)
        for obj in objects:
            row = db.execute(
                "SELECT document FROM objects WHERE host = ? AND kind = ? AND id = ?",
                (obj.host, obj.kind, obj.id),
            ).fetchone()
            if row is None:
                merged.append(obj)
                existed = False
                continue
            document = deep_merge(json.loads(row[0]), obj.document)
            merged.append(ObjectRow(obj.host, obj.kind, obj.id, document, obj.created_at))
        return merged, existed

    def has_objects(self, objects: Sequence[ObjectRow]) -> bool:
        """Is any of these objects (host, kind, id) stored already?"""
        return any(self._has_object(obj) for obj in objects)

    def has_all_objects(self, objects: Sequence[ObjectRow]) -> bool:
        """Is every one of these objects stored already (an upsert that creates nothing)?"""
        return bool(objects) and all(self._has_object(obj) for obj in objects)

    def _has_object(self, obj: ObjectRow) -> bool:
        return (
            self._db.execute(
                "SELECT 1 FROM objects WHERE host = ? AND kind = ? AND id = ?",
                (obj.host, obj.kind, obj.id),
            ).fetchone()
            is not None
        )

    def charge(self, charge_id: str) -> Row | None:
        rows = self._select("charges", "created_at", id=charge_id)
        return rows[0] if rows else None

    def objects(self, host: str, kind: str, object_id: str | None = None) -> list[ObjectRow]:
        """Objects of one kind on one host, oldest first (or the one with `object_id`)."""
        rows = self._select("objects", "seq", host=host, kind=kind, id=object_id)
        return [
            ObjectRow(
                row["host"], row["kind"], row["id"], json.loads(row["document"]), row["created_at"]
            )
            for row in rows
        ]

    def commit_count(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM commits").fetchone()[0])

    def _select(
        self,
        table: str,
        order_by: str,
        since: tuple[str, float] | None = None,
        **filters: str | None,
    ) -> list[Row]:
        wanted = [(column, value) for column, value in filters.items() if value is not None]
        conditions = [f"{column} = ?" for column, _ in wanted]
        values: list[str | float] = [value for _, value in wanted]
        if since is not None:
            conditions.append(f"{since[0]} >= ?")
            values.append(since[1])
        where = " AND ".join(conditions) or "1"
        sql = f"SELECT * FROM {table} WHERE {where} ORDER BY {order_by}"
        return [dict(row) for row in self._db.execute(sql, values).fetchall()]


def _lastrowid(cursor: sqlite3.Cursor) -> int:
    assert cursor.lastrowid is not None
    return cursor.lastrowid
