package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"strings"
	"time"

	"github.com/plantstore/plantstore"
)

const tokenColumns = `id, hash, owner, scopes, created_at, expires_at, revoked_at, last4`

// InsertToken stores t.
func (db *DB) InsertToken(ctx context.Context, t *plantstore.Token) error {
	return db.update(ctx, "insert token", func(ctx context.Context, tx *Tx) error { return insertToken(ctx, tx, t) })
}

func insertToken(ctx context.Context, tx *Tx, t *plantstore.Token) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO tokens (`+tokenColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		t.ID, t.Hash, t.Owner, strings.Join(t.Scopes, " "), t.CreatedAt.UnixNano(),
		nullNanos(t.ExpiresAt), nullNanos(t.RevokedAt), nullEmpty(t.Last4))
	if isUniqueViolation(err) {
		return plantstore.ErrExists
	}
	return wrap("insert token", err)
}

// InsertOwnerToken stores t unless its owner has max live tokens or more
// at t.CreatedAt (plantstore.ErrLimit). Writes are serialised (one writer,
// one transaction per batch, its writes in order; BEGIN IMMEDIATE across
// processes), so the count and the insert cannot interleave with another
// insert's.
func (db *DB) InsertOwnerToken(ctx context.Context, t *plantstore.Token, max int) error {
	return db.update(ctx, "insert owner token", func(ctx context.Context, tx *Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM tokens
			WHERE owner = ?1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?2)`,
			t.Owner, t.CreatedAt.UnixNano()).Scan(&n); err != nil {
			return wrap("count owner tokens", err)
		}
		if n >= max {
			return plantstore.ErrLimit
		}
		return insertToken(ctx, tx, t)
	})
}

// PruneTokens deletes at most limit tokens revoked or expired before
// before, but never the newest (those created last), in one statement of a
// write of its own.
func (db *DB) PruneTokens(ctx context.Context, before time.Time, limit int) (int, error) {
	var n int
	err := db.update(ctx, "prune tokens", func(ctx context.Context, tx *Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM tokens WHERE id IN (
	SELECT id FROM tokens WHERE (revoked_at < ?1 OR expires_at < ?1)
		AND created_at < (SELECT MAX(created_at) FROM tokens)
	LIMIT ?2)`, before.UnixNano(), limit)
		if err != nil {
			return wrap("prune tokens", err)
		}
		k, err := res.RowsAffected()
		n = int(k)
		return wrap("prune tokens", err)
	})
	return n, err
}

// InsertFirstToken stores t if no token exists. The write transaction
// (BEGIN IMMEDIATE) holds SQLite's write lock, so processes take turns.
func (db *DB) InsertFirstToken(ctx context.Context, t *plantstore.Token) (bool, error) {
	inserted := false
	err := db.update(ctx, "insert first token", func(ctx context.Context, tx *Tx) error {
		var exists bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM tokens)`).Scan(&exists); err != nil {
			return wrap("insert first token", err)
		}
		if exists {
			return nil
		}
		if err := insertToken(ctx, tx, t); err != nil {
			return err
		}
		inserted = true
		return nil
	})
	return inserted, err
}

// FindTokenByHash returns the token whose secret hashes to hash.
func (db *DB) FindTokenByHash(ctx context.Context, hash []byte) (*plantstore.Token, error) {
	ctx, cancel := db.readContext(ctx)
	defer cancel()
	st, err := db.readStmt(ctx, `SELECT `+tokenColumns+` FROM tokens WHERE hash = ?`)
	if err != nil {
		return nil, wrap("find token", err)
	}
	t, err := scanToken(st.QueryRowContext(ctx, hash))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, plantstore.ErrNotFound
	} else if err != nil {
		return nil, wrap("find token", err)
	}
	return t, nil
}

// ListTokens returns every token, oldest first.
func (db *DB) ListTokens(ctx context.Context) ([]*plantstore.Token, error) {
	ctx, cancel := db.readContext(ctx)
	defer cancel()
	rows, err := db.read.QueryContext(ctx, `SELECT `+tokenColumns+` FROM tokens ORDER BY created_at, id`)
	if err != nil {
		return nil, wrap("list tokens", err)
	}
	defer rows.Close()
	var tokens []*plantstore.Token
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, wrap("list tokens", err)
		}
		tokens = append(tokens, t)
	}
	return tokens, wrap("list tokens", rows.Err())
}

