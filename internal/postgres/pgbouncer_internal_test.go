package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore/internal/testkit/pgtest"
)

// TestSettingsInsideTransactions: through PgBouncer in transaction pooling
// mode with one server connection per database, which every client
// shares, the store's statement_timeout bounds each kind of its write
// transactions (a statement alone, one that returns a row, an explicit
// transaction, a group commit), and none of its settings is left on the server connection for
// the pooler's next client: they travel inside each transaction (SET
// LOCAL), not in the startup packet or a session SET.
func TestSettingsInsideTransactions(t *testing.T) {
	t.Parallel()
	bouncer := pgtest.StartPgBouncer(t, pgtest.NewDatabase(t), pgtest.PgBouncerOptions{PoolSize: 1})
	url := bouncer.Via(t, pgtest.NewDatabase(t))
	db := NewDB(url)
	db.Config.TransactionPooler = true
	db.Config.StatementTimeout = 200 * time.Millisecond
	OpenMigrated(t, db)
	ctx := t.Context()

	const slow = `SELECT pg_sleep(2)::text`
	for _, tt := range []struct {
		name string
		run  func() error
	}{
		{"Exec", func() error { _, err := db.exec(ctx, slow); return err }},
		{"WriteOne", func() error { _, err := writeOne(ctx, db, pgx.RowTo[string], slow); return err }},
		{"InTx", func() error {
			return db.inTx(ctx, pgx.ReadCommitted, func(ctx context.Context, tx pgx.Tx) error {
				_, err := tx.Exec(ctx, slow)
				return err
			})
		}},
		{"GroupCommit", func() error {
			b := &pgx.Batch{}
			db.queueBegin(b)
			b.Queue(slow)
			return db.sendTx(ctx, b)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			err := tt.run()
			if got := pgCode(err); got != codeQueryCanceled {
				t.Fatalf("a 2 s statement with statement_timeout 200ms: err = %v (SQLSTATE %q), want SQLSTATE 57014", err, got)
			}
			if took := time.Since(start); took > 1500*time.Millisecond {
				t.Fatalf("cancelled after %v, want about 200ms", took)
			}
		})
	}

	// Another client of the pooler gets the same (only) server connection,
	// with the server's own settings.
	other := adminConn(t, url+"&default_query_exec_mode=simple_protocol")
	for setting, want := range map[string]string{"statement_timeout": "0", "transaction_isolation": "read committed"} {
		var got string
		if err := other.QueryRow(ctx, "SHOW "+setting).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("SHOW %s through the pooler after the store's calls: %q, want the server's %q", setting, got, want)
		}
	}
}

// TestPreparedStatementsNeedNoPooler: without TransactionPooler the store
// prepares named statements per connection, which a transaction pooler
// does not keep: two connections of the store preparing the same
// statement on the pooler's one server connection collide. So the
// pooler's conformance run (TestConformancePgBouncer) would fail without
// it.
func TestPreparedStatementsNeedNoPooler(t *testing.T) {
	t.Parallel()
	bouncer := pgtest.StartPgBouncer(t, pgtest.NewDatabase(t), pgtest.PgBouncerOptions{PoolSize: 1})
	// Migrated directly: migration 11 runs statements of its own besides
	// goose's, which collide the same way through the pooler.
	url := pgtest.NewDatabase(t)
	OpenMigrated(t, NewDB(url))
	db := NewDB(bouncer.Via(t, url))
	ctx := t.Context()
	if err := db.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	a, err := db.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release()
	b, err := db.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	const q = `SELECT count(*) FROM plants WHERE owner = $1`
	var n int
	if err := a.QueryRow(ctx, q, "alice").Scan(&n); err != nil {
		t.Fatalf("first connection: %v", err)
	}
	err = b.QueryRow(ctx, q, "alice").Scan(&n)
	if code := pgCode(err); code != "42P05" && code != "26000" {
		t.Fatalf("second connection, same statement, through the pooler with prepared statements: err = %v, "+
			"want SQLSTATE 42P05 (already exists) or 26000 (does not exist)", err)
	}
}
