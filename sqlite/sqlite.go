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
// reads use a pool of their own. Every write runs through DB.update, the one
// place where a later change can group several writes into one commit.
type DB struct {
	Path       string
	Durability Durability

	// Now returns the current time; tests replace it.
	Now func() time.Time

	write *sql.DB
	read  *sql.DB
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
	return nil
}

// Close closes the database.
func (db *DB) Close() error {
	var errs []error
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
	return len(res), nil
}

// Tx is a transaction with the time fixed at its start.
type Tx struct {
	*sql.Tx
	now time.Time
}

// update runs fn in a write transaction and commits it. With the default
// durability the commit returns only after the WAL is fsynced.
func (db *DB) update(ctx context.Context, fn func(tx *Tx) error) error {
	sqlTx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: begin: %w", err)
	}
	defer sqlTx.Rollback()
	tx := &Tx{Tx: sqlTx, now: db.Now().UTC()}
	if err := fn(tx); err != nil {
		return err
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
