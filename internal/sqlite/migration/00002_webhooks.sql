-- +goose Up
-- Webhook subscriptions, per owner. Times are Unix nanoseconds.
CREATE TABLE webhook_subscriptions (
    id                    TEXT    PRIMARY KEY,
    owner                 TEXT    NOT NULL,
    url                   TEXT    NOT NULL,
    description           TEXT    NOT NULL DEFAULT '',
    secret                TEXT    NOT NULL,
    previous_secret       TEXT,
    previous_secret_until INTEGER,
    created_at            INTEGER NOT NULL,
    disabled_at           INTEGER
);

-- An owner's subscriptions, oldest first; the outbox fan-out of a create.
CREATE INDEX webhook_subscriptions_owner_created ON webhook_subscriptions (owner, created_at);

-- The transactional outbox: one row per event and subscription, written in
-- the transaction that created the plant.
CREATE TABLE webhook_deliveries (
    message_id      TEXT    NOT NULL,
    subscription_id TEXT    NOT NULL,
    owner           TEXT    NOT NULL,
    plant_id        INTEGER NOT NULL,
    payload         BLOB    NOT NULL,
    state           TEXT    NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'succeeded', 'failed')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER,          -- pending only
    lease_until     INTEGER,          -- claimed by a dispatcher until then
    created_at      INTEGER NOT NULL,
    PRIMARY KEY (message_id, subscription_id)
);

-- Due deliveries, oldest first.
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
-- A subscription's deliveries (delete, disable).
CREATE INDEX webhook_deliveries_subscription ON webhook_deliveries (subscription_id);

-- Delivery history.
CREATE TABLE webhook_attempts (
    subscription_id TEXT    NOT NULL,
    message_id      TEXT    NOT NULL,
    plant_id        INTEGER NOT NULL,
    attempt         INTEGER NOT NULL,
    attempted_at    INTEGER NOT NULL,
    status_code     INTEGER,          -- NULL: no answer
    error           TEXT,
    duration_us     INTEGER NOT NULL,
    state           TEXT    NOT NULL, -- the delivery's state after the attempt
    next_attempt_at INTEGER,
    PRIMARY KEY (subscription_id, message_id, attempt)
);

CREATE INDEX webhook_attempts_subscription_time ON webhook_attempts (subscription_id, attempted_at DESC);

-- +goose Down
DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
DROP TABLE webhook_subscriptions;
