-- Operation ledger of payment_error_handled and broken_error_log_only (each manifest's
-- ledger.prefix starts its own table names): payment_idempotent's ledger, plus what its Error
-- Workflow needs. status: claimed -> confirmed | failed (final) | unknown | needs_action (the
-- Error Workflow found no charge after the node's tries ran out: not done; the next delivery
-- reconciles and charges with the same key).
CREATE TABLE IF NOT EXISTS {prefix}_ledger (
    op_key          text PRIMARY KEY,
    order_id        text NOT NULL,
    request         jsonb NOT NULL,
    status          text NOT NULL
                    CHECK (status IN ('claimed', 'confirmed', 'failed', 'unknown', 'needs_action')),
    charge_id       text,
    provider_status integer,
    answer_status   integer,
    answer          jsonb,
    deliveries      integer NOT NULL DEFAULT 1,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
-- Which operation each execution works on (the Error Trigger only names the execution).
CREATE TABLE IF NOT EXISTS {prefix}_executions (
    execution_id    text PRIMARY KEY,
    op_key          text NOT NULL
);
-- One row per run of the Error Workflow for an operation.
CREATE TABLE IF NOT EXISTS {prefix}_errors (
    id              bigserial PRIMARY KEY,
    op_key          text NOT NULL,
    execution_id    text NOT NULL,
    failed_node     text,
    message         text,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS {prefix}_errors_op_key ON {prefix}_errors (op_key);
