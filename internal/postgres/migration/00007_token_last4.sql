-- +goose Up
-- The last four characters of a token's secret (of its CRC-32 checksum),
-- stored when it is issued so that GET /tokens can tell tokens apart; NULL
-- for tokens issued before, and for operator-supplied secrets. And the
-- owner's tokens oldest first: a page of GET /tokens is one range scan.
-- (Version 7: 6 is left to a migration written at the same time.) Kept to
-- SQL that PostgreSQL and CockroachDB both accept.
ALTER TABLE tokens ADD COLUMN last4 TEXT;
CREATE INDEX tokens_owner_created ON tokens (owner, created_at, id);

-- +goose Down
DROP INDEX tokens_owner_created;
ALTER TABLE tokens DROP COLUMN last4;
