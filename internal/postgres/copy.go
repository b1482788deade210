package postgres

import (
	"context"
	"fmt"
	"iter"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/portable"
)

// The portable rows (portable.TableStore) of the database: what copy,
// export and backups read and write.
var _ portable.Database = (*DB)(nil)

// Snapshot starts a REPEATABLE READ, READ ONLY transaction on a connection
// of its own: every read of it sees the database as of its first statement.
// Its statements have no statement_timeout (a table is one streamed query).
func (db *DB) Snapshot(ctx context.Context) (portable.Snapshot, error) {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return nil, wrap("snapshot", err)
	}
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		conn.Release()
		return nil, wrap("snapshot", err)
	}
	// The snapshot is taken by the first query (SET is not one): now.
	if _, err := tx.Exec(ctx, `SET LOCAL statement_timeout = 0; SELECT 1`); err != nil {
		tx.Rollback(ctx)
		conn.Release()
		return nil, wrap("snapshot", err)
	}
	return &snapshot{conn: conn, tx: tx}, nil
}

type snapshot struct {
	conn *pgxpool.Conn
	tx   pgx.Tx
}

func (s *snapshot) Close() error {
	err := s.tx.Rollback(context.Background())
	s.conn.Release()
	return err
}

// orderBy is t's key order: text compared by bytes ("C"), as SQLite does,
// whatever the database's collation.
func orderBy(t *portable.Table) string {
	keys := make([]string, t.Key)
	for i, c := range t.Columns[:t.Key] {
		keys[i] = c.Name
		if c.Type == portable.TypeText {
			keys[i] += ` COLLATE "C"`
		}
	}
	return strings.Join(keys, ", ")
}

func (s *snapshot) Count(ctx context.Context, t *portable.Table) (n int64, err error) {
	err = s.tx.QueryRow(ctx, `SELECT COUNT(*) FROM `+t.Name).Scan(&n)
	return n, wrap("count "+t.Name, err)
}

// Rows streams t in key order, one query.
func (s *snapshot) Rows(ctx context.Context, t *portable.Table) iter.Seq2[portable.Row, error] {
	q := `SELECT ` + strings.Join(t.ColumnNames(), ", ") + ` FROM ` + t.Name + ` ORDER BY ` + orderBy(t)
	wrapRead := func(err error) error { return wrap("read "+t.Name, err) }
	return func(yield func(portable.Row, error) bool) {
		rows, err := s.tx.Query(ctx, q)
		if err != nil {
			yield(nil, wrapRead(err))
			return
		}
		defer rows.Close()
		t.Scan(rows, wrapRead)(yield)
	}
}

// ReplaceRows deletes by key (one batch of statements) and inserts with
// COPY, in one transaction. Inserted subscriptions' owners get their
// webhook_owners row (the row a subscription create locks).
func (db *DB) ReplaceRows(ctx context.Context, t *portable.Table, del, ins []portable.Row) error {
	names := t.ColumnNames()
	where := make([]string, t.Key)
	for i, n := range names[:t.Key] {
		where[i] = fmt.Sprintf("%s = $%d", n, i+1)
	}
	qDel := `DELETE FROM ` + t.Name + ` WHERE ` + strings.Join(where, " AND ")
	op := "replace " + t.Name + " rows"
	err := db.inTx(ctx, pgx.ReadCommitted, func(ctx context.Context, tx pgx.Tx) error {
		if len(del) > 0 {
			b := &pgx.Batch{}
			for _, r := range del {
				b.Queue(qDel, r[:t.Key]...)
			}
			if err := tx.SendBatch(ctx, b).Close(); err != nil {
				return err
			}
		}
		if len(ins) == 0 {
			return nil
		}
		rows := make([][]any, len(ins))
		for i, r := range ins {
			rows[i] = r
		}
		cols := names
		if t.Name == "plants" {
			cols, rows = withSearch(t, rows)
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{t.Name}, cols, pgx.CopyFromRows(rows)); err != nil {
			return err
		}
		if t.Name != "webhook_subscriptions" {
			return nil
		}
		owners, at := make([]string, len(ins)), t.Index("owner")
		for i, r := range ins {
			owners[i] = r[at].(string)
		}
		_, err := tx.Exec(ctx, `INSERT INTO webhook_owners (owner) SELECT DISTINCT unnest($1::text[]) ON CONFLICT DO NOTHING`, owners)
		return err
	})
	if err := existsIfDuplicate(err); err == plantstore.ErrExists {
		return fmt.Errorf("postgres: %s: %w", op, err)
	}
	return wrap(op, err)
}

// withSearch returns the columns and rows of plants rows of t with their
// search column, which the portable schema leaves out (the index, made from
// name and tag: search.go), and updated_at, created_at's, if t has none.
func withSearch(t *portable.Table, rows [][]any) ([]string, [][]any) {
	cols := append(t.ColumnNames(), "search")
	name, tag, created, updated := t.Index("name"), t.Index("tag"), t.Index("created_at"), t.Index("updated_at")
	if updated < 0 {
		cols = append(cols, "updated_at")
	}
	out := make([][]any, len(rows))
	for i, r := range rows {
		row := append(make([]any, 0, len(cols)), r...)
		n, _ := r[name].(string)
		var tg *string
		if s, ok := r[tag].(string); ok {
			tg = &s
		}
		row = append(row, searchVector(n, tg))
		if updated < 0 {
			row = append(row, r[created])
		}
		out[i] = row
	}
	return cols, out
}

// searchVector is the search vector of a plant with name and tag, as a
// value (COPY takes no expression): the lexemes searchOf ... searchEnd make.
func searchVector(name string, tag *string) pgtype.TSVector {
	v := pgtype.TSVector{Valid: true}
	if words := searchText(name, tag); words != "" {
		for _, w := range strings.Split(words, " ") {
			v.Lexemes = append(v.Lexemes, pgtype.TSVectorLexeme{Word: w})
		}
	}
	return v
}
