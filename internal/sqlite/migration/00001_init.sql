-- +goose Up
-- Plants are keyed by (owner, id): ids are per owner. WITHOUT ROWID stores
-- rows in primary-key order, so a page of one owner's plants by id is one
-- range scan at any table size.
CREATE TABLE plants (
    owner      TEXT    NOT NULL,
    id         INTEGER NOT NULL,
    name       TEXT    NOT NULL,
    tag        TEXT,
    created_at INTEGER NOT NULL, -- Unix nanoseconds
    PRIMARY KEY (owner, id)
) WITHOUT ROWID;

-- Keyset pages filtered by tag.
CREATE INDEX plants_owner_tag_id ON plants (owner, tag, id) WHERE tag IS NOT NULL;

-- Bearer tokens: only the SHA-256 of the secret is stored.
CREATE TABLE tokens (
    id         TEXT PRIMARY KEY,
    hash       BLOB NOT NULL UNIQUE,
    owner      TEXT NOT NULL,
    scopes     TEXT NOT NULL, -- space-separated
    created_at TEXT NOT NULL,
    expires_at TEXT,
    revoked_at TEXT
);

-- +goose Down
DROP TABLE tokens;
DROP TABLE plants;
