package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/term"

	"github.com/plantstore/plantstore/internal/backup"
	"github.com/plantstore/plantstore/internal/buildinfo"
	"github.com/plantstore/plantstore/internal/cli/cliexit"
	"github.com/plantstore/plantstore/internal/cli/outfile"
	"github.com/plantstore/plantstore/internal/sqlite"
)

// pgBackupHelp is what backup and restore say about a PostgreSQL --db.
const pgBackupHelp = "back PostgreSQL up with its own tools: `pg_dump --format=custom --file=plantstore.dump \"$PLANTSTORE_DB\"`, restored with pg_restore (docs/deployment.md, \"PostgreSQL: pg_dump and pg_restore\")"

// backupCmd is `plantstore backup`.
type backupCmd struct {
	DB        string        `name:"db" env:"PLANTSTORE_DB" default:"data/plantstore.db" help:"The SQLite database file to back up (a server may be serving it)."`
	To        string        `name:"to" required:"" placeholder:"FILE" help:"Where to write the archive (a tar file); - for stdout."`
	Force     bool          `name:"force" help:"Replace FILE if it exists (never a database, nor its -wal, -shm, -journal or .lock)."`
	DBTimeout time.Duration `name:"db-timeout" env:"PLANTSTORE_DB_TIMEOUT" default:"10s" help:"How long to wait for the database while it is locked (a checkpoint, a recovery)."`
}

// Help is the long help of backup.
func (c *backupCmd) Help() string {
	return `Writes a consistent snapshot of a SQLite database, taken while a server may be serving it (SQLite's online backup API: writers are not blocked), as a tar archive of plantstore.db and manifest.json (format, schema version, row count of every table, size and SHA-256 of the database). The snapshot is checked (PRAGMA integrity_check, schema version, counts) before the archive is written; it needs free space for the snapshot next to FILE (in $TMPDIR for --to -) and for the archive. A one-line summary (key=value) goes to stderr; stdout carries only the archive of --to -. FILE is never a SQLite database, nor its -wal, -shm, -journal or .lock, even with --force. Exit 0: written; 1: failed or refused (nothing left at FILE); 2: usage.`
}

// Run writes the backup.
func (c *backupCmd) Run(ctx context.Context, e *env) error {
	switch {
	case isPostgres(c.DB):
		return cliexit.Usagef("backup: --db is a PostgreSQL URL: %s", pgBackupHelp)
	case isMemory(c.DB):
		return cliexit.Usagef("backup: --db memory: is a database in serve's memory: nothing else can read it")
	case c.DBTimeout <= 0:
		return cliexit.Usagef("--db-timeout must be positive")
	}
	if err := notCompanion("--db", c.DB); err != nil {
		return err
	}
	start := time.Now()
	toStdout := c.To == "-"
	if f, ok := e.stdout.(*os.File); ok && toStdout && term.IsTerminal(int(f.Fd())) {
		return cliexit.Usagef("--to -: stdout is a terminal: redirect it to a file or a pipe")
	}
	dir := os.TempDir()
	if !toStdout {
		dir = filepath.Dir(c.To)
		if err := outfile.Check(c.To, c.Force); err != nil {
			return fmt.Errorf("--to: %w", err)
		}
	}
	snap, err := backup.Take(ctx, c.DB, dir, c.DBTimeout, buildinfo.Short(version))
	if errors.Is(err, sqlite.ErrNoDatabase) {
		return fmt.Errorf("--db: database %s does not exist", c.DB)
	}
	if err != nil {
		return err
	}
	defer snap.Remove()
	m := &snap.Manifest
	var size int64
	if toStdout {
		if size, err = snap.WriteArchive(ctx, e.stdout); err != nil {
			return fmt.Errorf("backup: write to stdout: %w", err)
		}
	} else if size, err = outfile.Write(c.To, c.Force, func(w io.Writer) error {
		_, err := snap.WriteArchive(ctx, w)
		return err
	}); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	fmt.Fprintf(e.stderr, "plantstore: backup ok: db=%s to=%s bytes=%d db_bytes=%d sha256=%s schema_version=%d %s seconds=%.3f\n",
		c.DB, c.To, size, m.DB.Size, m.DB.SHA256, m.SchemaVersion, backup.TableCounts(m.Tables), time.Since(start).Seconds())
	return nil
}
