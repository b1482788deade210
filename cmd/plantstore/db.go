package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/cli/cliexit"
	"github.com/plantstore/plantstore/internal/dbfile"
	"github.com/plantstore/plantstore/internal/portable"
	"github.com/plantstore/plantstore/internal/postgres"
	"github.com/plantstore/plantstore/internal/service"
	"github.com/plantstore/plantstore/internal/sqlite"
)

var (
	_ portable.Database = (*sqlite.DB)(nil)
	_ portable.Database = (*postgres.DB)(nil)
)

// defaultDBPath is the default of --db (dbFlags.DB's tag says it again).
const defaultDBPath = "data/plantstore.db"

// dbFlags selects the database; every command takes them.
type dbFlags struct {
	DB                  string        `name:"db" env:"PLANTSTORE_DB" default:"data/plantstore.db" help:"Database: a SQLite file, a postgres:// URL, or (serve only) memory:."`
	DBMaxConns          int32         `name:"db-max-conns" env:"PLANTSTORE_DB_MAX_CONNS" default:"16" help:"PostgreSQL: connections in this process's pool."`
	DBStatementTimeout  time.Duration `name:"db-statement-timeout" env:"PLANTSTORE_DB_STATEMENT_TIMEOUT" default:"5s" help:"PostgreSQL: server-side limit per statement."`
	DBTimeout           time.Duration `name:"db-timeout" env:"PLANTSTORE_DB_TIMEOUT" default:"10s" help:"Limit for one storage call; past it the request gets 503."`
	DBTransactionPooler bool          `name:"db-transaction-pooler" env:"PLANTSTORE_DB_TRANSACTION_POOLER" help:"PostgreSQL: the --db URL goes through a transaction-mode pooler (PgBouncer pool_mode = transaction): no named prepared statements."`

	// durability is set by serve's --durability; other commands use full.
	durability sqlite.Durability
	// walAutocheckpoint is sqlite.DB.WALAutocheckpoint, set by serve's
	// --sqlite-wal-autocheckpoint; other commands keep SQLite's default.
	walAutocheckpoint int
	// onCommit observes group commits (serve's metrics).
	onCommit func(writes int, took time.Duration)
	// tracerProvider gets the group commits' spans (serve's --otel-endpoint).
	tracerProvider trace.TracerProvider
	// logger gets what a long migration reports while it runs (serve's
	// log; nil: log/slog's default, on stderr).
	logger *slog.Logger
	// onDropConns is told when PostgreSQL's pool drops its connections
	// after a failover (serve logs it).
	onDropConns func(cause error)
	// create says whether the command may create a SQLite database that
	// does not exist; created is set by connect when it did.
	create  createRule
	created bool
	// memoryOK says whether --db memory: is allowed (serve only).
	memoryOK bool
	// warn, if set, tells the operator of a SQLite file whose mode let
	// others read it (warnDB sets it to print on stderr, serve to log).
	warn func(msg string)
}

// fileModeWarning is the warning of a database file whose mode let others
// than its owner read or write it (sqlite.DB.OnFileMode).
func fileModeWarning(path string, was fs.FileMode, err error) string {
	if err != nil {
		return fmt.Sprintf("%s is mode %04o: others than its owner may read it, and it holds webhook signing secrets; it could not be made %04o (%v): run chmod go-rwx on it", path, was, was&^0o077, err)
	}
	return fmt.Sprintf("%s was mode %04o: made it %04o (it holds webhook signing secrets: only its owner may read it)", path, was, was&^0o077)
}

// memoryDB is the --db value of an in-memory SQLite database (serve's
// sandbox: nothing on disk, everything lost at exit). A file of that name
// is ./memory:.
const memoryDB = "memory:"

// isMemory reports whether the --db value is the in-memory database.
func isMemory(db string) bool { return db == memoryDB }

// createRule says when a command may create a SQLite database file that does
// not exist. A missing file is otherwise an error naming it, so that a
// database deleted or moved, or a volume that did not mount, is never
// replaced silently by a new, empty database (with a new admin token).
type createRule int

const (
	// createNever: the token commands (token create --create: createAlways).
	createNever createRule = iota
	// createFirstRun: serve without --create-db creates the default path
	// (the quick start's first run), and only when no earlier database left
	// its lock file there.
	createFirstRun
	// createAlways: migrate, the explicit step, and serve --create-db.
	createAlways
)

// createDBFlag is serve's --create-db.
type createDBFlag struct {
	CreateDB bool `name:"create-db" env:"PLANTSTORE_CREATE_DB" help:"SQLite: create the --db file if it does not exist (a first start)."`
}

// rule is serve's createRule.
func (f createDBFlag) rule() createRule {
	if f.CreateDB {
		return createAlways
	}
	return createFirstRun
}

// mustExist reports whether the SQLite file at f.DB must exist already.
func (f *dbFlags) mustExist() bool {
	switch f.create {
	case createAlways:
		return false
	case createFirstRun:
		return f.DB != defaultDBPath || exists(f.DB+".lock")
	}
	return true
}

