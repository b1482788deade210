-- +goose Up
-- The first 1024 bytes of a receiver's answer to an attempt (valid UTF-8,
-- other bytes escaped), and the since of the last recover that re-queued a
-- delivery (NULL: none), which makes a recover with the same since re-queue
-- each failed delivery once. Kept to SQL that PostgreSQL and CockroachDB
-- both accept.
ALTER TABLE webhook_attempts ADD COLUMN response_body TEXT;
ALTER TABLE webhook_deliveries ADD COLUMN recovered_since TIMESTAMPTZ;

-- A subscription's failed deliveries by creation time: what a recover reads.
CREATE INDEX webhook_deliveries_failed ON webhook_deliveries (subscription_id, created_at) WHERE state = 'failed';

-- +goose Down
DROP INDEX webhook_deliveries_failed;
ALTER TABLE webhook_deliveries DROP COLUMN recovered_since;
ALTER TABLE webhook_attempts DROP COLUMN response_body;
