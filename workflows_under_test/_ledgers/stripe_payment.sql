-- Operation ledger of stripe_idempotent, stripe_timeout and subflow_checkout (each manifest's
-- ledger.prefix starts its own table names): one row per payment operation, keyed by the
-- operation key "pay:<order_id>" (from the order, never the execution id), which is also the
-- Idempotency-Key sent to Stripe.
-- status: claimed -> confirmed | failed (final) | unknown (looked up on the next delivery).
CREATE TABLE IF NOT EXISTS {prefix}_ledger (
    op_key            text PRIMARY KEY,
    order_id          text NOT NULL,
    request           jsonb NOT NULL,   -- the payment as first submitted (amount, currency)
    status            text NOT NULL CHECK (status IN ('claimed', 'confirmed', 'failed', 'unknown')),
    payment_intent_id text,             -- Stripe's payment intent id, once known
    answer_status     integer,          -- the final answer, replayed to every later delivery
    answer            jsonb,
    deliveries        integer NOT NULL DEFAULT 1,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now()
);
