// Package sqlite is the SQLite row store: it implements plantstore.Backend
// on an embedded database file (github.com/mattn/go-sqlite3, WAL mode).
// Rows in, rows out, sentinel errors (plantstore.ErrNotFound, ErrExists,
// ErrUnavailable), group commit, timeouts and driver code; every rule a
// client sees is the service layer's. Every time is stored as integer Unix
// nanoseconds, and comes from the caller.
package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/mattn/go-sqlite3" // registers the "sqlite3" driver (errors_cgo.go reads its errors)
	"github.com/pressly/goose/v3"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/groupcommit"
	"github.com/plantstore/plantstore/internal/storeopt"
)

// migrationFS holds the SQL migrations; version 12 is Go, not a file
// (search_migration.go), so the next file is 00013.
//
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

// synchronous is the PRAGMA synchronous value of each durability mode.
var synchronous = map[Durability]string{DurabilityFull: "FULL", "": "FULL", DurabilityRelaxed: "NORMAL"}

// DefaultOpTimeout bounds one call when DB.OpTimeout is zero: the same on
// every backend (storeopt).
const DefaultOpTimeout = storeopt.DefaultOpTimeout

// writeStmtCache is how many statements of generic writes the driver keeps
// prepared on the write connection.
const writeStmtCache = 64

// readConns is the size of database/sql's read pool (every read but the
// plants', which have a pool of their own: reader.go).
const readConns = 4

// DB is a SQLite database. Writes go through one connection (SQLite has one
// writer at a time) so they queue in Go rather than spin on the file lock;
// reads use a pool of their own. Every write runs through DB.update, which
// groups concurrent writes into one commit (see update).
type DB struct {
	Path       string
	Durability Durability

	// Options are the settings both row stores share, with one meaning
	// (OpTimeout, MaxBatch, OnCommit, TracerProvider). Here OpTimeout also
	// bounds the wait for the file's write lock (SQLite's busy timeout).
	storeopt.Options

	// MustExist makes Open fail with ErrNoDatabase, naming the path, when
	// the database file does not exist, instead of creating it (and its
	// directory). Open never creates a database beside the WAL or shared
	// memory file of a missing one (ErrOrphanWAL).
	MustExist bool

	// Memory keeps the database in this process's memory instead of a file
	// (a sandbox: serve --db memory:): nothing is written to disk and
	// everything is lost at Close. The writer and the readers share it as
	// they share a file (SQLite's memdb VFS under a random name, with the
	// file's locking: readers wait for a commit, within OpTimeout, as there
	// is no WAL). Path is then only the name in messages; the file checks
	// (lock file, file identity) do not apply, and Durability neither.
	Memory bool

	// WALAutocheckpoint is PRAGMA wal_autocheckpoint of the write
	// connection, in pages: SQLite checkpoints after a commit that leaves
	// this many pages or more in the WAL (wal.go). 0 keeps SQLite's default
	// (1000); negative turns automatic checkpoints off: the WAL then grows
	// until another connection or process (Litestream) checkpoints it.
	WALAutocheckpoint int
	// OnFileMode, if set, is called by Open for each file of the database
	// (the database file, its -wal and -shm) that others than its owner
	// could read or write: Open took those permissions away (err nil), or
	// could not (err; the file is opened all the same). See FileMode.
	OnFileMode func(path string, was fs.FileMode, err error)

	// Logger gets what a migration reports while it runs (the progress of
	// a long one); nil: slog.Default().
	Logger *slog.Logger

	// memName is the memdb name of a Memory database, set by Open.
	memName string

	write *sql.DB
	read  *sql.DB
	// migrations is a pool of two write connections for migrations (see
	// provider), closed when idle.
	migrations *sql.DB
	// readers is the plant read pool (reader.go).
	readers       chan *reader
	readersClosed atomic.Bool

	// writer is the committer's state on the write connection, its
	// prepared statements (writer.go); the read pool's statements are
	// prepared on first use.
	writer    writer
	readStmts sync.Map // query -> *sql.Stmt

	// subs counts each owner's enabled subscriptions, for the committer
	// only (see subscriptionCounts).
	subs subscriptionCounts

	queue *groupcommit.Queue[*writeOp]

	// health is what Ping checks besides a query (health.go).
	health health
	// wal is what WALInfo saw of the WAL (wal.go).
	wal walWatch
	// inUse releases the in-use lock Open takes on a file (backup.go).
	inUse func()
}

var _ plantstore.Backend = (*DB)(nil)

