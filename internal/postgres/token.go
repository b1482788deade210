package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/plantstore/plantstore"
)

// Scopes are stored space-separated in one TEXT column and travel as
// arrays.
const (
	tokenReturning = `id, hash, owner, string_to_array(scopes, ' '), created_at, expires_at, revoked_at, last4`
	tokenSelect    = `SELECT ` + tokenReturning + ` FROM tokens`
	// qInsertToken is an INSERT ... SELECT, so that InsertFirstToken can
	// add its condition.
	qInsertToken = `INSERT INTO tokens (id, hash, owner, scopes, created_at, expires_at, revoked_at, last4)
SELECT $1::TEXT, $2::BYTEA, $3::TEXT, COALESCE(array_to_string($4::TEXT[], ' '), ''), $5::TIMESTAMPTZ, $6::TIMESTAMPTZ, $7::TIMESTAMPTZ, NULLIF($8::TEXT, '')`
)

func tokenArgs(t *plantstore.Token) []any {
	return []any{t.ID, t.Hash, t.Owner, t.Scopes, t.CreatedAt, t.ExpiresAt, t.RevokedAt, t.Last4}
}

// InsertToken stores t, or returns plantstore.ErrExists when its id or hash
// is taken.
func (db *DB) InsertToken(ctx context.Context, t *plantstore.Token) error {
	_, err := db.exec(ctx, qInsertToken, tokenArgs(t)...)
	return wrap("insert token", existsIfDuplicate(err))
}

// An owner's live tokens are counted after its token_owners row is locked
// (qLockTokenOwner), in one implicit READ COMMITTED transaction: the lock
// waits for every mint of the owner that held it before to commit, and the
// count's statement then takes a fresh snapshot that sees their tokens, on
// any replica.
const (
	qLockTokenOwner   = `INSERT INTO token_owners (owner) VALUES ($1) ON CONFLICT (owner) DO UPDATE SET owner = EXCLUDED.owner`
	qInsertOwnerToken = qInsertToken + `
WHERE (SELECT COUNT(*) FROM tokens WHERE owner = $3 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $5)) < $9`
)

// InsertOwnerToken stores t unless its owner has max live tokens or more
// at t.CreatedAt (plantstore.ErrLimit), or returns plantstore.ErrExists
// when its id or hash is taken.
func (db *DB) InsertOwnerToken(ctx context.Context, t *plantstore.Token, max int) error {
	err := db.sendBatch(ctx, func() *pgx.Batch {
		b := &pgx.Batch{}
		b.Queue(qLockTokenOwner, t.Owner)
		b.Queue(qInsertOwnerToken, append(tokenArgs(t), max)...).Exec(func(tag pgconn.CommandTag) error {
			if tag.RowsAffected() == 0 {
				return plantstore.ErrLimit
			}
			return nil
		})
		return b
	})
	return wrap("insert owner token", existsIfDuplicate(err))
}

// PruneTokens deletes at most limit tokens revoked or expired before
// before, but never the newest (those created last), in one statement.
func (db *DB) PruneTokens(ctx context.Context, before time.Time, limit int) (int, error) {
	tag, err := db.exec(ctx, `DELETE FROM tokens WHERE id IN (
	SELECT id FROM tokens WHERE (revoked_at < $1 OR expires_at < $1)
		AND created_at < (SELECT MAX(created_at) FROM tokens)
	LIMIT $2)`, before, limit)
	if err != nil {
		return 0, wrap("prune tokens", err)
	}
	return int(tag.RowsAffected()), nil
}

// InsertFirstToken stores t if no token exists, in a SERIALIZABLE
// transaction of one statement: of replicas racing on an empty table, one commits and the
// others fail with a serialization failure, retry, and find a token.
func (db *DB) InsertFirstToken(ctx context.Context, t *plantstore.Token) (bool, error) {
	inserted := false
	err := db.inTx(ctx, pgx.Serializable, func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, qInsertToken+` WHERE NOT EXISTS (SELECT 1 FROM tokens)`, tokenArgs(t)...)
		inserted = err == nil && tag.RowsAffected() == 1
		return err
	})
	if err != nil {
		return false, wrap("insert first token", existsIfDuplicate(err))
	}
	return inserted, nil
}

