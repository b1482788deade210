// Package postgres is the PostgreSQL row store: it implements
// plantstore.Backend on PostgreSQL (and PostgreSQL-compatible engines such
// as CockroachDB) through github.com/jackc/pgx/v5. Rows in, rows out,
// sentinel errors (plantstore.ErrNotFound, ErrExists, ErrContended,
// ErrUnavailable), group commit of plant writes, bounded retries of
// serialization failures and deadlocks, a timeout on every call, and driver
// code: nothing else. Every rule a client sees is the service layer's, and
// every timestamp comes from the caller.
//
// A write is acknowledged only when its commit is known to have taken
// effect, and run again only when its transaction is known to have
// committed nothing (outcome.go); a server that goes away or turns
// read-only makes the pool drop its connections at once, so that a
// multi-host URL finds the new primary after a failover (failover.go); the
// settings a transaction needs travel inside it, so that PgBouncer in
// transaction mode takes the connections (session.go).
//
// Any number of plantstore replicas can share one database: what must hold
// across them (one row per key, the first token, one claim per delivery) is
// enforced by the database, not by process memory.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"net"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/groupcommit"
	"github.com/plantstore/plantstore/internal/storeopt"
)

//go:embed migration/*.sql
var migrationFS embed.FS

// Defaults for Config.
const (
	DefaultMaxConns         = 16
	DefaultStatementTimeout = 5 * time.Second
	DefaultConnectTimeout   = 3 * time.Second
	DefaultOpTimeout        = storeopt.DefaultOpTimeout // the same on every backend
	// maxAttempts bounds the tries of a transaction that failed with a
	// serialization failure (40001) or a deadlock (40P01).
	maxAttempts = 5
)

// Config tunes the connection pool.
type Config struct {
	MaxConns         int32         // pool size per replica
	MinConns         int32         // connections kept open when idle
	StatementTimeout time.Duration // server-side limit per statement (statement_timeout)
	ConnectTimeout   time.Duration // limit to open one connection
	// TransactionPooler says that the URL reaches PostgreSQL through a
	// transaction-mode pooler (PgBouncer pool_mode = transaction), which
	// gives each transaction any of its server connections: the store then
	// uses no named prepared statements (pgx's
	// QueryExecModeCacheDescribe: unnamed statements whose descriptions
	// are cached, one round trip as before). Without it statements are
	// prepared once per connection (pgx's default), which is cheaper on
	// the server (see docs/scaling.md) and fails through such a pooler. A
	// default_query_exec_mode in the URL wins over either.
	TransactionPooler bool
}

// DB is the PostgreSQL row store: a connection pool, and the group commit
// of plant writes over it.
type DB struct {
	URL    string
	Config Config

	// Options are the settings both row stores share, with one meaning
	// (OpTimeout, MaxBatch, OnCommit, TracerProvider). Here OpTimeout
	// bounds one call, its wait for a connection and for its group commit
	// included.
	storeopt.Options
	// OnDropConns, if set, is called when the store drops every pooled
	// connection because a statement's error said the server is gone or
	// read-only (a failover: see failover.go), with that error, its
	// password redacted. Set it before Open.
	OnDropConns func(cause error)
	// Logger, if set, gets the progress of long migrations (migration 11
	// fills the search index of every plant); nil: slog's default.
	Logger *slog.Logger

	pool     *pgxpool.Pool
	queue    *groupcommit.Queue[*writeOp]
	settings settings          // sent inside each transaction (session.go)
	planned  pgx.QueryExecMode // of statements planned for their parameters (plannedArgs)

	// dropped is when the pooled connections were last dropped (Unix
	// nanoseconds; see failover.go).
	dropped atomic.Int64

	// ready keeps the outcome of the last writes for Ping (ready.go).
	ready readiness
}

var _ plantstore.Backend = (*DB)(nil)

// NewDB returns a DB for the postgres:// URL; call Open before use.
func NewDB(url string) *DB {
	return &DB{URL: url, Config: Config{
		MaxConns:         DefaultMaxConns,
		StatementTimeout: DefaultStatementTimeout,
		ConnectTimeout:   DefaultConnectTimeout,
	}}
}