// RevokeToken sets the token's revocation time to at, unless it has one.
func (db *DB) RevokeToken(ctx context.Context, id string, at time.Time) error {
	return db.update(ctx, "revoke token", func(ctx context.Context, tx *Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE tokens SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?`, at.UnixNano(), id)
		if err != nil {
			return wrap("revoke token", err)
		}
		return mustAffect(res, "revoke token")
	})
}

// ListOwnerTokens returns at most f.Limit of f.Owner's tokens, oldest
// first, after f.After when set (a token of f.Owner, else ErrNotFound).
func (db *DB) ListOwnerTokens(ctx context.Context, f plantstore.TokenFilter) ([]*plantstore.Token, error) {
	ctx, cancel := db.readContext(ctx)
	defer cancel()
	// A token's owner, id and creation time never change: the cursor's
	// row and the page after it need no common snapshot.
	created, after := int64(math.MinInt64), "" // before every token
	if f.After != nil {
		after = *f.After
		st, err := db.readStmt(ctx, `SELECT created_at FROM tokens WHERE owner = ? AND id = ?`)
		if err != nil {
			return nil, wrap("list owner tokens", err)
		}
		err = st.QueryRowContext(ctx, f.Owner, after).Scan(&created)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, plantstore.ErrNotFound
		} else if err != nil {
			return nil, wrap("list owner tokens", err)
		}
	}
	st, err := db.readStmt(ctx, `SELECT `+tokenColumns+` FROM tokens
		WHERE owner = ?1 AND (created_at > ?2 OR created_at = ?2 AND id > ?3) ORDER BY created_at, id LIMIT ?4`)
	if err != nil {
		return nil, wrap("list owner tokens", err)
	}
	rows, err := st.QueryContext(ctx, f.Owner, created, after, f.Limit)
	if err != nil {
		return nil, wrap("list owner tokens", err)
	}
	defer rows.Close()
	tokens := []*plantstore.Token{}
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, wrap("list owner tokens", err)
		}
		tokens = append(tokens, t)
	}
	return tokens, wrap("list owner tokens", rows.Err())
}

// FindOwnerToken returns owner's token id.
func (db *DB) FindOwnerToken(ctx context.Context, owner, id string) (*plantstore.Token, error) {
	ctx, cancel := db.readContext(ctx)
	defer cancel()
	st, err := db.readStmt(ctx, `SELECT `+tokenColumns+` FROM tokens WHERE owner = ? AND id = ?`)
	if err != nil {
		return nil, wrap("find owner token", err)
	}
	t, err := scanToken(st.QueryRowContext(ctx, owner, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, plantstore.ErrNotFound
	} else if err != nil {
		return nil, wrap("find owner token", err)
	}
	return t, nil
}

// RevokeOwnerToken sets owner's token id's revocation time to at, unless it
// has one, and returns the token.
func (db *DB) RevokeOwnerToken(ctx context.Context, owner, id string, at time.Time) (*plantstore.Token, error) {
	var t *plantstore.Token
	err := db.update(ctx, "revoke owner token", func(ctx context.Context, tx *Tx) error {
		var err error
		t, err = scanToken(tx.QueryRowContext(ctx, `UPDATE tokens SET revoked_at = COALESCE(revoked_at, ?)
			WHERE owner = ? AND id = ? RETURNING `+tokenColumns, at.UnixNano(), owner, id))
		if errors.Is(err, sql.ErrNoRows) {
			return plantstore.ErrNotFound
		}
		return wrap("revoke owner token", err)
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

func scanToken(s scanner) (*plantstore.Token, error) {
	var t plantstore.Token
	var scopes string
	var created int64
	var expires, revoked sql.NullInt64
	var last4 sql.NullString
	if err := s.Scan(&t.ID, &t.Hash, &t.Owner, &scopes, &created, &expires, &revoked, &last4); err != nil {
		return nil, err
	}
	t.Last4 = last4.String
	t.Scopes = strings.Fields(scopes)
	t.CreatedAt = fromNanos(created)
	t.ExpiresAt = nanosPtr(expires)
	t.RevokedAt = nanosPtr(revoked)
	return &t, nil
}
