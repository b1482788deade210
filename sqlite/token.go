package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/plantstore/plantstore"
)

var _ plantstore.TokenService = (*DB)(nil)

const tokenColumns = `id, hash, owner, scopes, created_at, expires_at, revoked_at`

// CreateToken stores t.
func (db *DB) CreateToken(ctx context.Context, t *plantstore.Token) error {
	return db.update(ctx, func(ctx context.Context, tx *Tx) error { return insertToken(ctx, tx, t) })
}

func insertToken(ctx context.Context, tx *Tx, t *plantstore.Token) error {
	if t.CreatedAt.IsZero() {
		t.CreatedAt = tx.now
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO tokens (`+tokenColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		t.ID, t.Hash, t.Owner, strings.Join(t.Scopes, " "), formatTime(t.CreatedAt),
		nullTime(t.ExpiresAt), nullTime(t.RevokedAt))
	if err != nil {
		return fmt.Errorf("sqlite: insert token: %w", err)
	}
	return nil
}

// FindTokenByHash returns the token whose secret hashes to hash.
func (db *DB) FindTokenByHash(ctx context.Context, hash []byte) (*plantstore.Token, error) {
	st, err := db.readStmt(ctx, `SELECT `+tokenColumns+` FROM tokens WHERE hash = ?`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: find token: %w", err)
	}
	t, err := scanToken(st.QueryRowContext(ctx, hash))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, plantstore.Errorf(plantstore.CodeTokenInvalid, "unknown token")
	} else if err != nil {
		return nil, fmt.Errorf("sqlite: find token: %w", err)
	}
	return t, nil
}

// FindTokens returns every token, oldest first.
func (db *DB) FindTokens(ctx context.Context) ([]*plantstore.Token, error) {
	rows, err := db.read.QueryContext(ctx, `SELECT `+tokenColumns+` FROM tokens ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: find tokens: %w", err)
	}
	defer rows.Close()
	var tokens []*plantstore.Token
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: find tokens: %w", err)
		}
		tokens = append(tokens, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: find tokens: %w", err)
	}
	return tokens, nil
}

// RevokeToken marks the token revoked. Revoking a revoked token is a no-op.
func (db *DB) RevokeToken(ctx context.Context, id string) error {
	return db.update(ctx, func(ctx context.Context, tx *Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE tokens SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?`,
			formatTime(tx.now), id)
		if err != nil {
			return fmt.Errorf("sqlite: revoke token: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("sqlite: revoke token: %w", err)
		} else if n == 0 {
			return plantstore.Errorf(plantstore.CodeNotFound, "token %s not found", id)
		}
		return nil
	})
}

// CreateFirstToken stores t if no token exists. The write transaction
// (BEGIN IMMEDIATE) holds SQLite's write lock, so processes take turns.
func (db *DB) CreateFirstToken(ctx context.Context, t *plantstore.Token) (bool, error) {
	created := false
	err := db.update(ctx, func(ctx context.Context, tx *Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM tokens`).Scan(&n); err != nil {
			return fmt.Errorf("sqlite: count tokens: %w", err)
		}
		if n > 0 {
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

// CountTokens returns how many tokens exist.
func (db *DB) CountTokens(ctx context.Context) (int, error) {
	var n int
	if err := db.read.QueryRowContext(ctx, `SELECT COUNT(*) FROM tokens`).Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlite: count tokens: %w", err)
	}
	return n, nil
}

func scanToken(s scanner) (*plantstore.Token, error) {
	var t plantstore.Token
	var scopes, created string
	var expires, revoked sql.NullString
	if err := s.Scan(&t.ID, &t.Hash, &t.Owner, &scopes, &created, &expires, &revoked); err != nil {
		return nil, err
	}
	t.Scopes = strings.Fields(scopes)
	var err error
	if t.CreatedAt, err = parseTime(created); err != nil {
		return nil, err
	}
	if t.ExpiresAt, err = parseNullTime(expires); err != nil {
		return nil, err
	}
	if t.RevokedAt, err = parseNullTime(revoked); err != nil {
		return nil, err
	}
	return &t, nil
}