// Open creates the connection pool, checks that the database answers and
// starts the group commit.
func (db *DB) Open(ctx context.Context) error {
	cfg, err := pgxpool.ParseConfig(db.URL)
	if err != nil {
		return fmt.Errorf("postgres: parse URL: %w", redact(err))
	}
	if db.Config.MaxConns > 0 {
		cfg.MaxConns = db.Config.MaxConns
	}
	cfg.MinConns = db.Config.MinConns
	if db.Config.ConnectTimeout > 0 {
		cfg.ConnConfig.ConnectTimeout = db.Config.ConnectTimeout
	}
	// No setting goes in the startup packet (a pooler would refuse it):
	// each transaction carries them (session.go).
	db.settings = newSettings(db.Config)
	if db.Config.TransactionPooler && !setsExecMode(db.URL) {
		cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
	}
	// Statements planned for their parameters (see plannedArgs): unnamed,
	// where statements are prepared.
	db.planned = cfg.ConnConfig.DefaultQueryExecMode
	if db.planned == pgx.QueryExecModeCacheStatement {
		db.planned = pgx.QueryExecModeCacheDescribe
	}
	cfg.ConnConfig.OnNotice = noteWarning
	cfg.ConnConfig.Tracer = dropTracer{db}
	cfg.HealthCheckPeriod = 5 * time.Second
	cfg.AfterConnect = func(_ context.Context, conn *pgx.Conn) error {
		stateOf(conn.PgConn()).born = time.Now()
		// Times come back in UTC, whatever the session's TimeZone.
		conn.TypeMap().RegisterType(&pgtype.Type{Name: "timestamptz", OID: pgtype.TimestamptzOID,
			Codec: &pgtype.TimestamptzCodec{ScanLocation: time.UTC}})
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("postgres: open: %w", redact(err))
	}
	db.pool = pool
	if err := db.Ping(ctx); err != nil {
		pool.Close()
		db.pool = nil
		return err
	}
	db.queue = groupcommit.New((groupcommit.Config[*writeOp]{Apply: db.commit, Observe: db.OnCommit,
		Committers: committers, MaxBatch: db.MaxBatch}).
		Traced(db.TracerProvider, TracerName, "postgres commit", (*writeOp).failed, semconv.DBSystemNamePostgreSQL))
	return nil
}

// TracerName is the instrumentation scope of the batch spans, one per
// group-commit batch, linked to the requests' spans.
const TracerName = "github.com/plantstore/plantstore/internal/postgres"

// Close commits the plant writes already queued, then closes the pool;
// calls that arrive later fail. Closing a DB that is not open does nothing.
func (db *DB) Close() error {
	if db.pool == nil {
		return nil
	}
	db.queue.Close()
	db.pool.Close()
	return nil
}

// Ping reports whether the database can serve reads and writes now, from
// the outcome of the last writes when one came within readyFresh (see
// ready.go): ready when one succeeded, plantstore.ErrUnavailable when one
// failed for the storage (writeFault). Otherwise it checks, within
// OpTimeout: a probe write (probeWrite) when the last write failed, whose
// outcome it records as a write's, else a round trip on a pooled
// connection.
func (db *DB) Ping(ctx context.Context) error {
	state, last := db.ready.state()
	switch state {
	case stateOK:
		return nil
	case stateFailing:
		return wrap("ping", fmt.Errorf("%w (%w)", errWriteFailed, last))
	}
	ctx, cancel := db.opContext(ctx)
	defer cancel()
	if state == stateIdle {
		return wrap("ping", db.pool.Ping(ctx))
	}
	start := db.ready.now()
	if err := db.wrote(start, db.probeWrite(ctx)); err != nil {
		if state, _ := db.ready.state(); state == stateOK {
			return nil // a write committed while the probe waited
		}
		return wrap("ping", fmt.Errorf("%w (%w); a probe write failed too: %w", errWriteFailed, last, redact(err)))
	}
	return nil
}