// NewDB returns a DB for the file at path; call Open before use.
func NewDB(path string) *DB {
	return &DB{Path: path, Durability: DurabilityFull}
}

func (db *DB) opTimeout() time.Duration { return db.Timeout() }

// dsn is the connection string of the write connection (readOnly false)
// or of the read pool.
func (db *DB) dsn(readOnly bool) (string, error) {
	sync, ok := synchronous[db.Durability]
	if !ok {
		return "", fmt.Errorf("sqlite: unknown durability %q", db.Durability)
	}
	q := url.Values{}
	q.Set("_journal_mode", "WAL")
	q.Set("_synchronous", sync)
	q.Set("_busy_timeout", strconv.FormatInt(db.opTimeout().Milliseconds(), 10))
	q.Set("_foreign_keys", "on")
	q.Set("_txlock", "immediate")
	if readOnly {
		q.Set("_txlock", "deferred")
		q.Set("_query_only", "true")
	} else {
		// The generic writes' statements (Tx), prepared once by the driver
		// and kept by text (the committer's own are the writer's).
		q.Set("_stmt_cache_size", strconv.Itoa(writeStmtCache))
		if db.MustExist {
			q.Set("mode", "rw") // SQLite opens the file but does not create it
		}
	}
	if db.Memory {
		q.Set("vfs", "memdb")
		q.Del("mode")
		// A memdb name starting with "/" is shared by every connection of
		// the process that opens it; it lives while one is open.
		return "file:/" + db.memName + "?" + q.Encode(), nil
	}
	return "file:" + url.PathEscape(db.Path) + "?" + q.Encode(), nil
}

// Open opens the connection pools. Unless MustExist is set it creates the
// file (mode FileMode), and its directory, when they do not exist (see
// checkPath for when it refuses to); it takes the permissions of others than
// the owner away from an existing file (OnFileMode). It records the identity of the database file and its WAL,
// which every commit and Ping check (health.go). It does not migrate: call
// Migrate (or check with SchemaStatus).
func (db *DB) Open(ctx context.Context) error {
	if db.Memory {
		return db.openMemory(ctx)
	}
	if db.Path == "" {
		return errors.New("sqlite: path required")
	}
	if err := db.checkPath(); err != nil {
		return err
	}
	if dir := filepath.Dir(db.Path); dir != "" && !db.MustExist {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return fmt.Errorf("sqlite: create directory: %w", err)
		}
	}
	// Open the writer now so a bad path or a locked, unreadable file fails
	// here rather than on the first request. Switching a new file to WAL
	// needs it alone, so processes opening one file at once take turns.
	unlock, err := lockFile(db.Path)
	if err != nil {
		return err
	}
	defer unlock()
	// The database file exists, 0600 when Open creates it (filemode.go).
	if err := db.secureFiles(); err != nil {
		return err
	}
	// Held until Close: restore refuses to replace an open file (inuse_linux.go).
	if db.inUse, err = holdInUse(db.Path); err != nil {
		return err
	}
	if err := db.openPools(ctx); err != nil {
		db.releaseInUse()
		return err
	}
	// The files are open now; their identity is the one SQLite uses.
	if err := db.health.watch(db.Path, db.Path+"-wal"); err != nil {
		db.Close()
		return err
	}
	if err := db.startWALWatch(); err != nil {
		db.Close()
		return err
	}
	return nil
}

// openMemory opens a Memory database under a new random name.
func (db *DB) openMemory(ctx context.Context) error {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Errorf("sqlite: memory database name: %w", err)
	}
	db.memName = "plantstore-" + hex.EncodeToString(b[:])
	if db.Path == "" {
		db.Path = "memory:"
	}
	return db.openPools(ctx)
}

