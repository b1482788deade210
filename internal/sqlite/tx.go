package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"time"

	"github.com/plantstore/plantstore"
)

// Tx is the write transaction of one group-commit batch, as a generic
// write (DB.update) sees it: database/sql's methods on the write
// connection, inside the transaction the committer began on it (see
// writer.go). A write must not end the transaction itself.
type Tx struct {
	*sql.Conn
	db *DB
}

// Queries of the write path.
const (
	qFindPlant          = `SELECT ` + plantColumns + ` FROM plants WHERE owner = ? AND id = ?`
	qDeletePlant        = `DELETE FROM plants WHERE owner = ? AND id = ? RETURNING ` + plantColumns
	qCountSubscriptions = `SELECT COUNT(*) FROM webhook_subscriptions WHERE owner = ? AND disabled_at IS NULL`
	qDataVersion        = `PRAGMA data_version`
)

// raw runs f with the committer's writer (writer.go), in the transaction.
func (tx *Tx) raw(f func(w *writer) error) error { return tx.db.raw(tx.Conn, f) }

// exec runs query in the transaction (the driver caches its statement).
func (tx *Tx) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return tx.ExecContext(ctx, query, args...)
}

// query runs query in the transaction.
func (tx *Tx) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return tx.QueryContext(ctx, query, args...)
}

// queryRow runs query in the transaction.
func (tx *Tx) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	return tx.QueryRowContext(ctx, query, args...)
}

// readStmt returns query prepared on the read pool.
func (db *DB) readStmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if err := db.health.checkMoved(); err != nil {
		return nil, err
	}
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

// scanner is a *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

// readContext bounds a read by the DB's timeout.
func (db *DB) readContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, db.opTimeout())
}

// opKind tells the committer how to apply a write.
type opKind uint8

const (
	opFunc         opKind = iota // run fn
	opInsertPlant                // insert plant (runs of them share statements)
	opDeletePlant                // delete plant
	opInsertPlants               // insert a batch of plants, all or none (insertBatch)
)

// writeOp is one write waiting for the committer, and its outcome.
type writeOp struct {
	kind  opKind
	fn    func(ctx context.Context, tx *Tx) error // opFunc
	plant *plantstore.Plant                       // opInsertPlant; opDeletePlant: Owner and ID
	event *plantstore.Event                       // opInsertPlant, opDeletePlant (nil: none)
	vals  plantVals                               // opInsertPlant: the plant's values, boxed by insertChunk

	plants  []*plantstore.Plant       // opInsertPlants: the batch (one owner, distinct ids)
	events  []*plantstore.Event       // opInsertPlants: each plant's event (nil: none)
	results []plantstore.InsertResult // opInsertPlants: each plant's outcome

	queued int64 // when it was queued (sinceEpoch), set by do

	err        error
	existing   *plantstore.Plant // opInsertPlant: the row that had the key; opDeletePlant: the row deleted
	seq        int64             // the event's seq (0: none written)
	deliveries int               // the event's outbox rows
	inserted   bool              // opInsertPlant: the row was stored
}

// failed tells a write that failed for the storage or the code: a batch
// with one is a failed span.
func (op *writeOp) failed() bool { return plantstore.FailedWrite(op.err) }

func (w *writeOp) reset() {
	w.err, w.existing, w.seq, w.deliveries, w.inserted, w.results = nil, nil, 0, 0, false, nil
}

func (w *writeOp) name() string {
	switch w.kind {
	case opInsertPlant:
		return "insert plant"
	case opDeletePlant:
		return "delete plant"
	case opInsertPlants:
		return "insert plants"
	}
	return "write"
}

// opPool recycles writeOps: a create costs no allocation for its op.
var opPool = sync.Pool{New: func() any { return new(writeOp) }}

// update runs fn as part of a write transaction and returns once that
// transaction is committed (with the default durability: fsynced). op
// names the write in errors.
//
// fn must use the ctx it is given, not its caller's: cancelling a request
// must not interrupt a statement of a shared transaction (SQLite would roll
// the whole transaction back).
func (db *DB) update(ctx context.Context, op string, fn func(ctx context.Context, tx *Tx) error) error {
	w := &writeOp{kind: opFunc, fn: fn}
	if err := db.do(ctx, w); err != nil {
		return wrap(op, err)
	}
	return w.err
}

