// Package postgres implements the plantstore services on PostgreSQL (and
// PostgreSQL-compatible engines such as CockroachDB) through
// github.com/jackc/pgx/v5. Any number of plantstore replicas can share one
// database: every rule that spans requests (idempotent create, the first
// token) is enforced by the database, not by process memory.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/plantstore/plantstore"
)

//go:embed migration/*.sql
var migrationFS embed.FS

// Defaults for Config.
const (
	DefaultMaxConns         = 16
	DefaultStatementTimeout = 5 * time.Second
	DefaultConnectTimeout   = 3 * time.Second
	DefaultOpTimeout        = 10 * time.Second
	// maxAttempts bounds retries of a transaction that failed with a
	// serialization failure (40001) or a deadlock (40P01).
	maxAttempts = 5
)

// Config tunes the connection pool.
type Config struct {
	MaxConns         int32         // pool size per replica
	MinConns         int32         // connections kept open when idle
	StatementTimeout time.Duration // server-side limit per statement (statement_timeout)
	ConnectTimeout   time.Duration // limit to open one connection
	OpTimeout        time.Duration // limit for one store call, queueing for a connection included
}

// DB is a PostgreSQL database.
type DB struct {
	URL    string
	Config Config

	// Now returns the current time; tests replace it.
	Now func() time.Time

	// MaxBatch bounds how many writes share one transaction (0: DefaultMaxBatch).
	MaxBatch int
	// OnCommit, if set, is called after each batch with its number of
	// writes and how long it took. Set it before Open.
	OnCommit func(writes int, took time.Duration)

	pool  *pgxpool.Pool
	batch *batcher
}

var _ plantstore.Store = (*DB)(nil)

// NewDB returns a DB for the postgres:// URL; call Open before use.
func NewDB(url string) *DB {
	return &DB{URL: url, Now: time.Now, Config: Config{
		MaxConns:         DefaultMaxConns,
		StatementTimeout: DefaultStatementTimeout,
		ConnectTimeout:   DefaultConnectTimeout,
		OpTimeout:        DefaultOpTimeout,
	}}
}

// Open creates the connection pool and checks that the database answers.
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
	if db.Config.StatementTimeout > 0 {
		cfg.ConnConfig.RuntimeParams["statement_timeout"] = fmt.Sprint(db.Config.StatementTimeout.Milliseconds())
	}
	cfg.HealthCheckPeriod = 5 * time.Second
	if db.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return fmt.Errorf("postgres: open: %w", redact(err))
	}
	if err := db.Ping(ctx); err != nil {
		db.pool.Close()
		return err
	}
	db.startBatcher()
	return nil
}

// Close commits the writes already queued, then closes the pool.
func (db *DB) Close() error {
	if db.batch != nil {
		db.batch.close()
	}
	if db.pool != nil {
		db.pool.Close()
	}
	return nil
}

// Ping checks that the database answers a query.
func (db *DB) Ping(ctx context.Context) error {
	ctx, cancel := db.opContext(ctx)
	defer cancel()
	var one int
	if err := db.pool.QueryRow(ctx, `SELECT 1`).Scan(&one); err != nil {
		return wrap("ping", err)
	}
	return nil
}

func (db *DB) opContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if db.Config.OpTimeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, db.Config.OpTimeout)
}

func (db *DB) provider() (*goose.Provider, func() error, error) {
	sub, err := fs.Sub(migrationFS, "migration")
	if err != nil {
		return nil, nil, fmt.Errorf("postgres: migrations: %w", err)
	}
	// A lock row in a table (with a lease, so a crashed migrator does not
	// block forever) rather than an advisory lock: CockroachDB has none.
	locker, err := lock.NewPostgresTableLocker(lock.WithTableLockTimeout(500*time.Millisecond, 600))
	if err != nil {
		return nil, nil, fmt.Errorf("postgres: migration lock: %w", err)
	}
	sqlDB := stdlib.OpenDBFromPool(db.pool)
	p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, sub, goose.WithLocker(locker))
	if err != nil {
		sqlDB.Close()
		return nil, nil, fmt.Errorf("postgres: migrations: %w", err)
	}
	return p, sqlDB.Close, nil
}

