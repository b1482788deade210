// Package sqlite implements the plantstore services on an embedded SQLite
// database file (github.com/mattn/go-sqlite3, WAL mode).
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/mattn/go-sqlite3" // registers the "sqlite3" driver
	"github.com/pressly/goose/v3"

	"github.com/plantstore/plantstore"
)

//go:embed migration/*.sql
var migrationFS embed.FS

// Durability selects how hard a commit pushes to disk.
type Durability string

// Durability modes.
const (
	// DurabilityFull fsyncs the WAL on every commit: an acknowledged write
	// survives a process crash and a power cut (synchronous=FULL).
	DurabilityFull Durability = "full"
	// DurabilityRelaxed fsyncs only at checkpoints: survives a process crash,
	// may lose the last commits on power loss (synchronous=NORMAL).
	DurabilityRelaxed Durability = "relaxed"
)

// timeLayout is how timestamps are stored: UTC, fixed width, sortable.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

// DB is a SQLite database. Writes go through one connection (SQLite has one
// writer at a time) so they queue in Go rather than spin on the file lock;
// reads use a pool of their own. Every write runs through DB.update, which
// groups concurrent writes into one commit (see update).
type DB struct {
	Path       string
	Durability Durability

	// Now returns the current time; tests replace it.
	Now func() time.Time

	// MaxBatch bounds how many writes share one commit (0: DefaultMaxBatch).
	MaxBatch int
	// OnCommit, if set, is called by the committer after each batch with
	// the number of writes in it and how long the transaction took (for
	// metrics and tests). Set it before Open.
	OnCommit func(writes int, took time.Duration)

	write *sql.DB
	read  *sql.DB

	// Prepared statements: the write connection's are prepared in Open for
	// the queries of the hot write path (the committer holds the only write
	// connection, so nothing can be prepared on it later); the read pool's
	// are prepared on first use.
	writeStmts atomic.Pointer[map[string]*sql.Stmt]
	readStmts  sync.Map // query -> *sql.Stmt

	writes  chan *writeOp
	closing chan struct{} // closed by Close
	stopped chan struct{} // closed when the committer has finished
	closeMu sync.RWMutex  // held for reading while queueing a write
	closed  bool
}

var _ plantstore.Store = (*DB)(nil)

// NewDB returns a DB for the file at path; call Open before use.
func NewDB(path string) *DB {
	return &DB{Path: path, Durability: DurabilityFull, Now: time.Now}
}

// Open creates the file's directory if needed and opens the connection
// pools. It does not migrate: call Migrate (or check with SchemaStatus).
func (db *DB) Open() error {
	if db.Path == "" {
		return errors.New("sqlite: path required")
	}
	if dir := filepath.Dir(db.Path); dir != "" {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return fmt.Errorf("sqlite: create directory: %w", err)
		}
	}
	sync := "FULL"
	switch db.Durability {
	case DurabilityFull, "":
	case DurabilityRelaxed:
		sync = "NORMAL"
	default:
		return fmt.Errorf("sqlite: unknown durability %q", db.Durability)
	}
	q := url.Values{}
	q.Set("_journal_mode", "WAL")
	q.Set("_synchronous", sync)
	q.Set("_busy_timeout", "10000")
	q.Set("_foreign_keys", "on")
	q.Set("_txlock", "immediate")
	dsn := "file:" + url.PathEscape(db.Path) + "?" + q.Encode()

	var err error
	if db.write, err = sql.Open("sqlite3", dsn); err != nil {
		return fmt.Errorf("sqlite: open: %w", err)
	}
	db.write.SetMaxOpenConns(1)
	db.write.SetMaxIdleConns(1)
	db.write.SetConnMaxLifetime(0)
	db.write.SetConnMaxIdleTime(0)

	q.Set("_txlock", "deferred")
	q.Set("_query_only", "true")
	if db.read, err = sql.Open("sqlite3", "file:"+url.PathEscape(db.Path)+"?"+q.Encode()); err != nil {
		return fmt.Errorf("sqlite: open: %w", err)
	}
	db.read.SetMaxOpenConns(8)
	db.read.SetMaxIdleConns(8)
	db.read.SetConnMaxIdleTime(0)
	db.read.SetConnMaxLifetime(0)

	// Open the writer now so a bad path or a locked, unreadable file fails
	// here rather than on the first request. Switching a new file to WAL
	// needs it alone, so processes opening one file at once take turns.
	unlock, err := lockFile(db.Path)
	if err != nil {
		return err
	}
	defer unlock()
	if err := db.write.Ping(); err != nil {
		return fmt.Errorf("sqlite: open %s: %w", db.Path, err)
	}
	db.prepareWrites()
	db.writes = make(chan *writeOp, 4*DefaultMaxBatch)
	db.closing = make(chan struct{})
	db.stopped = make(chan struct{})
	go db.commitLoop()
	return nil
}

