-- +goose Up
-- A recover re-queues each failed delivery once, whatever its since (issue
-- 21; it was once per since, so two recovers a second apart re-queued
-- everything twice): recovered_since, the since of the last recover that
-- re-queued the delivery, becomes recovered_at, when a recover re-queued it
-- (Unix nanoseconds; NULL: no recover since the delivery was created, last
-- resent, or its subscription last re-enabled). A delivery a recover
-- re-queued before keeps that recover's since as its value: only whether it
-- is NULL matters.
ALTER TABLE webhook_deliveries RENAME COLUMN recovered_since TO recovered_at;

-- +goose Down
ALTER TABLE webhook_deliveries RENAME COLUMN recovered_at TO recovered_since;