// SchemaStatus returns the schema version of the database and the newest one
// this binary knows.
func (db *DB) SchemaStatus(ctx context.Context) (current, known int64, err error) {
	p, closeDB, err := db.provider()
	if err != nil {
		return 0, 0, err
	}
	defer closeDB()
	current, known, err = p.GetVersions(ctx)
	if err != nil {
		return 0, 0, wrap("schema version", err)
	}
	return current, known, nil
}

// Migrate applies pending migrations, each in its own transaction, under a
// lock so that replicas starting at once take turns, and returns how many it
// applied. It refuses a database whose schema is newer than this binary knows.
func (db *DB) Migrate(ctx context.Context) (int, error) {
	p, closeDB, err := db.provider()
	if err != nil {
		return 0, err
	}
	defer closeDB()
	current, known, err := p.GetVersions(ctx)
	if err != nil {
		return 0, wrap("schema version", err)
	}
	if current > known {
		return 0, &plantstore.SchemaTooNewError{Current: current, Known: known}
	}
	res, err := p.Up(ctx)
	if err != nil {
		return 0, wrap("migrate", err)
	}
	return len(res), nil
}

// Tx is a transaction with the time fixed at its start.
type Tx struct {
	pgx.Tx
	now time.Time
}

// inTx runs fn in a transaction at the given isolation and commits it,
// retrying the whole transaction a bounded number of times when the
// database reports a serialization failure or a deadlock, as CockroachDB
// (and PostgreSQL at SERIALIZABLE) asks clients to do. Every write goes
// through here, the place where group commit can later batch writes.
func (db *DB) inTx(ctx context.Context, iso pgx.TxIsoLevel, fn func(tx *Tx) error) error {
	ctx, cancel := db.opContext(ctx)
	defer cancel()
	var err error
	for attempt := 1; ; attempt++ {
		err = db.tryTx(ctx, iso, fn)
		if err == nil || !retryable(err) || attempt == maxAttempts {
			return err
		}
		backoff := time.Duration(1<<attempt)*time.Millisecond + rand.N(2*time.Millisecond)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return wrap("retry", ctx.Err())
		}
	}
}

func (db *DB) tryTx(ctx context.Context, iso pgx.TxIsoLevel, fn func(tx *Tx) error) error {
	pgTx, err := db.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: iso})
	if err != nil {
		return wrap("begin", err)
	}
	defer pgTx.Rollback(context.WithoutCancel(ctx))
	if err := fn(&Tx{Tx: pgTx, now: db.Now().UTC()}); err != nil {
		return err
	}
	if err := pgTx.Commit(ctx); err != nil {
		return wrap("commit", err)
	}
	return nil
}

// retryable reports a serialization failure or a deadlock.
func retryable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40001" || pgErr.Code == "40P01")
}

// wrap adds context to a database error and turns the signs of an
// unreachable database into a CodeStorageUnavailable error (503), which
// keeps the cause for the log.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	var domain *plantstore.Error
	if errors.As(err, &domain) {
		return err
	}
	err = fmt.Errorf("postgres: %s: %w", op, redact(err))
	if unavailable(err) {
		return &plantstore.Error{Code: plantstore.CodeStorageUnavailable, Message: "storage is not available; retry later", Err: err}
	}
	return err
}

// unavailable reports errors that mean the database cannot be reached or is
// shutting down, as opposed to errors of the query itself.
func unavailable(err error) bool {
	var (
		pgErr   *pgconn.PgError
		connErr *pgconn.ConnectError
		netErr  net.Error
	)
	switch {
	case errors.As(err, &pgErr):
		// Class 08: connection exception; 57P01-03: shutdown, crash, starting;
		// 57014: statement timeout (query_canceled).
		return pgErr.Code[:2] == "08" || pgErr.Code == "57P01" || pgErr.Code == "57P02" ||
			pgErr.Code == "57P03" || pgErr.Code == "57014"
	case errors.As(err, &connErr), errors.As(err, &netErr):
		return true
	case errors.Is(err, context.DeadlineExceeded), pgconn.Timeout(err), pgconn.SafeToRetry(err):
		return true
	}
	return false
}

// redact drops the password from errors that quote the connection string.
func redact(err error) error {
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) && connErr.Config != nil {
		connErr.Config.Password = ""
	}
	return err
}
