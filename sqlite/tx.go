package sqlite

import (
	"context"
	"database/sql"
)

// Tx is the write transaction of one group-commit batch, as one write sees it.
type Tx struct {
	*sql.Tx
	db *DB
}

// Queries of the write path, prepared once on the write connection.
const (
	qSavepoint   = `SAVEPOINT w`
	qRelease     = `RELEASE w`
	qRollbackTo  = `ROLLBACK TO w`
	qInsertPlant = `INSERT INTO plants (owner, id, name, tag, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (owner, id) DO NOTHING`
	qFindPlant   = `SELECT owner, id, name, tag, created_at FROM plants WHERE owner = ? AND id = ?`
	qDeletePlant = `DELETE FROM plants WHERE owner = ? AND id = ?`
	// qFanOut writes the outbox rows of a new plant: one delivery per
	// enabled subscription of its owner, sharing one message id.
	qFanOut = `INSERT INTO webhook_deliveries (message_id, subscription_id, owner, plant_id, payload, state, attempts, next_attempt_at, created_at)
SELECT ?1, id, owner, ?2, ?3, 'pending', 0, ?4, ?4 FROM webhook_subscriptions WHERE owner = ?5 AND disabled_at IS NULL`
)

var hotWrites = []string{qSavepoint, qRelease, qRollbackTo, qInsertPlant, qFindPlant, qDeletePlant, qFanOut}

// prepareWrites prepares the hot write statements on the write connection.
// Before migration the tables may not exist: those stay unprepared until
// Migrate calls it again.
func (db *DB) prepareWrites() {
	stmts := make(map[string]*sql.Stmt, len(hotWrites))
	for _, q := range hotWrites {
		if st, err := db.write.Prepare(q); err == nil {
			stmts[q] = st
		}
	}
	if old := db.writeStmts.Swap(&stmts); old != nil {
		for _, st := range *old {
			st.Close()
		}
	}
}

// exec runs query in the transaction, prepared if it is a hot write.
func (tx *Tx) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st, ok := (*tx.db.writeStmts.Load())[query]; ok {
		return tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return tx.ExecContext(ctx, query, args...)
}

// queryRow runs query in the transaction, prepared if it is a hot write.
func (tx *Tx) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	if st, ok := (*tx.db.writeStmts.Load())[query]; ok {
		return tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return tx.QueryRowContext(ctx, query, args...)
}

// readStmt returns query prepared on the read pool.
func (db *DB) readStmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := db.readStmts.Load(query); ok {
		return st.(*sql.Stmt), nil
	}
	st, err := db.read.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if prev, loaded := db.readStmts.LoadOrStore(query, st); loaded {
		st.Close()
		return prev.(*sql.Stmt), nil
	}
	return st, nil
}

// readContext bounds a read by the DB's timeout.
func (db *DB) readContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, db.opTimeout())
}

// DefaultMaxBatch bounds how many writes share one commit.
const DefaultMaxBatch = 256

// writeOp is one write waiting for the committer, and its outcome.
type writeOp struct {
	fn  func(ctx context.Context, tx *Tx) error
	err error
}

// update runs fn as part of a write transaction and returns once that
// transaction is committed (with the default durability: fsynced).
//
// Group commit: one goroutine, the committer, owns the write connection.
// Writes queue up while it commits; it takes every queued write (up to
// MaxBatch) into one transaction, runs each inside its own SAVEPOINT so a
// failing write is rolled back alone, and commits once: one fsync for the
// whole batch. A write alone in the queue is committed at once, so a lone
// client waits for no one (see internal/groupcommit).
//
// fn must use the ctx it is given, not its caller's: cancelling a request
// must not interrupt a statement of a shared transaction (SQLite would roll
// the whole transaction back). A write whose caller has gone away, or
// whose wait passed OpTimeout, before its turn is skipped. op names the
// write in errors.
func (db *DB) update(ctx context.Context, op string, fn func(ctx context.Context, tx *Tx) error) error {
	ctx, cancel := context.WithTimeout(ctx, db.opTimeout())
	defer cancel()
	w := &writeOp{fn: fn}
	if err := db.queue.Do(ctx, w); err != nil {
		return wrap(op, err)
	}
	return w.err
}

// commit is the committer's Apply: it runs a batch in one transaction and
// stores every write's outcome in it.
func (db *DB) commit(batch []*writeOp) {
	if err := db.runBatch(batch); err != nil {
		for _, w := range batch {
			if w.err == nil {
				w.err = err
			}
		}
	}
}

func (db *DB) runBatch(batch []*writeOp) error {
	ctx := context.Background()
	sqlTx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return wrap("begin", err)
	}
	defer sqlTx.Rollback()
	tx := &Tx{Tx: sqlTx, db: db}
	if len(batch) == 1 {
		if batch[0].err = batch[0].fn(ctx, tx); batch[0].err != nil {
			return nil // nothing else to keep: the deferred rollback undoes it
		}
	} else {
		for _, w := range batch {
			if _, err := tx.exec(ctx, qSavepoint); err != nil {
				return wrap("savepoint", err)
			}
			if w.err = w.fn(ctx, tx); w.err != nil {
				if _, err := tx.exec(ctx, qRollbackTo); err != nil {
					return wrap("rollback to savepoint", err)
				}
			}
			if _, err := tx.exec(ctx, qRelease); err != nil {
				return wrap("release savepoint", err)
			}
		}
	}
	if err := sqlTx.Commit(); err != nil {
		return wrap("commit", err)
	}
	return nil
}

// scanner is a *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }
