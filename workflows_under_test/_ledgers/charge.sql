-- Operation ledger of payment_idempotent and the negative controls made from it (each
-- manifest's ledger.prefix starts its own table names): one row per charge operation, keyed by the
-- operation key "pay:<order_id>" (from the business event, never the execution id).
-- status: claimed -> confirmed | failed (final) | unknown (reconciled on the next delivery).
CREATE TABLE IF NOT EXISTS {prefix}_ledger (
    op_key          text PRIMARY KEY,
    order_id        text NOT NULL,
    request         jsonb NOT NULL,     -- the charge as first submitted (amount, currency, reference)
    status          text NOT NULL CHECK (status IN ('claimed', 'confirmed', 'failed', 'unknown')),
    charge_id       text,               -- the provider's charge id, once known
    provider_status integer,            -- HTTP status of the provider's last answer
    answer_status   integer,            -- the final answer, replayed to every later delivery
    answer          jsonb,
    deliveries      integer NOT NULL DEFAULT 1,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
