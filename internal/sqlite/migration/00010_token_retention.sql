-- +goose Up
-- Token retention: tokens revoked or expired before the retention are
-- found by those times (partial indexes: most tokens are neither), and the
-- newest token, which is never pruned, by its creation time.
CREATE INDEX tokens_revoked ON tokens (revoked_at) WHERE revoked_at IS NOT NULL;
CREATE INDEX tokens_expires ON tokens (expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX tokens_created ON tokens (created_at);

-- +goose Down
DROP INDEX tokens_created;
DROP INDEX tokens_expires;
DROP INDEX tokens_revoked;
