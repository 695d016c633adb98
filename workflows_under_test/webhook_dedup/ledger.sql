-- Inbound-event ledger of webhook_dedup: one row per provider event, keyed by its event id,
-- claimed before any effect. The charge it causes uses Idempotency-Key "evt:<event_id>".
-- status: pending -> done | failed (final) | unknown (reconciled on the next delivery).
CREATE TABLE IF NOT EXISTS dedup_ledger (
    event_id        text PRIMARY KEY,
    op_key          text NOT NULL UNIQUE,  -- "evt:<event_id>", the provider idempotency key
    order_id        text NOT NULL,
    request         jsonb NOT NULL,        -- the charge the event asks for
    status          text NOT NULL CHECK (status IN ('pending', 'done', 'failed', 'unknown')),
    charge_id       text,
    provider_status integer,
    answer_status   integer,               -- the final answer, replayed to every redelivery
    answer          jsonb,
    deliveries      integer NOT NULL DEFAULT 1,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS dedup_ledger_order_id ON dedup_ledger (order_id);
