package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/portable"
	"github.com/plantstore/plantstore/internal/textsearch"
)

// Snapshot starts a read transaction on a connection of the read pool: in
// WAL mode it sees the database as of its first read, whatever commits
// later (those of a server serving the file included). While it is open the
// WAL cannot be checkpointed past that point, so it grows with the writes.
//
// A Memory database has no WAL: a read transaction would block every commit
// for as long as it lasts, so it has no snapshot (errors.ErrUnsupported).
func (db *DB) Snapshot(ctx context.Context) (portable.Snapshot, error) {
	if db.Memory {
		return nil, fmt.Errorf("sqlite: snapshot of an in-memory database: %w", errors.ErrUnsupported)
	}
	if err := db.health.checkMoved(); err != nil {
		return nil, wrap("snapshot", err)
	}
	conn, err := db.read.Conn(ctx)
	if err != nil {
		return nil, wrap("snapshot", err)
	}
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		conn.Close()
		return nil, wrap("snapshot", err)
	}
	// The snapshot starts at the first read: take it now.
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_schema`).Scan(&n); err != nil {
		tx.Rollback()
		conn.Close()
		return nil, wrap("snapshot", err)
	}
	return &snapshot{conn: conn, tx: tx}, nil
}

type snapshot struct {
	conn *sql.Conn
	tx   *sql.Tx
}

func (s *snapshot) Close() error {
	s.tx.Rollback()
	return s.conn.Close()
}

func (s *snapshot) Count(ctx context.Context, t *portable.Table) (n int64, err error) {
	err = s.tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+t.Name).Scan(&n)
	return n, wrap("count "+t.Name, err)
}

// Rows reads t in key order (SQLite compares text with BINARY: by bytes).
func (s *snapshot) Rows(ctx context.Context, t *portable.Table) iter.Seq2[portable.Row, error] {
	return func(yield func(portable.Row, error) bool) {
		names := t.ColumnNames()
		cols := slices.Clone(names)
		if t.Name == "plants" {
			// updated_at is NULL while it is created_at (search.go).
			if i := slices.Index(cols, "updated_at"); i >= 0 {
				cols[i] = "coalesce(updated_at, created_at)"
			}
		}
		q := `SELECT ` + strings.Join(cols, ", ") + ` FROM ` + t.Name + ` ORDER BY ` + strings.Join(names[:t.Key], ", ")
		rows, err := s.tx.QueryContext(ctx, q)
		if err != nil {
			yield(nil, wrap("read "+t.Name, err))
			return
		}
		defer rows.Close()
		c := &cursor{Rows: rows, vals: make([]any, len(names)), ptrs: make([]any, len(names))}
		for i := range c.vals {
			c.ptrs[i] = &c.vals[i]
		}
		t.Scan(c, func(err error) error { return wrap("read "+t.Name, err) })(yield)
	}
}

// cursor gives database/sql's rows the Values of portable.Cursor.
type cursor struct {
	*sql.Rows
	vals, ptrs []any
}

func (c *cursor) Values() ([]any, error) {
	err := c.Rows.Scan(c.ptrs...)
	return c.vals, err
}

// ReplaceRows deletes and inserts in one write transaction of the group
// commit, with statements prepared for it: times are stored as integer
// nanoseconds. A plant's words, which plants holds beside its portable
// columns, are computed from its name and tag; its docid is the next free
// one (the trigger plants_search_insert_nodoc).
func (db *DB) ReplaceRows(ctx context.Context, t *portable.Table, del, ins []portable.Row) error {
	names := t.ColumnNames()
	where := make([]string, t.Key)
	for i, n := range names[:t.Key] {
		where[i] = n + " = ?"
	}
	cols := names
	name, tag := t.Index("name"), t.Index("tag")
	words := t.Name == "plants" && name >= 0 && tag >= 0
	if words {
		cols = append(cols[:len(cols):len(cols)], "words")
	}
	qDel := `DELETE FROM ` + t.Name + ` WHERE ` + strings.Join(where, " AND ")
	qIns := `INSERT INTO ` + t.Name + ` (` + strings.Join(cols, ", ") + `) VALUES (?` + strings.Repeat(", ?", len(cols)-1) + `)`
	op := "replace " + t.Name + " rows"
	return db.update(ctx, op, func(ctx context.Context, tx *Tx) error {
		if t.Name == "webhook_subscriptions" {
			db.subs.clear() // the cached counts of enabled subscriptions
		}
		if len(del) > 0 {
			st, err := tx.PrepareContext(ctx, qDel)
			if err != nil {
				return wrap(op, err)
			}
			defer st.Close()
			args := make([]any, t.Key)
			for _, r := range del {
				copy(args, r[:t.Key])
				if _, err := st.ExecContext(ctx, args...); err != nil {
					return wrap(op, err)
				}
			}
		}
		if len(ins) == 0 {
			return nil
		}
		st, err := tx.PrepareContext(ctx, qIns)
		if err != nil {
			return wrap(op, err)
		}
		defer st.Close()
		args := make([]any, len(cols))
		for _, r := range ins {
			for i, v := range r {
				if tm, ok := v.(time.Time); ok {
					v = tm.UnixNano()
				}
				args[i] = v
			}
			if words {
				n, _ := r[name].(string)
				var tp *string
				if s, ok := r[tag].(string); ok {
					tp = &s
				}
				args[len(args)-1] = textsearch.Document(n, tp)
			}
			if _, err := st.ExecContext(ctx, args...); err != nil {
				if isUniqueViolation(err) {
					return fmt.Errorf("sqlite: %s: %w", op, plantstore.ErrExists)
				}
				return wrap(op, err)
			}
		}
		return nil
	})
}

// A DB is a portable.Database: its tables read and written as portable rows
// by copy, export and backups (Snapshot, ReplaceRows).
var _ portable.Database = (*DB)(nil)
