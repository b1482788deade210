-- +goose Up
-- One time encoding: token times become integer Unix nanoseconds, like every
-- other time of this database (they were TEXT, 2006-01-02T15:04:05.000000000Z).
CREATE TABLE tokens_v3 (
    id         TEXT    PRIMARY KEY,
    hash       BLOB    NOT NULL UNIQUE,
    owner      TEXT    NOT NULL,
    scopes     TEXT    NOT NULL, -- space-separated
    created_at INTEGER NOT NULL, -- Unix nanoseconds
    expires_at INTEGER,
    revoked_at INTEGER
);
INSERT INTO tokens_v3 (id, hash, owner, scopes, created_at, expires_at, revoked_at)
SELECT id, hash, owner, scopes,
    CAST(strftime('%s', substr(created_at, 1, 19)) AS INTEGER) * 1000000000 + CAST(substr(created_at, 21, 9) AS INTEGER),
    CAST(strftime('%s', substr(expires_at, 1, 19)) AS INTEGER) * 1000000000 + CAST(substr(expires_at, 21, 9) AS INTEGER),
    CAST(strftime('%s', substr(revoked_at, 1, 19)) AS INTEGER) * 1000000000 + CAST(substr(revoked_at, 21, 9) AS INTEGER)
FROM tokens;
DROP TABLE tokens;
ALTER TABLE tokens_v3 RENAME TO tokens;

-- +goose Down
CREATE TABLE tokens_v2 (
    id         TEXT PRIMARY KEY,
    hash       BLOB NOT NULL UNIQUE,
    owner      TEXT NOT NULL,
    scopes     TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT,
    revoked_at TEXT
);
INSERT INTO tokens_v2 (id, hash, owner, scopes, created_at, expires_at, revoked_at)
SELECT id, hash, owner, scopes,
    strftime('%Y-%m-%dT%H:%M:%S', created_at / 1000000000, 'unixepoch') || printf('.%09dZ', created_at % 1000000000),
    strftime('%Y-%m-%dT%H:%M:%S', expires_at / 1000000000, 'unixepoch') || printf('.%09dZ', expires_at % 1000000000),
    strftime('%Y-%m-%dT%H:%M:%S', revoked_at / 1000000000, 'unixepoch') || printf('.%09dZ', revoked_at % 1000000000)
FROM tokens;
DROP TABLE tokens;
ALTER TABLE tokens_v2 RENAME TO tokens;
