package postgres

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore"
)

var _ plantstore.TokenService = (*DB)(nil)

const tokenColumns = `id, hash, owner, scopes, created_at, expires_at, revoked_at`

// CreateToken stores t.
func (db *DB) CreateToken(ctx context.Context, t *plantstore.Token) error {
	return db.inTx(ctx, pgx.ReadCommitted, func(tx *Tx) error { return insertToken(ctx, tx, t) })
}

func insertToken(ctx context.Context, tx *Tx, t *plantstore.Token) error {
	if t.CreatedAt.IsZero() {
		t.CreatedAt = tx.now
	}
	_, err := tx.Exec(ctx, `INSERT INTO tokens (`+tokenColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		t.ID, t.Hash, t.Owner, strings.Join(t.Scopes, " "), t.CreatedAt, t.ExpiresAt, t.RevokedAt)
	return wrap("insert token", err)
}

// CreateFirstToken stores t if no token exists. The transaction is
// SERIALIZABLE: of replicas racing on an empty table, one commits and the
// others fail with a serialization error, retry, and find a token.
func (db *DB) CreateFirstToken(ctx context.Context, t *plantstore.Token) (bool, error) {
	created := false
	err := db.inTx(ctx, pgx.Serializable, func(tx *Tx) error {
		created = false
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM tokens)`).Scan(&exists); err != nil {
			return wrap("count tokens", err)
		}
		if exists {
			return nil
		}
		if err := insertToken(ctx, tx, t); err != nil {
			return err
		}
		created = true
		return nil
	})
	return created, err
}

// FindTokenByHash returns the token whose secret hashes to hash.
func (db *DB) FindTokenByHash(ctx context.Context, hash []byte) (*plantstore.Token, error) {
	ctx, cancel := db.opContext(ctx)
	defer cancel()
	t, err := scanToken(db.pool.QueryRow(ctx, `SELECT `+tokenColumns+` FROM tokens WHERE hash = $1`, hash))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, plantstore.Errorf(plantstore.CodeTokenInvalid, "unknown token")
	} else if err != nil {
		return nil, wrap("find token", err)
	}
	return t, nil
}

// FindTokens returns every token, oldest first.
func (db *DB) FindTokens(ctx context.Context) ([]*plantstore.Token, error) {
	ctx, cancel := db.opContext(ctx)
	defer cancel()
	rows, err := db.pool.Query(ctx, `SELECT `+tokenColumns+` FROM tokens ORDER BY created_at, id`)
	if err != nil {
		return nil, wrap("find tokens", err)
	}
	defer rows.Close()
	var tokens []*plantstore.Token
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, wrap("find tokens", err)
		}
		tokens = append(tokens, t)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap("find tokens", err)
	}
	return tokens, nil
}

// RevokeToken marks the token revoked. Revoking a revoked token is a no-op.
func (db *DB) RevokeToken(ctx context.Context, id string) error {
	return db.inTx(ctx, pgx.ReadCommitted, func(tx *Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE tokens SET revoked_at = COALESCE(revoked_at, $1) WHERE id = $2`, tx.now, id)
		if err != nil {
			return wrap("revoke token", err)
		}
		if tag.RowsAffected() == 0 {
			return plantstore.Errorf(plantstore.CodeNotFound, "token %s not found", id)
		}
		return nil
	})
}

// CountTokens returns how many tokens exist.
func (db *DB) CountTokens(ctx context.Context) (int, error) {
	ctx, cancel := db.opContext(ctx)
	defer cancel()
	var n int
	if err := db.pool.QueryRow(ctx, `SELECT COUNT(*) FROM tokens`).Scan(&n); err != nil {
		return 0, wrap("count tokens", err)
	}
	return n, nil
}

func scanToken(row pgx.Row) (*plantstore.Token, error) {
	var t plantstore.Token
	var scopes string
	if err := row.Scan(&t.ID, &t.Hash, &t.Owner, &scopes, &t.CreatedAt, &t.ExpiresAt, &t.RevokedAt); err != nil {
		return nil, err
	}
	t.Scopes = strings.Fields(scopes)
	t.CreatedAt = t.CreatedAt.UTC()
	t.ExpiresAt = utc(t.ExpiresAt)
	t.RevokedAt = utc(t.RevokedAt)
	return &t, nil
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