// Close commits the writes already queued, then closes the database.
// Writes that arrive later fail.
func (db *DB) Close() error {
	if db.closing != nil {
		db.closeMu.Lock()
		if !db.closed {
			db.closed = true
			close(db.closing)
		}
		db.closeMu.Unlock()
		<-db.stopped
	}
	var errs []error
	if stmts := db.writeStmts.Load(); stmts != nil {
		for _, st := range *stmts {
			errs = append(errs, st.Close())
		}
	}
	db.readStmts.Range(func(_, st any) bool {
		errs = append(errs, st.(*sql.Stmt).Close())
		return true
	})
	if db.read != nil {
		errs = append(errs, db.read.Close())
	}
	if db.write != nil {
		errs = append(errs, db.write.Close())
	}
	return errors.Join(errs...)
}

// Ping checks that the database answers a query.
func (db *DB) Ping(ctx context.Context) error {
	var one int
	if err := db.read.QueryRowContext(ctx, `SELECT 1`).Scan(&one); err != nil {
		return fmt.Errorf("sqlite: ping: %w", err)
	}
	return nil
}

func (db *DB) provider() (*goose.Provider, error) {
	sub, err := fsSub()
	if err != nil {
		return nil, err
	}
	return goose.NewProvider(goose.DialectSQLite3, db.write, sub)
}

// SchemaStatus returns the schema version of the database and the newest one
// this binary knows.
func (db *DB) SchemaStatus(ctx context.Context) (current, known int64, err error) {
	p, err := db.provider()
	if err != nil {
		return 0, 0, err
	}
	current, known, err = p.GetVersions(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("sqlite: schema version: %w", err)
	}
	return current, known, nil
}

// Migrate applies pending migrations, each in its own transaction, and
// returns how many it applied. It refuses a database whose schema is newer
// than this binary knows.
func (db *DB) Migrate(ctx context.Context) (int, error) {
	unlock, err := lockFile(db.Path)
	if err != nil {
		return 0, err
	}
	defer unlock()
	p, err := db.provider()
	if err != nil {
		return 0, err
	}
	current, known, err := p.GetVersions(ctx)
	if err != nil {
		return 0, fmt.Errorf("sqlite: schema version: %w", err)
	}
	if current > known {
		return 0, &plantstore.SchemaTooNewError{Current: current, Known: known}
	}
	res, err := p.Up(ctx)
	if err != nil {
		return 0, fmt.Errorf("sqlite: migrate: %w", err)
	}
	if len(res) > 0 {
		db.prepareWrites() // the tables may be new
	}
	return len(res), nil
}

