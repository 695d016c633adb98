-- Operation ledger of payment_async and broken_ack_no_reconciler (each manifest's ledger.prefix
-- starts its own table names): one row per charge operation, keyed by "pay:<order_id>", claimed
-- before the sender gets its 202. status: claimed -> confirmed | failed (final) | unknown.
-- Only the delivery that inserted the row charges; claimed/unknown rows are settled by the
-- reconciler (lookup by idempotency key, else charge with the same key).
CREATE TABLE IF NOT EXISTS {prefix}_ledger (
    op_key          text PRIMARY KEY,
    order_id        text NOT NULL,
    request         jsonb NOT NULL,     -- the charge as first submitted
    status          text NOT NULL CHECK (status IN ('claimed', 'confirmed', 'failed', 'unknown')),
    charge_id       text,
    provider_status integer,
    deliveries      integer NOT NULL DEFAULT 1,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
