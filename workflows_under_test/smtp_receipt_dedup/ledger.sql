-- Dedup table of smtp_receipt_dedup: one row per order whose receipt was claimed for sending.
-- The first delivery inserts it ('sending') and sends; any later one finds it and sends nothing.
CREATE TABLE IF NOT EXISTS receipt_dedup (
    order_id   text PRIMARY KEY,
    request    jsonb NOT NULL,      -- the receipt's data as first received (email, amount)
    status     text NOT NULL CHECK (status IN ('sending', 'sent')),
    created_at timestamptz NOT NULL DEFAULT now(),
    sent_at    timestamptz
);