// errWriteFailed is the error of Ping when the last write failed for the
// storage and its probe write failed too; wrap marks it
// plantstore.ErrUnavailable.
var errWriteFailed = errors.New("the last write failed")

// qProbe is the probe write of Ping, run in a transaction that is rolled
// back: it inserts the webhook lock row of an owner (or finds it there),
// which a read-only server (a standby after a failover,
// default_transaction_read_only) refuses, as it refuses every write.
const qProbe = `INSERT INTO webhook_owners (owner) VALUES ('plantstore:probe') ON CONFLICT (owner) DO NOTHING`

// probeWrite runs qProbe in a transaction and rolls it back: two round
// trips, leaving nothing behind.
func (db *DB) probeWrite(ctx context.Context) error {
	return db.onConn(ctx, false, func(c *pgx.Conn) error {
		tx, err := c.BeginTx(ctx, pgx.TxOptions{BeginQuery: db.beginSQL(pgx.ReadCommitted)})
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, qProbe)
		if rbErr := tx.Rollback(ctx); err == nil {
			err = rbErr
		}
		return err
	})
}

// wrote records the outcome of a write that started at start for Ping
// (ready.go) and returns err: a write that succeeded makes the store
// ready, a fault of the storage (writeFault) not ready, unless a write
// succeeded since start; any other error (the statement's, a timeout,
// the caller's cancellation) says nothing of the storage. Every write
// records its outcome: the group commit per transaction, and exec, inTx,
// writeOne and sendBatch; reads do not (a read that succeeds says nothing
// of the writes).
func (db *DB) wrote(start time.Time, err error) error {
	switch {
	case err == nil:
		db.ready.succeeded()
	case writeFault(err):
		err = redact(err)
		db.ready.failed(start, err)
	}
	return err
}

// opContext bounds one call by OpTimeout.
func (db *DB) opContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, db.Timeout())
}

// withMigrations runs fn with a goose provider of the embedded migrations
// over the pool.
func (db *DB) withMigrations(fn func(p *goose.Provider) error) error {
	sub, err := fs.Sub(migrationFS, "migration")
	if err != nil {
		return fmt.Errorf("postgres: migrations: %w", err)
	}
	// A lock row in a table (with a lease, so a crashed migrator does not
	// block forever) rather than an advisory lock: CockroachDB has none.
	locker, err := lock.NewPostgresTableLocker(lock.WithTableLockTimeout(500*time.Millisecond, 600))
	if err != nil {
		return fmt.Errorf("postgres: migration lock: %w", err)
	}
	sqlDB := stdlib.OpenDBFromPool(db.pool)
	defer sqlDB.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, sub, goose.WithLocker(locker),
		goose.WithGoMigrations(db.searchMigration()))
	if err != nil {
		return fmt.Errorf("postgres: migrations: %w", err)
	}
	return fn(p)
}

// SchemaStatus returns the schema version of the database and the newest one
// this binary knows.
func (db *DB) SchemaStatus(ctx context.Context) (current, known int64, err error) {
	err = db.withMigrations(func(p *goose.Provider) error {
		current, known, err = p.GetVersions(ctx)
		return wrap("schema version", err)
	})
	return current, known, err
}

// Migrate applies pending migrations, each in its own transaction, under a
// lock row so that replicas starting at once take turns, and returns how many
// it applied. It refuses a database whose schema is newer than this binary
// knows.
func (db *DB) Migrate(ctx context.Context) (applied int, err error) {
	err = db.withMigrations(func(p *goose.Provider) error {
		if current, known, err := p.GetVersions(ctx); err != nil {
			return wrap("schema version", err)
		} else if current > known {
			return &plantstore.SchemaTooNewError{Current: current, Known: known}
		}
		done, err := p.Up(ctx)
		applied = len(done)
		return wrap("migrate", err)
	})
	return applied, err
}

