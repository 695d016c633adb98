-- Send ledger of email_no_idempotency: one row per email operation, keyed by
-- "email:order-confirmation:<order_id>". The provider cannot deduplicate nor look emails up,
-- so this ledger is the only protection: at most once.
-- status: sending -> sent | failed (final) | released (proven not sent: may be claimed again)
--         | unknown (may or may not have been sent: never sent again, reconcile by hand).
CREATE TABLE IF NOT EXISTS email_ledger (
    op_key          text PRIMARY KEY,
    order_id        text NOT NULL,
    request         jsonb NOT NULL,     -- to, subject, reference
    status          text NOT NULL
                    CHECK (status IN ('sending', 'sent', 'failed', 'released', 'unknown')),
    email_id        text,
    provider_status integer,
    answer_status   integer,            -- the final answer, replayed to every later delivery
    answer          jsonb,
    deliveries      integer NOT NULL DEFAULT 1,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
