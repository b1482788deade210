package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/postgres"
	"github.com/plantstore/plantstore/service"
	"github.com/plantstore/plantstore/sqlite"
)

var (
	_ plantstore.Backend = (*sqlite.DB)(nil)
	_ plantstore.Backend = (*postgres.DB)(nil)
)

// dbFlags selects the database; every command takes them.
type dbFlags struct {
	DB                 string        `name:"db" env:"PLANTSTORE_DB" default:"data/plantstore.db" help:"Database: a SQLite file path (created on first use), or a postgres:// URL."`
	DBMaxConns         int32         `name:"db-max-conns" env:"PLANTSTORE_DB_MAX_CONNS" default:"16" help:"PostgreSQL: connections in this process's pool."`
	DBStatementTimeout time.Duration `name:"db-statement-timeout" env:"PLANTSTORE_DB_STATEMENT_TIMEOUT" default:"5s" help:"PostgreSQL: server-side limit per statement."`
	DBTimeout          time.Duration `name:"db-timeout" env:"PLANTSTORE_DB_TIMEOUT" default:"10s" help:"Limit for one storage call, waiting for a connection (PostgreSQL) or for the write lock (SQLite) included; past it the request gets 503."`

	// durability is set by serve's --durability; other commands use full.
	durability sqlite.Durability
	// onCommit observes group commits (serve's metrics).
	onCommit func(writes int, took time.Duration)
}

// isPostgres reports whether the --db value is a PostgreSQL URL.
func isPostgres(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}

// displayDB is the --db value fit for logs and messages: a URL's password
// is masked.
func displayDB(db string) string {
	if !isPostgres(db) {
		return db
	}
	u, err := url.Parse(db)
	if err != nil {
		return "postgres://(unparsable URL)"
	}
	return u.Redacted()
}

// connect opens the database without looking at its schema.
func (f *dbFlags) connect(ctx context.Context) (plantstore.Backend, error) {
	db, err := f.backend()
	if err != nil {
		return nil, err
	}
	if err := db.Open(ctx); err != nil {
		return nil, storageError(err)
	}
	return db, nil
}

// backend returns the backend the flags select, not yet opened.
func (f *dbFlags) backend() (plantstore.Backend, error) {
	switch {
	case f.DB == "":
		return nil, fmt.Errorf("--db: a database path or postgres:// URL is required")
	case isPostgres(f.DB):
		if f.DBMaxConns < 1 || f.DBStatementTimeout <= 0 || f.DBTimeout <= 0 {
			return nil, fmt.Errorf("--db-max-conns, --db-statement-timeout and --db-timeout must be positive")
		}
		db := postgres.NewDB(f.DB)
		db.Config.MaxConns = f.DBMaxConns
		db.Config.StatementTimeout = f.DBStatementTimeout
		db.Config.OpTimeout = f.DBTimeout
		db.OnCommit = f.onCommit
		return db, nil
	case f.DBTimeout <= 0:
		return nil, fmt.Errorf("--db-timeout must be positive")
	}
	db := sqlite.NewDB(f.DB)
	if f.durability != "" {
		db.Durability = f.durability
	}
	db.OpTimeout = f.DBTimeout
	db.OnCommit = f.onCommit
	return db, nil
}

// storageError gives an error of the backend's own calls (Open, Migrate,
// SchemaStatus; the services map the others) the message a client gets for
// a storage failure (service.Unavailable), which main prints followed by
// the cause.
func storageError(err error) error { return service.Unavailable(err) }

// open opens the database. With migrate it applies pending migrations;
// without, it refuses a schema that is not exactly the one this binary
// knows. Either way it refuses a schema newer than this binary knows.
func (f *dbFlags) open(ctx context.Context, migrate bool) (plantstore.Backend, error) {
	db, err := f.connect(ctx)
	if err != nil {
		return nil, err
	}
	if err := f.prepare(ctx, db, migrate); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

func (f *dbFlags) prepare(ctx context.Context, db plantstore.Backend, migrate bool) error {
	if migrate {
		_, err := db.Migrate(ctx)
		return storageError(err)
	}
	current, known, err := db.SchemaStatus(ctx)
	switch {
	case err != nil:
		return storageError(err)
	case current > known:
		return &plantstore.SchemaTooNewError{Current: current, Known: known}
	case current < known:
		return fmt.Errorf("database schema version %d is older than this plantstore needs (%d): run `plantstore migrate` with the same --db, or serve without --no-migrate", current, known)
	}
	return nil
}

// migrateCmd is `plantstore migrate`.
type migrateCmd struct {
	dbFlags
}

// Run applies pending migrations.
func (c *migrateCmd) Run(ctx context.Context, e *env) error {
	db, err := c.connect(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	n, err := db.Migrate(ctx)
	if err != nil {
		return storageError(err)
	}
	current, _, err := db.SchemaStatus(ctx)
	if err != nil {
		return storageError(err)
	}
	fmt.Fprintf(e.stderr, "plantstore: applied %d migration(s); schema version is %d\n", n, current)
	return nil
}
