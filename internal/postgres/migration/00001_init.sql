-- +goose Up
-- Plants are keyed by (owner, id): ids are per owner. A page of one owner's
-- plants by id is one range scan of the primary key at any table size.
-- Kept to SQL that PostgreSQL and CockroachDB both accept.
CREATE TABLE plants (
    owner      TEXT        NOT NULL,
    id         BIGINT      NOT NULL,
    name       TEXT        NOT NULL,
    tag        TEXT,
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (owner, id)
);

-- Keyset pages filtered by tag.
CREATE INDEX plants_owner_tag_id ON plants (owner, tag, id) WHERE tag IS NOT NULL;

-- Bearer tokens: only the SHA-256 of the secret is stored.
CREATE TABLE tokens (
    id         TEXT        PRIMARY KEY,
    hash       BYTEA       NOT NULL UNIQUE,
    owner      TEXT        NOT NULL,
    scopes     TEXT        NOT NULL, -- space-separated
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ,
    revoked_at TIMESTAMPTZ
);

-- +goose Down
DROP TABLE tokens;
DROP TABLE plants;