// openPools opens the write connection, the read pools and the group
// commit queue.
func (db *DB) openPools(ctx context.Context) error {
	writeDSN, err := db.dsn(false)
	if err != nil {
		return err
	}
	readDSN, _ := db.dsn(true)
	if db.write, err = db.openWrite(writeDSN); err != nil {
		return fmt.Errorf("sqlite: open: %w", err)
	}
	db.write.SetMaxOpenConns(1)
	db.write.SetMaxIdleConns(1)
	db.write.SetConnMaxLifetime(0)
	db.write.SetConnMaxIdleTime(0)
	if db.read, err = sql.Open("sqlite3", readDSN); err != nil {
		return fmt.Errorf("sqlite: open: %w", err)
	}
	if db.migrations, err = sql.Open("sqlite3", writeDSN); err != nil {
		return fmt.Errorf("sqlite: open: %w", err)
	}
	db.migrations.SetMaxOpenConns(2)
	db.migrations.SetMaxIdleConns(0)
	db.read.SetMaxOpenConns(readConns)
	db.read.SetMaxIdleConns(readConns)
	db.read.SetConnMaxIdleTime(0)
	db.read.SetConnMaxLifetime(0)

	if err := db.write.PingContext(ctx); err != nil {
		return fmt.Errorf("sqlite: open %s: %w", db.Path, err)
	}
	// The plant readers open now too, in turn: each applies the DSN's
	// journal mode. A memory database's pages are in memory already: its
	// readers keep SQLite's default cache.
	plantDSN := readDSN
	if !db.Memory {
		plantDSN += "&_cache_size=-" + strconv.Itoa(readerCacheKiB)
	}
	if err := db.openReaders(plantDSN); err != nil {
		return err
	}
	// Batch spans when db.TracerProvider is set, an error when a write
	// failed for the storage.
	db.queue = groupcommit.New((groupcommit.Config[*writeOp]{
		Apply:    db.commit,
		MaxBatch: db.MaxBatch,
		Observe:  db.OnCommit,
	}).Traced(db.TracerProvider, TracerName, "sqlite commit", (*writeOp).failed, semconv.DBSystemNameSQLite))
	return nil
}

// TracerName is the instrumentation scope of the batch spans, one per
// group-commit batch, linked to the requests' spans.
const TracerName = "github.com/plantstore/plantstore/internal/sqlite"

// Close commits the writes already queued, then closes the database.
// Writes that arrive later fail.
func (db *DB) Close() error {
	if db.queue != nil {
		db.queue.Close()
	}
	var errs []error
	if db.write != nil { // the committer has stopped
		errs = append(errs, db.closeWriter())
	}
	db.readStmts.Range(func(_, st any) bool {
		errs = append(errs, st.(*sql.Stmt).Close())
		return true
	})
	errs = append(errs, db.closeReaders())
	if db.read != nil {
		errs = append(errs, db.read.Close())
	}
	if db.migrations != nil {
		errs = append(errs, db.migrations.Close())
	}
	if db.write != nil {
		errs = append(errs, db.write.Close())
	}
	db.releaseInUse() // after the connections: the file is closed now
	return errors.Join(errs...)
}

// wrap adds context to an error of the driver and marks the ones that mean
// the storage cannot serve now with plantstore.ErrUnavailable (which keeps
// the cause): the disk is full or read-only, an I/O error, the file is
// locked or busy past the timeout or cannot be opened, the call's timeout
// passed, or the database is closing; and the faults of health.go (the file
// moved, writes stalled or failing).
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if unavailable(err) {
		return fmt.Errorf("sqlite: %s: %w: %w", op, plantstore.ErrUnavailable, err)
	}
	return fmt.Errorf("sqlite: %s: %w", op, err)
}

func unavailable(err error) bool {
	return driverUnavailable(err) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, groupcommit.ErrClosed) ||
		storageFault(err)
}

// provider returns the migrations on the migration pool: goose holds one
// connection while it migrates, and a Go migration that commits as it goes
// (search_migration.go) needs another.
func (db *DB) provider() (*goose.Provider, error) {
	return newProvider(db.migrations, db.Logger)
}

// newProvider returns the migrations of sqlDB: the SQL files of migration/
// and the Go ones (migration 12, search_migration.go), which log to log.
func newProvider(sqlDB *sql.DB, log *slog.Logger) (*goose.Provider, error) {
	sub, err := fs.Sub(migrationFS, "migration")
	if err != nil {
		return nil, fmt.Errorf("sqlite: migrations: %w", err)
	}
	return goose.NewProvider(goose.DialectSQLite3, sqlDB, sub, goose.WithGoMigrations(searchMigration(log)))
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
		return 0, 0, wrap("schema version", err)
	}
	return current, known, nil
}

// Migrate applies pending migrations, each in its own transaction, and
// returns how many it applied. It refuses a database whose schema is newer
// than this binary knows.
func (db *DB) Migrate(ctx context.Context) (int, error) {
	if !db.Memory { // a memory database has one process
		unlock, err := lockFile(db.Path)
		if err != nil {
			return 0, err
		}
		defer unlock()
	}
	p, err := db.provider()
	if err != nil {
		return 0, err
	}
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
