package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/plantstore/plantstore/internal/backup"
	"github.com/plantstore/plantstore/internal/cli/cliexit"
	"github.com/plantstore/plantstore/internal/sqlite"
)

// restoreCmd is `plantstore restore`.
type restoreCmd struct {
	From  string `name:"from" required:"" placeholder:"FILE" help:"The backup archive (plantstore backup); - reads it from stdin."`
	DB    string `name:"db" env:"PLANTSTORE_DB" default:"data/plantstore.db" help:"The SQLite database file to restore into (none open; new unless --force)."`
	Force bool   `name:"force" help:"Replace an existing database at --db (never one that is open)."`
}

// Help is the long help of restore.
func (c *restoreCmd) Help() string {
	return `Restores a SQLite database from a plantstore backup archive. The database is written to a temporary file beside --db and checked against the manifest (size, SHA-256, PRAGMA integrity_check, schema version not newer than this plantstore, the row count of every table) before it replaces anything; then the -wal and -shm files of the database replaced are removed (they belong to it) and the file is renamed into place (mode 0600, with the owner of the file replaced), fsynced. A database that a plantstore server or command (or any SQLite program in WAL mode) has open is never replaced: stop the server first. An existing database is replaced only with --force; a --db that is the -wal, -shm, -journal or .lock of a database is refused, even with --force. Exit 0: restored; 1: refused or failed (--db untouched); 2: usage.`
}

// Run restores the archive.
func (c *restoreCmd) Run(ctx context.Context, e *env) error {
	switch {
	case isPostgres(c.DB):
		return cliexit.Usagef("restore: --db is a PostgreSQL URL: %s", pgBackupHelp)
	case isMemory(c.DB):
		return cliexit.Usagef("restore: --db memory: is a database in serve's memory: restore into a file and serve that")
	case c.DB == "":
		return cliexit.Usagef("--db: a database path is required")
	}
	// Restore writes --db: never a file kept beside a database.
	if err := notCompanion("--db", c.DB); err != nil {
		return err
	}
	start := time.Now()
	if fi, err := os.Stat(c.DB); err == nil {
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("--db: %s is not a regular file", c.DB)
		}
		if !c.Force {
			return fmt.Errorf("--db: database %s exists: restore replaces a database only with --force (the server stopped); or restore to a new path", c.DB)
		}
	} else if exists(c.DB+"-wal") && !c.Force {
		return fmt.Errorf("--db: %s does not exist but its -wal does (the database was deleted while open: that WAL may hold its last commits): move it away, or give --force to discard it", c.DB)
	}
	// Fail fast, before reading the archive; checked again at the rename.
	if err := c.notInUse(); err != nil {
		return err
	}
	if !sqlite.InUseChecked() {
		fmt.Fprintf(e.stderr, "plantstore: warning: this system has no open file description locks: restore cannot tell whether a server has %s open; make sure none has\n", c.DB)
	}
	in := io.Reader(os.Stdin)
	name := "stdin"
	if c.From != "-" {
		f, err := os.Open(c.From)
		if err != nil {
			return fmt.Errorf("--from: %w", err)
		}
		defer f.Close()
		in, name = f, c.From
	}
	if err := os.MkdirAll(filepath.Dir(c.DB), 0o750); err != nil {
		return fmt.Errorf("--db: %w", err)
	}
	m, report, err := backup.Restore(ctx, in, name, c.DB)
	if errors.Is(err, sqlite.ErrInUse) {
		return c.inUse(err)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "plantstore: restore ok: db=%s from=%s created_at=%s schema_version=%d %s seconds=%.3f\n",
		c.DB, name, m.CreatedAt.Format(time.RFC3339), m.SchemaVersion, backup.TableCounts(m.Tables), time.Since(start).Seconds())
	if report.Schema < report.Known {
		fmt.Fprintf(e.stderr, "plantstore: the database is at schema version %d, this plantstore's is %d: serve migrates it on start (or run plantstore migrate)\n", report.Schema, report.Known)
	}
	return nil
}

// notInUse refuses early a --db that a process has open.
func (c *restoreCmd) notInUse() error {
	if _, err := os.Stat(c.DB); err != nil {
		return nil // no database: nothing in use (ReplaceFile checks again)
	}
	if err := sqlite.CheckNotInUse(c.DB); err != nil {
		if errors.Is(err, sqlite.ErrInUse) {
			return c.inUse(err)
		}
		return fmt.Errorf("restore: %w", err)
	}
	return nil
}

func (c *restoreCmd) inUse(err error) error {
	return fmt.Errorf("--db: %s is open in another process (a plantstore server or command, or a SQLite program): stop it, then restore; nothing was changed (%v)", c.DB, err)
}
