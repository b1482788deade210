-- +goose Up
-- Events: every change of a plant, written in the transaction of the change.
-- seq is per owner, from 1, +1 per event, with no gaps: event_sequences
-- holds each owner's last one (kept when events are pruned). A write takes
-- its seqs with UPDATE (INSERT ... ON CONFLICT DO UPDATE) of the owner's
-- row, whose lock it holds until it commits: one owner's writers, on any
-- replica, commit in seq order. Kept to SQL that PostgreSQL and
-- CockroachDB both accept.
CREATE TABLE events (
    owner      TEXT        NOT NULL,
    seq        BIGINT      NOT NULL,
    id         TEXT        NOT NULL,
    type       TEXT        NOT NULL,
    plant_id   BIGINT      NOT NULL,
    data       BYTEA       NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (owner, seq)
);

-- GET /events?type=T: one range scan.
CREATE INDEX events_owner_type_seq ON events (owner, type, seq);
-- Retention: events by age.
CREATE INDEX events_created ON events (created_at);

CREATE TABLE event_sequences (
    owner TEXT   PRIMARY KEY,
    last  BIGINT NOT NULL
);

-- A typed subscription's event types, space-separated; NULL: untyped
-- (creates only, the NewPlant body).
ALTER TABLE webhook_subscriptions ADD COLUMN types TEXT;

-- +goose Down
ALTER TABLE webhook_subscriptions DROP COLUMN types;
DROP TABLE event_sequences;
DROP TABLE events;