// FindTokenByHash returns the token whose secret hashes to hash.
func (db *DB) FindTokenByHash(ctx context.Context, hash []byte) (*plantstore.Token, error) {
	t, err := queryOne(ctx, db, scanToken, tokenSelect+` WHERE hash = $1`, hash)
	if err != nil {
		return nil, wrap("find token", err)
	}
	return t, nil
}

// ListTokens returns every token, oldest first.
func (db *DB) ListTokens(ctx context.Context) ([]*plantstore.Token, error) {
	tokens, err := queryAll(ctx, db, scanToken, tokenSelect+` ORDER BY created_at, id`)
	if err != nil {
		return nil, wrap("list tokens", err)
	}
	return tokens, nil
}

// RevokeToken sets the token's revocation time to at, unless it has one.
func (db *DB) RevokeToken(ctx context.Context, id string, at time.Time) error {
	err := notFoundUnless(db.exec(ctx, `UPDATE tokens SET revoked_at = COALESCE(revoked_at, $1) WHERE id = $2`, at, id))
	return wrap("revoke token", err)
}

// ListOwnerTokens returns at most f.Limit of f.Owner's tokens, oldest
// first, after f.After when set (a token of f.Owner, else ErrNotFound).
func (db *DB) ListOwnerTokens(ctx context.Context, f plantstore.TokenFilter) ([]*plantstore.Token, error) {
	if f.After == nil {
		tokens, err := queryAll(ctx, db, scanToken, tokenSelect+` WHERE owner = $1 ORDER BY created_at, id LIMIT $2`, f.Owner, f.Limit)
		return tokens, wrap("list owner tokens", err)
	}
	// A token's owner, id and creation time never change: the cursor's
	// row and the page after it need no common snapshot.
	created, err := queryOne(ctx, db, pgx.RowTo[time.Time], `SELECT created_at FROM tokens WHERE owner = $1 AND id = $2`, f.Owner, *f.After)
	if err != nil {
		return nil, wrap("list owner tokens", err)
	}
	tokens, err := queryAll(ctx, db, scanToken, tokenSelect+` WHERE owner = $1 AND (created_at, id) > ($2::TIMESTAMPTZ, $3::TEXT)
	ORDER BY created_at, id LIMIT $4`, f.Owner, created, *f.After, f.Limit)
	return tokens, wrap("list owner tokens", err)
}

// FindOwnerToken returns owner's token id.
func (db *DB) FindOwnerToken(ctx context.Context, owner, id string) (*plantstore.Token, error) {
	t, err := queryOne(ctx, db, scanToken, tokenSelect+` WHERE owner = $1 AND id = $2`, owner, id)
	if err != nil {
		return nil, wrap("find owner token", err)
	}
	return t, nil
}

// RevokeOwnerToken sets owner's token id's revocation time to at, unless it
// has one, and returns the token.
func (db *DB) RevokeOwnerToken(ctx context.Context, owner, id string, at time.Time) (*plantstore.Token, error) {
	start := db.ready.now()
	t, err := queryOne(ctx, db, scanToken, `UPDATE tokens SET revoked_at = COALESCE(revoked_at, $1)
	WHERE owner = $2 AND id = $3 RETURNING `+tokenReturning, at, owner, id)
	if err = db.wrote(start, err); err != nil {
		return nil, wrap("revoke owner token", err)
	}
	return t, nil
}

func scanToken(row pgx.CollectableRow) (*plantstore.Token, error) {
	var t plantstore.Token
	var last4 *string
	if err := row.Scan(&t.ID, &t.Hash, &t.Owner, &t.Scopes, &t.CreatedAt, &t.ExpiresAt, &t.RevokedAt, &last4); err != nil {
		return nil, err
	}
	if last4 != nil {
		t.Last4 = *last4
	}
	return &t, nil
}
