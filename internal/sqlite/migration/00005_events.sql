-- +goose Up
-- Events: every change of a plant, written in the transaction of the change.
-- seq is per owner, from 1, +1 per event, with no gaps: event_sequences
-- holds each owner's last one (kept when events are pruned). Times are Unix
-- nanoseconds; data is the plant's JSON.
CREATE TABLE events (
    owner      TEXT    NOT NULL,
    seq        INTEGER NOT NULL,
    id         TEXT    NOT NULL,
    type       TEXT    NOT NULL,
    plant_id   INTEGER NOT NULL,
    data       BLOB    NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (owner, seq)
) WITHOUT ROWID;

-- GET /events?type=T: one range scan.
CREATE INDEX events_owner_type_seq ON events (owner, type, seq);
-- Retention: events by age.
CREATE INDEX events_created ON events (created_at);

CREATE TABLE event_sequences (
    owner TEXT    PRIMARY KEY,
    last  INTEGER NOT NULL
) WITHOUT ROWID;

-- A typed subscription's event types, space-separated; NULL: untyped
-- (creates only, the NewPlant body).
ALTER TABLE webhook_subscriptions ADD COLUMN types TEXT;

-- +goose Down
ALTER TABLE webhook_subscriptions DROP COLUMN types;
DROP TABLE event_sequences;
DROP TABLE events;
