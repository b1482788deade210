package main

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/plantstore/plantstore/internal/cliexit"
	"github.com/plantstore/plantstore/sqlite"
)

// restoreCmd is `plantstore restore`.
type restoreCmd struct {
	From  string `name:"from" required:"" placeholder:"FILE" help:"The backup archive (plantstore backup); - reads it from stdin."`
	DB    string `name:"db" env:"PLANTSTORE_DB" default:"data/plantstore.db" help:"The SQLite database file to restore into. It must not exist, unless --force; no process may have it open."`
	Force bool   `name:"force" help:"Replace an existing database at --db (never one that a server or another process has open)."`
}

// Help is the long help of restore.
func (c *restoreCmd) Help() string {
	return `Restores a SQLite database from a plantstore backup archive. The database is written to a temporary file beside --db and checked against the manifest (size, SHA-256, PRAGMA integrity_check, schema version not newer than this plantstore, the row count of every table) before it replaces anything; then the -wal and -shm files of the database replaced are removed (they belong to it) and the file is renamed into place (mode 0600, with the owner of the file replaced), fsynced. A database that a plantstore server or command (or any SQLite program in WAL mode) has open is never replaced: stop the server first. An existing database is replaced only with --force. Exit 0: restored; 1: refused or failed (--db untouched); 2: usage.`
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
	dir := filepath.Dir(c.DB)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("--db: %w", err)
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(c.DB)+".restore-*")
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	placed := false
	defer func() {
		tmp.Close()
		if !placed {
			removeDBFiles(tmp.Name())
		}
	}()
	m, err := readBackup(ctx, in, tmp)
	if err != nil {
		return fmt.Errorf("restore: %s: %w", name, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	report, err := sqlite.InspectFile(ctx, tmp.Name())
	if err != nil {
		return fmt.Errorf("restore: %s: check the database: %w", name, err)
	}
	if err := checkRestored(m, report); err != nil {
		return fmt.Errorf("restore: %s: %w; %s is untouched", name, err, c.DB)
	}
	// The restored file is its owner's alone, like every database file
	// (sqlite.FileMode: it holds webhook signing secrets), whatever the
	// umask, and it gets the owner of the one it replaces, so the server's
	// user can open it (when allowed: restore run as root, or as that user).
	if err := os.Chmod(tmp.Name(), sqlite.FileMode); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if fi, err := os.Stat(c.DB); err == nil {
		keepOwner(tmp.Name(), fi)
	}
	if err := sqlite.ReplaceFile(tmp.Name(), c.DB); err != nil {
		if errors.Is(err, sqlite.ErrInUse) {
			return c.inUse(err)
		}
		return fmt.Errorf("restore: %w", err)
	}
	placed = true
	fmt.Fprintf(e.stderr, "plantstore: restore ok: db=%s from=%s created_at=%s schema_version=%d %s seconds=%.3f\n",
		c.DB, name, m.CreatedAt.Format(time.RFC3339), m.SchemaVersion, tableCounts(m.Tables), time.Since(start).Seconds())
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

// readBackup reads the archive from r: the database into f (checking its
// size and SHA-256 against the manifest), then the manifest, which it
// returns. f is fsynced.
func readBackup(ctx context.Context, r io.Reader, f *os.File) (*backupManifest, error) {
	tr := tar.NewReader(r)
	hdr, err := tr.Next()
	if err != nil {
		return nil, fmt.Errorf("not a plantstore backup archive: %w", err)
	}
	if hdr.Name != backupDBName || hdr.Typeflag != tar.TypeReg {
		return nil, fmt.Errorf("not a plantstore backup archive: its first entry is %q, not %s", hdr.Name, backupDBName)
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), ctxReader{ctx, tr})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", backupDBName, err)
	}
	if err := f.Sync(); err != nil {
		return nil, err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	hdr, err = tr.Next()
	if err != nil {
		return nil, fmt.Errorf("no %s after %s (a truncated archive?): %w", backupManifestFN, backupDBName, err)
	}
	if hdr.Name != backupManifestFN || hdr.Typeflag != tar.TypeReg {
		return nil, fmt.Errorf("unexpected entry %q after %s", hdr.Name, backupDBName)
	}
	if hdr.Size > maxManifest {
		return nil, fmt.Errorf("%s is %d bytes, more than %d", backupManifestFN, hdr.Size, maxManifest)
	}
	js, err := io.ReadAll(tr)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", backupManifestFN, err)
	}
	var m backupManifest
	if err := json.Unmarshal(js, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", backupManifestFN, err)
	}
	if _, err := tr.Next(); err != io.EOF {
		if err == nil {
			return nil, fmt.Errorf("unexpected entry after %s", backupManifestFN)
		}
		return nil, fmt.Errorf("after %s: %w", backupManifestFN, err)
	}
	switch {
	case m.Format != backupFormat:
		return nil, fmt.Errorf("%s: format %q, this plantstore reads %q", backupManifestFN, m.Format, backupFormat)
	case m.IntegrityCheck != "ok":
		return nil, fmt.Errorf("%s: integrity_check %q, not ok", backupManifestFN, m.IntegrityCheck)
	case n != m.DB.Size:
		return nil, fmt.Errorf("%s is %d bytes, the manifest says %d", backupDBName, n, m.DB.Size)
	case sum != m.DB.SHA256:
		return nil, fmt.Errorf("%s has SHA-256 %s, the manifest says %s: the archive is damaged", backupDBName, sum, m.DB.SHA256)
	}
	return &m, nil
}

// checkRestored compares what InspectFile found in the restored file with
// the manifest.
func checkRestored(m *backupManifest, r *sqlite.FileReport) error {
	switch {
	case r.Integrity != "ok":
		return fmt.Errorf("the database fails PRAGMA integrity_check: %s", r.Integrity)
	case r.Schema > r.Known:
		return fmt.Errorf("the backup's schema version %d is newer than this plantstore knows (%d): restore it with the plantstore that made it", r.Schema, r.Known)
	case r.Schema != m.SchemaVersion:
		return fmt.Errorf("the database's schema version is %d, the manifest says %d", r.Schema, m.SchemaVersion)
	}
	var diffs []string
	for _, name := range slices.Sorted(maps.Keys(m.Tables)) {
		if got, ok := r.Tables[name]; !ok {
			diffs = append(diffs, fmt.Sprintf("table %s is missing", name))
		} else if got != m.Tables[name] {
			diffs = append(diffs, fmt.Sprintf("%s has %d rows, the manifest says %d", name, got, m.Tables[name]))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(r.Tables)) {
		if _, ok := m.Tables[name]; !ok {
			diffs = append(diffs, fmt.Sprintf("table %s is not in the manifest", name))
		}
	}
	if len(diffs) > 0 {
		return fmt.Errorf("the database does not match the manifest: %s", strings.Join(diffs, "; "))
	}
	return nil
}

// ctxReader stops a long read when ctx is done (SIGINT, SIGTERM).
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