// do queues w for the committer and waits for its outcome, at most
// OpTimeout for its batch to begin.
//
// Group commit: one goroutine, the committer, owns the write connection.
// Writes queue up while it commits; it takes every queued write (up to
// MaxBatch) into one transaction and commits once: one fsync for the whole
// batch. A write alone in the queue is committed at once, so a lone client
// waits for no one (see internal/groupcommit and commit). A write whose
// caller has gone away, or whose wait passed OpTimeout, before its turn is
// skipped.
func (db *DB) do(ctx context.Context, w *writeOp) error {
	now := time.Now()
	w.queued = sinceEpoch(now)
	return db.queue.DoBy(ctx, now.Add(db.opTimeout()), w)
}

// DefaultMaxBatch bounds how many writes share one commit.
const DefaultMaxBatch = 256

// Errors of a batch, as commit sees them.
var (
	// errRedo: an op failed unexpectedly; the batch was rolled back and
	// each op must run alone, so that only the bad one fails.
	errRedo = errors.New("sqlite: redo the batch's writes one by one")
	// errTxLost: a write ended the shared transaction (it ran COMMIT or
	// ROLLBACK itself); what was written is in an unknown state.
	errTxLost = errors.New("sqlite: a write ended the batch's transaction")
)

// commit is the committer's Apply: it runs a batch in one transaction and
// stores every write's outcome in it.
//
// The writes run in queue order with no savepoint each: a create whose key
// is taken, or a delete of a missing row, writes nothing, so nothing needs
// undoing. An unexpected error of one write (a failed statement, or any
// error of a generic write, which may have written half) rolls the whole
// batch back, and then each write runs alone in a transaction of its own,
// so only the bad one fails. When the storage itself fails (disk full, I/O
// error, busy past the timeout) or the commit does, every write of the
// batch gets that error: nothing of it was kept, and running each alone
// would only repeat the failure. When the database file is found moved
// after the commit (health.go), every write gets ErrMoved: what it wrote is
// in a file no longer at the path.
//
// While it runs, the enqueue time of the batch's first (oldest) write is
// what Ping reads as the age of the oldest write waiting; a batch that
// failed for the storage is recorded for Ping, until one commits.
func (db *DB) commit(batch []*writeOp) {
	db.health.oldest.Store(batch[0].queued)
	defer db.health.oldest.Store(0)
	err := db.runBatch(batch)
	if errors.Is(err, errRedo) {
		for _, w := range batch {
			w.reset()
			err := db.runBatch([]*writeOp{w})
			if err != nil && w.err == nil {
				w.err = err
			}
			db.recordFailure(err)
		}
		return
	}
	db.recordFailure(err)
	if err != nil {
		for _, w := range batch {
			if w.err == nil || errors.Is(err, errTxLost) {
				w.err = err
			}
		}
	}
}

