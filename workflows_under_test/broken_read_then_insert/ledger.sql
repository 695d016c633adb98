-- Ledger of broken_read_then_insert (a negative control): one row per execution, keyed by
-- "pay:<execution id>", with no unique constraint on the order: 'seen?' is a SELECT, the claim
-- a later INSERT. status: claimed -> confirmed | failed | unknown.
CREATE TABLE IF NOT EXISTS rti_ledger (
    exec_key        text PRIMARY KEY,
    order_id        text NOT NULL,
    status          text NOT NULL CHECK (status IN ('claimed', 'confirmed', 'failed', 'unknown')),
    charge_id       text,
    created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at      timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX IF NOT EXISTS rti_ledger_order_id ON rti_ledger (order_id);