// Tx is a transaction with the time fixed at its start.
type Tx struct {
	*sql.Tx
	now time.Time
	db  *DB
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

// DefaultMaxBatch bounds how many writes share one commit.
const DefaultMaxBatch = 256

// errClosed answers writes that arrive after Close.
var errClosed = errors.New("sqlite: database is closed")

// writeOp is one write waiting for the committer.
type writeOp struct {
	ctx  context.Context
	fn   func(ctx context.Context, tx *Tx) error
	done chan error
}

// update runs fn as part of a write transaction and returns once that
// transaction is committed (with the default durability: fsynced).
//
// Group commit: one goroutine, the committer, owns the write connection.
// Writes queue up while it commits; it takes every queued write (up to
// MaxBatch) into one transaction, runs each inside its own SAVEPOINT so a
// failing write is rolled back alone, and commits once: one fsync for the
// whole batch. A write alone in the queue is committed at once, so a lone
// client waits for no one.
//
// fn must use the ctx it is given, not its caller's: cancelling a request
// must not interrupt a statement of a shared transaction (SQLite would roll
// the whole transaction back). A write whose caller has gone away before
// its turn is skipped.
func (db *DB) update(ctx context.Context, fn func(ctx context.Context, tx *Tx) error) error {
	op := &writeOp{ctx: ctx, fn: fn, done: make(chan error, 1)}
	// The read lock keeps Close from completing while a write is being
	// queued, so every queued write is seen by the committer's final drain.
	db.closeMu.RLock()
	if db.closed {
		db.closeMu.RUnlock()
		return errClosed
	}
	select {
	case db.writes <- op:
	case <-ctx.Done():
		db.closeMu.RUnlock()
		return ctx.Err()
	}
	db.closeMu.RUnlock()
	// Wait for the outcome even if ctx ends now: the write may commit.
	return <-op.done
}

// commitLoop is the committer: it batches queued writes until Close.
func (db *DB) commitLoop() {
	defer close(db.stopped)
	maxBatch := db.MaxBatch
	if maxBatch <= 0 {
		maxBatch = DefaultMaxBatch
	}
	batch := make([]*writeOp, 0, maxBatch)
	for {
		var op *writeOp
		select {
		case op = <-db.writes:
		case <-db.closing:
			// Finish what was queued before Close.
			for {
				select {
				case op := <-db.writes:
					db.commit([]*writeOp{op})
				default:
					return
				}
			}
		}
		batch = append(batch[:0], op)
	fill:
		for len(batch) < maxBatch {
			select {
			case op := <-db.writes:
				batch = append(batch, op)
			default:
				break fill
			}
		}
		db.commit(batch)
	}
}

// commit runs a batch in one transaction and answers every write in it.
func (db *DB) commit(batch []*writeOp) {
	errs := make([]error, len(batch))
	start := time.Now()
	err := db.runBatch(batch, errs)
	if db.OnCommit != nil {
		db.OnCommit(len(batch), time.Since(start))
	}
	for i, op := range batch {
		if err != nil && errs[i] == nil {
			errs[i] = err
		}
		op.done <- errs[i]
	}
}

func (db *DB) runBatch(batch []*writeOp, errs []error) error {
	ctx := context.Background()
	sqlTx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: begin: %w", err)
	}
	defer sqlTx.Rollback()
	tx := &Tx{Tx: sqlTx, now: db.Now().UTC(), db: db}
	single := len(batch) == 1
	for i, op := range batch {
		if err := op.ctx.Err(); err != nil {
			errs[i] = err
			continue
		}
		if single {
			errs[i] = op.fn(ctx, tx)
			if errs[i] != nil {
				return nil // nothing else to keep: the deferred rollback undoes it
			}
			continue
		}
		if _, err := tx.exec(ctx, qSavepoint); err != nil {
			return fmt.Errorf("sqlite: savepoint: %w", err)
		}
		if errs[i] = op.fn(ctx, tx); errs[i] != nil {
			if _, err := tx.exec(ctx, qRollbackTo); err != nil {
				return fmt.Errorf("sqlite: rollback to savepoint: %w", err)
			}
		}
		if _, err := tx.exec(ctx, qRelease); err != nil {
			return fmt.Errorf("sqlite: release savepoint: %w", err)
		}
	}
	if err := sqlTx.Commit(); err != nil {
		return fmt.Errorf("sqlite: commit: %w", err)
	}
	return nil
}

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

func parseTime(s string) (time.Time, error) { return time.Parse(timeLayout, s) }

func parseNullTime(s sql.NullString) (*time.Time, error) {
	if !s.Valid {
		return nil, nil
	}
	t, err := parseTime(s.String)
	if err != nil {
		return nil, err
	}
	return &t, nil
}

func nullTime(t *time.Time) sql.NullString {
	if t == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: formatTime(*t), Valid: true}
}

func fsSub() (fs.FS, error) {
	sub, err := fs.Sub(migrationFS, "migration")
	if err != nil {
		return nil, fmt.Errorf("sqlite: migrations: %w", err)
	}
	return sub, nil
}