// retry calls try until it succeeds or fails otherwise than with a
// serialization failure or a deadlock, at most maxAttempts times, with a
// short randomised backoff between tries: PostgreSQL at SERIALIZABLE and
// CockroachDB ask clients to retry such transactions. try must run a whole
// transaction.
func retry(ctx context.Context, try func() error) error {
	for attempt := 1; ; attempt++ {
		err := try()
		if err == nil || !retryable(err) || attempt == maxAttempts {
			return err
		}
		select {
		case <-time.After(time.Duration(1<<attempt)*time.Millisecond + rand.N(2*time.Millisecond)):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// inTx runs fn, a write, in a transaction at iso and commits it, within
// OpTimeout, with retries, and records the outcome (wrote). fn must use
// the ctx it is given. Errors come back unwrapped; a warning while it
// commits is an outcomeUnknownError (onConn).
func (db *DB) inTx(ctx context.Context, iso pgx.TxIsoLevel, fn func(ctx context.Context, tx pgx.Tx) error) error {
	ctx, cancel := db.opContext(ctx)
	defer cancel()
	opts := pgx.TxOptions{BeginQuery: db.beginSQL(iso)}
	start := db.ready.now()
	return db.wrote(start, retry(ctx, func() error {
		return db.onConn(ctx, true, func(c *pgx.Conn) error {
			return pgx.BeginTxFunc(ctx, c, opts, func(tx pgx.Tx) error { return fn(ctx, tx) })
		})
	}))
}

// exec runs one write statement in a transaction of its own (implicit,
// with the session settings), within OpTimeout, with retries, and records
// the outcome (wrote). Errors come back unwrapped.
func (db *DB) exec(ctx context.Context, sql string, args ...any) (tag pgconn.CommandTag, err error) {
	ctx, cancel := db.opContext(ctx)
	defer cancel()
	start := db.ready.now()
	err = retry(ctx, func() error {
		b := &pgx.Batch{}
		b.Queue(sql, args...).Exec(func(t pgconn.CommandTag) error {
			tag = t
			return nil
		})
		return db.send(ctx, b)
	})
	return tag, db.wrote(start, err)
}

// queryOne returns the first row of a read run alone within OpTimeout,
// with retries; no row is plantstore.ErrNotFound. Errors come back
// unwrapped. Reads carry no session settings (see session.go).
func queryOne[T any](ctx context.Context, db *DB, scan pgx.RowToFunc[T], sql string, args ...any) (v T, err error) {
	ctx, cancel := db.opContext(ctx)
	defer cancel()
	err = retry(ctx, func() (err error) {
		rows, _ := db.pool.Query(ctx, sql, args...) // CollectOneRow reports the error
		v, err = pgx.CollectOneRow(rows, scan)
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		err = plantstore.ErrNotFound
	}
	return v, err
}

// writeOne is queryOne for a write with RETURNING, in a transaction of
// its own (implicit, with the session settings): it records the outcome
// (wrote), and a warning while it commits is an outcomeUnknownError.
func writeOne[T any](ctx context.Context, db *DB, scan pgx.RowToFunc[T], sql string, args ...any) (v T, err error) {
	ctx, cancel := db.opContext(ctx)
	defer cancel()
	start := db.ready.now()
	err = retry(ctx, func() error {
		b := &pgx.Batch{}
		b.Queue(sql, args...).Query(func(rows pgx.Rows) (err error) {
			v, err = pgx.CollectOneRow(rows, scan)
			return err
		})
		return db.send(ctx, b)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		err = plantstore.ErrNotFound
	}
	return v, db.wrote(start, err)
}

// queryAll returns every row of a read run within OpTimeout (an empty
// slice when there is none). Errors come back unwrapped.
func queryAll[T any](ctx context.Context, db *DB, scan pgx.RowToFunc[T], sql string, args ...any) ([]T, error) {
	ctx, cancel := db.opContext(ctx)
	defer cancel()
	rows, _ := db.pool.Query(ctx, sql, args...) // CollectRows reports the error
	return pgx.CollectRows(rows, scan)
}

// notFoundUnless returns plantstore.ErrNotFound when a statement that ran
// without error changed no row.
func notFoundUnless(tag pgconn.CommandTag, err error) error {
	if err == nil && tag.RowsAffected() == 0 {
		return plantstore.ErrNotFound
	}
	return err
}

// PostgreSQL error codes (SQLSTATE) that the store tells apart.
const (
	codeUniqueViolation      = "23505"
	codeSerializationFailure = "40001"
	codeDeadlockDetected     = "40P01"
	codeQueryCanceled        = "57014" // statement_timeout
	codeReadOnlyTransaction  = "25006" // read_only_sql_transaction
)

func pgCode(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// retryable reports a serialization failure or a deadlock.
func retryable(err error) bool {
	code := pgCode(err)
	return code == codeSerializationFailure || code == codeDeadlockDetected
}

// existsIfDuplicate returns plantstore.ErrExists for a unique violation,
// err otherwise.
func existsIfDuplicate(err error) error {
	if pgCode(err) == codeUniqueViolation {
		return plantstore.ErrExists
	}
	return err
}

// wrap adds op to err. When the database cannot serve (unreachable,
// shutting down, read-only, out of disk or failing its I/O, too slow, the
// store closed; see unavailable) the result matches
// plantstore.ErrUnavailable; the cause, its password redacted, is kept for
// the log.
func wrap(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case unavailable(err):
		return fmt.Errorf("postgres: %s: %w: %w", op, plantstore.ErrUnavailable, redact(err))
	}
	return fmt.Errorf("postgres: %s: %w", op, redact(err))
}

// unavailable reports errors that mean the database cannot serve now, as
// opposed to errors of the statement itself: the faults of writeFault, a
// statement timeout (57014), a timeout of the call, the store closed,
// Ping's errWriteFailed, and a commit whose outcome is unknown (see
// outcome.go).
func unavailable(err error) bool {
	var (
		connErr *pgconn.ConnectError
		netErr  net.Error
	)
	if errors.Is(err, errWriteFailed) || outcomeUnknown(err) {
		return true
	}
	if code := pgCode(err); code != "" {
		return storageCode(code) || code == codeQueryCanceled
	}
	return errors.As(err, &connErr) || errors.As(err, &netErr) || connectionLost(err) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, groupcommit.ErrClosed) ||
		pgconn.Timeout(err) || pgconn.SafeToRetry(err)
}

// storageCode reports the SQLSTATEs of a server that cannot serve, or
// cannot write, now. Class 08: connection exception; 25006: read-only
// transaction (a standby after a failover, default_transaction_read_only);
// class 53: insufficient resources (disk full 53100, out of memory, too
// many connections); class 58: system error (I/O error 58030, a file
// missing); 57P01-03: shutdown, crash, starting up.
func storageCode(code string) bool {
	if len(code) != 5 {
		return false
	}
	switch code[:2] {
	case "08", "53", "58":
		return true
	}
	switch code {
	case codeReadOnlyTransaction, "57P01", "57P02", "57P03":
		return true
	}
	return false
}

// writeFault reports the errors of a write that say the storage cannot
// take writes now, which Ping then checks with a probe write (see wrote):
// a server error of storageCode, the connection refused or lost, or a
// commit the server warned about (outcome.go). A timeout (the statement's
// or the call's) and the caller's cancellation are not: they say nothing
// of the storage (a lock wait, a slow client).
func writeFault(err error) bool {
	var unknown *outcomeUnknownError
	if errors.As(err, &unknown) && unknown.warning != nil {
		return true
	}
	if code := pgCode(err); code != "" {
		return storageCode(code)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) {
		return false
	}
	var (
		connErr *pgconn.ConnectError
		netErr  net.Error
	)
	return errors.As(err, &connErr) || (errors.As(err, &netErr) && !netErr.Timeout()) || connectionLost(err) ||
		pgconn.SafeToRetry(err)
}

// redact drops the password from errors that quote the connection string.
func redact(err error) error {
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) && connErr.Config != nil {
		connErr.Config.Password = ""
	}
	return err
}
