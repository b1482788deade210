-- +goose Up
-- Why a subscription was disabled ('gone': a 410; 'failing': its attempts
-- failed for days), and since when its attempts have all failed (NULL while
-- its receiver answers). Kept to SQL that PostgreSQL and CockroachDB both
-- accept.
ALTER TABLE webhook_subscriptions ADD COLUMN disabled_reason TEXT CHECK (disabled_reason IN ('gone', 'failing'));
ALTER TABLE webhook_subscriptions ADD COLUMN failing_since TIMESTAMPTZ;
UPDATE webhook_subscriptions SET disabled_reason = 'gone' WHERE disabled_at IS NOT NULL;

-- One row per owner that has created a subscription: a create locks it
-- (INSERT ... ON CONFLICT DO UPDATE) before counting the owner's
-- subscriptions, so that concurrent creates of one owner, on any replica,
-- count one after the other and never pass the cap.
CREATE TABLE webhook_owners (
    owner TEXT PRIMARY KEY
);
INSERT INTO webhook_owners (owner) SELECT DISTINCT owner FROM webhook_subscriptions;

-- An owner's subscriptions by id (ids are time-ordered): the pages of GET
-- /webhooks, the count of the per-owner cap, the outbox fan-out of a create.
DROP INDEX webhook_subscriptions_owner_created;
CREATE INDEX webhook_subscriptions_owner_id ON webhook_subscriptions (owner, id);

-- A subscription's pending deliveries, earliest first: a claim walks the
-- subscriptions that have any (one probe each), so one subscription's
-- backlog costs it one probe, and hides no other's.
DROP INDEX webhook_deliveries_due;
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (subscription_id, next_attempt_at) WHERE state = 'pending';
-- The deliveries in flight (leased), counted per subscription and owner by
-- every claim; a row enters it when claimed, not when written.
CREATE INDEX webhook_deliveries_leased ON webhook_deliveries (lease_until) WHERE state = 'pending' AND lease_until IS NOT NULL;
-- Retention: finished deliveries and attempts by age.
CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (created_at) WHERE state <> 'pending';
CREATE INDEX webhook_attempts_time ON webhook_attempts (attempted_at);

-- +goose Down
DROP INDEX webhook_attempts_time;
DROP INDEX webhook_deliveries_finished;
DROP INDEX webhook_deliveries_leased;
DROP INDEX webhook_deliveries_pending;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
DROP INDEX webhook_subscriptions_owner_id;
CREATE INDEX webhook_subscriptions_owner_created ON webhook_subscriptions (owner, created_at);
DROP TABLE webhook_owners;
ALTER TABLE webhook_subscriptions DROP COLUMN failing_since;
ALTER TABLE webhook_subscriptions DROP COLUMN disabled_reason;