// exists reports whether there is a file at path.
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// missingDatabase explains, naming the path, why a command does not open a
// SQLite database that does not exist; any other error of Open is the
// storage's.
func (f *dbFlags) missingDatabase(err error) error {
	switch {
	case errors.Is(err, sqlite.ErrOrphanWAL):
		return fmt.Errorf("--db: %w", err) // its message says what to do
	case !errors.Is(err, sqlite.ErrNoDatabase):
		return storageError(err)
	case f.create == createNever:
		return fmt.Errorf("--db: database %s does not exist: give the path of an existing database (--db, PLANTSTORE_DB), or create one with `plantstore migrate --db %s` (or token create --create)", f.DB, f.DB)
	case f.DB == defaultDBPath:
		return fmt.Errorf("--db: database %s does not exist, but %s.lock shows that one was opened there before: it was deleted or moved. Restore it, or start with --create-db (PLANTSTORE_CREATE_DB=true) to create a new, empty database", f.DB, f.DB)
	}
	return fmt.Errorf("--db: database %s does not exist: it was deleted or moved, its volume is not mounted, or this is the first start. Restore it, or create a new, empty database: run `plantstore migrate --db %s`, or start once with --create-db (PLANTSTORE_CREATE_DB=true)", f.DB, f.DB)
}

// isPostgres reports whether the --db value is a PostgreSQL URL.
func isPostgres(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}

// displayDB is the --db value fit for logs and messages: a URL's
// passwords are masked (redactURL).
func displayDB(db string) string {
	if !isPostgres(db) {
		return db
	}
	return redactURL(db)
}

// redactURL masks the passwords of a postgres:// URL, in its user
// information and in password or sslpassword parameters, and keeps the
// rest as written. It reads the URL the way libpq and pgx do rather than
// with net/url, which refuses the multi-host form
// (postgres://u:p@h1:5432,h2/db: "invalid port") or an IPv6 host list: the
// user information ends at the first '@' before any '/', and the
// parameters follow the first '?'.
func redactURL(s string) string {
	scheme, rest, _ := strings.Cut(s, "://")
	out := scheme + "://"
	if i := strings.IndexAny(rest, "@/"); i >= 0 && rest[i] == '@' {
		user, _, hasPassword := strings.Cut(rest[:i], ":")
		out += user
		if hasPassword {
			out += ":xxxxx"
		}
		out += "@"
		rest = rest[i+1:]
	}
	base, query, hasQuery := strings.Cut(rest, "?")
	out += base
	if !hasQuery {
		return out
	}
	params := strings.Split(query, "&")
	for i, p := range params {
		key, _, _ := strings.Cut(p, "=")
		if k, err := url.QueryUnescape(key); err == nil && (k == "password" || k == "sslpassword") {
			params[i] = key + "=xxxxx"
		}
	}
	return out + "?" + strings.Join(params, "&")
}

// connect opens the database without looking at its schema. A SQLite file
// that does not exist is created only as f.create allows.
func (f *dbFlags) connect(ctx context.Context) (portable.Database, error) {
	db, err := f.backend()
	if err != nil {
		return nil, err
	}
	missing := false
	if !isPostgres(f.DB) && !isMemory(f.DB) {
		if err := notCompanion("--db", f.DB); err != nil {
			return nil, err
		}
		_, err := os.Stat(f.DB)
		missing = errors.Is(err, fs.ErrNotExist)
	}
	if err := db.Open(ctx); err != nil {
		return nil, f.missingDatabase(err)
	}
	f.created = missing
	return db, nil
}

// notCompanion refuses a database path (given by flag) naming a file kept
// beside a SQLite database (its -wal, -shm, -journal, .lock): opening it as
// a database would create or change it, and with it that database's
// commits or locks. A PostgreSQL URL or memory: is no file.
func notCompanion(flag, db string) error {
	if isPostgres(db) || isMemory(db) {
		return nil
	}
	err := dbfile.CheckNotCompanion(db)
	var ce *dbfile.CompanionError
	if errors.As(err, &ce) {
		return fmt.Errorf("%s: %w: not a database of its own, never opened nor written; give the database's own path", flag, err)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", flag, err)
	}
	return nil
}

// backend returns the backend the flags select, not yet opened.
func (f *dbFlags) backend() (portable.Database, error) {
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
		db.OpTimeout = f.DBTimeout
		db.Config.TransactionPooler = f.DBTransactionPooler
		db.OnCommit = f.onCommit
		db.OnDropConns = f.onDropConns
		db.TracerProvider = f.tracerProvider
		db.Logger = f.logger
		return db, nil
	case f.DBTimeout <= 0:
		return nil, fmt.Errorf("--db-timeout must be positive")
	case isMemory(f.DB) && !f.memoryOK:
		return nil, cliexit.Usagef("--db memory: is a database in serve's memory, gone when it exits: this command cannot reach it. Give a SQLite file or a postgres:// URL (tokens of a memory: server: serve --bootstrap-token)")
	}
	db := sqlite.NewDB(f.DB)
	db.Memory = isMemory(f.DB)
	db.MustExist = f.mustExist()
	if f.durability != "" {
		db.Durability = f.durability
	}
	db.OpTimeout = f.DBTimeout
	db.WALAutocheckpoint = f.walAutocheckpoint
	db.OnCommit = f.onCommit
	db.TracerProvider = f.tracerProvider
	db.Logger = f.logger
	if warn := f.warn; warn != nil {
		db.OnFileMode = func(path string, was fs.FileMode, err error) { warn(fileModeWarning(path, was, err)) }
	}
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
func (f *dbFlags) open(ctx context.Context, migrate bool) (portable.Database, error) {
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

// Run applies pending migrations; it creates a SQLite database that does
// not exist (the explicit first step).
func (c *migrateCmd) Run(ctx context.Context, e *env) error {
	c.create = createAlways
	warnDB(e, &c.dbFlags)
	db, err := c.connect(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	if c.created {
		fmt.Fprintf(e.stderr, "plantstore: created a new database %s\n", c.DB)
	}
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
