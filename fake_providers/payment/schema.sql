-- Ground truth of the fake payment provider. `commits` is what the oracle counts.
CREATE TABLE IF NOT EXISTS attempts (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    effect          TEXT NOT NULL,
    subject         TEXT,     -- key, or reference when there is no key: attempts are numbered per subject
    idempotency_key TEXT,
    reference       TEXT,
    fingerprint     TEXT,
    attempt_no      INTEGER,  -- NULL for requests rejected before they had a subject
    outcome         TEXT NOT NULL,
    fault           TEXT,
    http_status     INTEGER,  -- NULL when no response was sent (connection dropped, still open)
    effect_id       TEXT,
    detail          TEXT,
    received_at     REAL NOT NULL,
    finished_at     REAL,
    preview         TEXT,     -- an upstream fake's masked body preview
    reference_note  TEXT      -- where the reference was read; if empty, what was there
);
CREATE INDEX IF NOT EXISTS attempts_by_subject ON attempts (effect, subject, attempt_no);
CREATE INDEX IF NOT EXISTS attempts_by_reference ON attempts (reference);
CREATE INDEX IF NOT EXISTS attempts_by_key ON attempts (idempotency_key);

CREATE TABLE IF NOT EXISTS idempotency_keys (
    key              TEXT PRIMARY KEY,
    fingerprint      TEXT NOT NULL,
    state            TEXT NOT NULL CHECK (state IN ('in_progress', 'done')),
    owner_attempt_id INTEGER NOT NULL,
    claimed_at       REAL NOT NULL,
    completed_at     REAL,
    effect_id        TEXT,
    response_status  INTEGER,
    response_headers TEXT,    -- JSON list of [name, value]
    response_body    BLOB
);

CREATE TABLE IF NOT EXISTS charges (
    id              TEXT PRIMARY KEY,
    amount          INTEGER NOT NULL,
    currency        TEXT NOT NULL,
    reference       TEXT NOT NULL,
    status          TEXT NOT NULL,
    description     TEXT,
    idempotency_key TEXT,
    created_at      REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS charges_by_reference ON charges (reference);
CREATE INDEX IF NOT EXISTS charges_by_key ON charges (idempotency_key);

CREATE TABLE IF NOT EXISTS commits (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    effect          TEXT NOT NULL,
    effect_id       TEXT NOT NULL UNIQUE,
    reference       TEXT NOT NULL,
    idempotency_key TEXT,
    fingerprint     TEXT NOT NULL,
    attempt_id      INTEGER NOT NULL,
    attempt_no      INTEGER NOT NULL,
    committed_at    REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS commits_by_reference ON commits (reference);

-- State the upstream fakes answer reads from (Stripe objects, recorded requests), per host.
CREATE TABLE IF NOT EXISTS objects (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    host        TEXT NOT NULL,
    kind        TEXT NOT NULL,  -- stripe: object name ("customer"); record: the request path
    id          TEXT NOT NULL,
    document    TEXT NOT NULL,  -- JSON
    created_at  REAL NOT NULL,
    UNIQUE (host, kind, id)
);