// runBatch applies ops in one transaction. A nil error means it committed
// (each op's own outcome is in the op); errRedo means it was rolled back
// because an op failed unexpectedly, in a batch of more than one; any other
// error means nothing was kept (ErrMoved after the commit: it was kept in a
// file that is no longer at the path).
func (db *DB) runBatch(ops []*writeOp) (err error) {
	if len(ops) == 0 {
		return nil
	}
	if err := db.health.checkMoved(); err != nil {
		return wrap("begin", err)
	}
	ctx := context.Background()
	conn, err := db.write.Conn(ctx)
	if err != nil {
		return wrap("begin", err)
	}
	defer conn.Close()
	began := false
	err = db.raw(conn, func(w *writer) error {
		if err := w.begin(); err != nil {
			return wrap("begin", err)
		}
		began = true
		return db.subs.check(w)
	})
	committed := false
	if began {
		defer func() {
			if !committed {
				db.raw(conn, (*writer).rollback)
				db.subs.clear() // its changes to the counts were not kept
			}
		}()
	}
	if err != nil {
		return err
	}
	tx := &Tx{Conn: conn, db: db}
	alone := len(ops) == 1
	for i := 0; i < len(ops); {
		w := ops[i]
		switch w.kind {
		case opInsertPlant, opDeletePlant, opInsertPlants:
			// A run of plant writes: on the writer, in one Raw call.
			j := i + 1
			for j < len(ops) && ops[j].kind != opFunc {
				j++
			}
			var failed error
			err := db.raw(conn, func(wr *writer) error {
				failed = db.plantWrites(wr, ops[i:j], alone)
				return nil
			})
			if err == nil {
				err = failed
			}
			if err != nil {
				return err
			}
			if alone && w.failed() {
				return nil // its error is its own; the deferred rollback undoes what it wrote
			}
			i = j
			continue
		case opFunc:
			if w.err = w.fn(ctx, tx); w.err != nil {
				if alone {
					if unavailable(w.err) {
						db.health.fail(w.err) // its error, but the storage's too
					}
					return nil // its error is its own; the deferred rollback undoes it
				}
				return errRedo
			}
			if db.txLost(conn) {
				return errTxLost
			}
		}
		i++
	}
	if err := db.raw(conn, (*writer).commit); err != nil {
		return wrap("commit", err)
	}
	committed = true
	// Answer nothing before knowing that the commit went into the file at
	// the path: after a delete or a rename it went into an orphan.
	if err := db.health.checkFiles(); err != nil {
		return wrap("commit", err)
	}
	db.health.committed()
	return nil
}

// plantWrites applies a run of plant writes (creates and deletes) of a
// batch on the writer: consecutive creates together (insertPlants), each
// delete alone. Its error is runBatch's (see failed).
func (db *DB) plantWrites(wr *writer, ops []*writeOp, alone bool) error {
	for i := 0; i < len(ops); {
		w := ops[i]
		if w.kind == opInsertPlant {
			j := i + 1
			for j < len(ops) && ops[j].kind == opInsertPlant {
				j++
			}
			if err := db.insertPlants(wr, ops[i:j]); err != nil {
				return db.failed(alone, ops[i:j], err)
			}
			i = j
			continue
		}
		if w.kind == opInsertPlants {
			if err := db.insertBatch(wr, w); err != nil {
				return db.failed(alone, ops[i:i+1], err)
			}
			i++
			continue
		}
		old, err := deletePlant(wr, w.plant.Owner, w.plant.ID)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			w.err, err = plantstore.ErrNotFound, nil
		case err == nil:
			w.existing = old
			if w.event != nil {
				w.seq, w.deliveries, err = db.writeEvent(wr, w.event, old)
			}
		}
		if err != nil {
			return db.failed(alone, ops[i:i+1], err)
		}
		i++
	}
	return nil
}

// recordFailure records the error of a batch (runBatch) for Ping when it is
// the storage's: not errRedo (a write's own failure) nor errTxLost.
func (db *DB) recordFailure(err error) {
	if err != nil && !errors.Is(err, errRedo) && !errors.Is(err, errTxLost) {
		db.health.fail(err)
	}
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// failed decides what an unexpected error of ops means for the batch:
// alone, it is the op's own (and the transaction is rolled back); in a
// batch, the batch is redone op by op, unless the storage cannot serve,
// which fails the batch.
func (db *DB) failed(alone bool, ops []*writeOp, err error) error {
	err = wrap(ops[0].name(), err)
	switch {
	case unavailable(err):
		return err
	case alone:
		ops[0].err = err
		return nil
	}
	return errRedo
}

// txLost reports whether the transaction has ended under a generic write's
// feet (it ran COMMIT or ROLLBACK itself): the connection is back in
// autocommit mode. (A driver that cannot tell is asked with BEGIN, which
// fails inside a transaction and succeeds only outside one; the
// transaction it then begins is ended by runBatch's rollback.) Only
// generic writes are checked: the plant writes' statements cannot end a
// transaction.
func (db *DB) txLost(conn *sql.Conn) bool {
	lost := false
	err := db.raw(conn, func(w *writer) error {
		auto, ok := w.autoCommit()
		if !ok {
			w.reset()
			auto = w.exec(`BEGIN`) == nil
		}
		lost = auto
		return nil
	})
	return err != nil || lost
}
