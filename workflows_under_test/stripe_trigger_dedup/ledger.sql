-- Processed Stripe events of stripe_trigger_dedup: one row per event id, claimed by the first
-- delivery (INSERT .. ON CONFLICT DO NOTHING) before the order ships.
-- status: claimed -> done (the shipment confirmed). A row left claimed (the execution died, or
-- the shipment failed after n8n had already answered Stripe) is settled by the reconciler: it
-- finds the order's shipment (GET /v1/shipments?order_id=) or ships with the same key.
CREATE TABLE IF NOT EXISTS stripe_events (
    event_id    text PRIMARY KEY,
    order_id    text NOT NULL,
    status      text NOT NULL CHECK (status IN ('claimed', 'done')),
    shipment_id text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS stripe_events_order ON stripe_events (order_id);
