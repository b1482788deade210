package postgres

import (
	"context"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Session settings. The store sends no setting of its own in
// the startup packet, so that a transaction-mode pooler with its stock
// settings (PgBouncer's ignore_startup_parameters = extra_float_digits
// answers any other with FATAL 08P01) takes its connections, and no setting
// outlives the transaction that needs it: a pooler hands the server
// connection to another client between transactions. Every transaction of
// the store that writes carries its settings itself:
//
//   - statement_timeout (Config.StatementTimeout): SET LOCAL after BEGIN
//     (beginSQL, localSettings), or set_config(..., true) as the first
//     statement of a pipeline that is one implicit transaction
//     (withSettings): SET LOCAL there would draw a warning (25P01) and
//     have the same effect;
//   - the isolation level: named by each BEGIN; the group commit, which
//     needs READ COMMITTED, runs explicit transactions (see batch.go), so
//     the session default no longer matters.
//
// Reads run alone, with the server's settings: each is one bounded index
// read (a key, or a range with a LIMIT) that waits for no lock, and
// --db-timeout (OpTimeout) bounds the caller's wait; one more
// statement per read would cost every read about 30 allocations and a
// round of work on the server (measured with BenchmarkFindPlant: 22 -> 53
// allocations). Migrations (goose, over database/sql) also run with the
// server's statement_timeout, which a long migration may need anyway.

// settings are the statements that give a transaction the store's session
// settings; empty strings when there is nothing to set.
type settings struct {
	local    string // in an explicit transaction: SET LOCAL ...
	implicit string // first in a pipeline without BEGIN: SELECT set_config(..., true)
}

// newSettings returns the settings of c.
func newSettings(c Config) settings {
	if c.StatementTimeout <= 0 {
		return settings{}
	}
	ms := strconv.FormatInt(c.StatementTimeout.Milliseconds(), 10)
	return settings{
		local:    `SET LOCAL statement_timeout = ` + ms,
		implicit: `SELECT set_config('statement_timeout', '` + ms + `', true)`,
	}
}

// beginSQL begins a transaction at iso with the session settings, in one
// round trip (pgx runs a query without arguments with the simple protocol,
// which takes several statements).
func (db *DB) beginSQL(iso pgx.TxIsoLevel) string {
	sql := `BEGIN ISOLATION LEVEL ` + string(iso)
	if db.settings.local != "" {
		sql += `; ` + db.settings.local
	}
	return sql
}

// withSettings puts the session settings first in b, a pipeline sent as
// one implicit transaction, and returns b.
func (db *DB) withSettings(b *pgx.Batch) *pgx.Batch {
	if db.settings.implicit != "" {
		b.QueuedQueries = append([]*pgx.QueuedQuery{{SQL: db.settings.implicit}}, b.QueuedQueries...)
	}
	return b
}

// queueBegin queues, first in b, BEGIN at READ COMMITTED and the session
// settings: b becomes one explicit transaction that b's last query must
// end (COMMIT).
func (db *DB) queueBegin(b *pgx.Batch) {
	b.Queue(`BEGIN ISOLATION LEVEL READ COMMITTED`)
	if db.settings.local != "" {
		b.Queue(db.settings.local)
	}
}

// send sends b, a write, after the session settings, as one implicit
// transaction on a connection of the pool: one round trip. A warning while
// it commits fails it (see onConn).
func (db *DB) send(ctx context.Context, b *pgx.Batch) error {
	return db.onConn(ctx, true, func(c *pgx.Conn) error {
		return c.SendBatch(ctx, db.withSettings(b)).Close()
	})
}

// setsExecMode reports whether the connection string chooses pgx's query
// execution mode itself (default_query_exec_mode), which then wins over
// Config.TransactionPooler.
func setsExecMode(connString string) bool {
	return strings.Contains(connString, "default_query_exec_mode=")
}
