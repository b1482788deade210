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
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/plantstore/plantstore/internal/cliexit"
	"github.com/plantstore/plantstore/sqlite"
)

// The backup archive (docs/deployment.md, "Backups"): a POSIX tar stream of
// two regular files, in this order:
//
//	plantstore.db   the SQLite snapshot (one file, rollback-journal mode)
//	manifest.json   backupManifest, written after the database so that its
//	                SHA-256 is computed while the database streams out
const (
	backupFormat     = "plantstore-backup/1"
	backupDBName     = "plantstore.db"
	backupManifestFN = "manifest.json"
	// maxManifest bounds the manifest restore reads.
	maxManifest = 1 << 20
)

// pgBackupHelp is what backup and restore say about a PostgreSQL --db.
const pgBackupHelp = "back PostgreSQL up with its own tools: `pg_dump --format=custom --file=plantstore.dump \"$PLANTSTORE_DB\"`, restored with pg_restore (docs/deployment.md, \"PostgreSQL: pg_dump and pg_restore\")"

// backupManifest is manifest.json.
type backupManifest struct {
	Format            string           `json:"format"`
	CreatedAt         time.Time        `json:"created_at"`
	PlantstoreVersion string           `json:"plantstore_version"`
	SchemaVersion     int64            `json:"schema_version"`
	Tables            map[string]int64 `json:"tables"`
	DB                backupFile       `json:"db"`
	IntegrityCheck    string           `json:"integrity_check"`
}

// backupFile describes plantstore.db in the manifest.
type backupFile struct {
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// backupCmd is `plantstore backup`.
type backupCmd struct {
	DB        string        `name:"db" env:"PLANTSTORE_DB" default:"data/plantstore.db" help:"The SQLite database file to back up; a server may be serving it. (PostgreSQL: use pg_dump, see docs/deployment.md.)"`
	To        string        `name:"to" required:"" placeholder:"FILE" help:"Where to write the backup archive (a tar file: the database and manifest.json); - writes it to stdout. Written to FILE.tmp-* beside it (mode 0600), fsynced, then renamed."`
	Force     bool          `name:"force" help:"Replace FILE if it exists (without it an existing FILE is an error); never a SQLite database, nor a file a process has open as one."`
	DBTimeout time.Duration `name:"db-timeout" env:"PLANTSTORE_DB_TIMEOUT" default:"10s" help:"How long to wait for the database while it is locked (a checkpoint, a recovery)."`
}

// Help is the long help of backup.
func (c *backupCmd) Help() string {
	return `Writes a consistent snapshot of a SQLite database, taken while a server may be serving it (SQLite's online backup API: writers are not blocked), as a tar archive of plantstore.db and manifest.json (format, schema version, row count of every table, size and SHA-256 of the database). The snapshot is checked (PRAGMA integrity_check, schema version, counts) before the archive is written; it needs free space for the snapshot next to FILE (in $TMPDIR for --to -) and for the archive. A one-line summary (key=value) goes to stderr; stdout carries only the archive of --to -. Exit 0: written; 1: failed (nothing left at FILE); 2: usage.`
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
	start := time.Now()
	toStdout := c.To == "-"
	if f, ok := e.stdout.(*os.File); ok && toStdout && term.IsTerminal(int(f.Fd())) {
		return cliexit.Usagef("--to -: stdout is a terminal: redirect it to a file or a pipe")
	}
	dir := os.TempDir()
	if !toStdout {
		dir = filepath.Dir(c.To)
		if err := checkOutput(c.To, c.Force); err != nil {
			return err
		}
	}
	snap, err := os.CreateTemp(dir, ".plantstore-snapshot-*.db")
	if err != nil {
		return fmt.Errorf("backup: snapshot file: %w", err)
	}
	snap.Close()
	defer removeDBFiles(snap.Name())
	if err := sqlite.BackupFile(ctx, c.DB, snap.Name(), c.DBTimeout); err != nil {
		if errors.Is(err, sqlite.ErrNoDatabase) {
			return fmt.Errorf("--db: database %s does not exist", c.DB)
		}
		return fmt.Errorf("backup: %w", err)
	}
	report, err := sqlite.InspectFile(ctx, snap.Name())
	if err != nil {
		return fmt.Errorf("backup: check the snapshot: %w", err)
	}
	switch {
	case report.Integrity != "ok":
		return fmt.Errorf("backup: the snapshot of %s fails PRAGMA integrity_check, so the database itself is damaged: %s", c.DB, report.Integrity)
	case report.Schema == 0:
		return fmt.Errorf("backup: %s has no plantstore schema (run plantstore migrate first?)", c.DB)
	case report.Schema > report.Known:
		return fmt.Errorf("backup: the schema version of %s (%d) is newer than this plantstore knows (%d): use the plantstore that serves it", c.DB, report.Schema, report.Known)
	}
	m := backupManifest{
		Format:            backupFormat,
		CreatedAt:         start.UTC().Truncate(time.Millisecond),
		PlantstoreVersion: shortVersion(),
		SchemaVersion:     report.Schema,
		Tables:            report.Tables,
		IntegrityCheck:    report.Integrity,
	}
	var size int64
	if toStdout {
		if size, err = writeBackup(ctx, e.stdout, snap.Name(), &m); err != nil {
			return fmt.Errorf("backup: write to stdout: %w", err)
		}
	} else if size, err = writeFileAtomic(c.To, c.Force, func(w io.Writer) error {
		var err error
		_, err = writeBackup(ctx, w, snap.Name(), &m)
		return err
	}); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	fmt.Fprintf(e.stderr, "plantstore: backup ok: db=%s to=%s bytes=%d db_bytes=%d sha256=%s schema_version=%d %s seconds=%.3f\n",
		c.DB, c.To, size, m.DB.Size, m.DB.SHA256, m.SchemaVersion, tableCounts(m.Tables), time.Since(start).Seconds())
	return nil
}

// tableCounts renders counts as tables.NAME=N pairs, sorted by name.
func tableCounts(t map[string]int64) string {
	var b strings.Builder
	for i, name := range slices.Sorted(maps.Keys(t)) {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "tables.%s=%d", name, t[name])
	}
	return b.String()
}

// shortVersion is the version line of versionString without the program's
// name ("v1.2.3", "(devel)").
func shortVersion() string {
	first, _, _ := strings.Cut(versionString(), "\n")
	return strings.TrimPrefix(first, "plantstore ")
}

// writeBackup writes the archive of the snapshot file db to w, filling in
// m.DB, and returns the bytes written.
func writeBackup(ctx context.Context, w io.Writer, db string, m *backupManifest) (int64, error) {
	f, err := os.Open(db)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	cw := &countWriter{w: w}
	tw := tar.NewWriter(cw)
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: backupDBName, Mode: 0o600, Size: fi.Size(), ModTime: m.CreatedAt}
	if err := tw.WriteHeader(hdr); err != nil {
		return cw.n, err
	}
	h := sha256.New()
	n, err := io.Copy(tw, io.TeeReader(ctxReader{ctx, f}, h))
	if err != nil {
		return cw.n, err
	}
	if n != fi.Size() {
		return cw.n, fmt.Errorf("the snapshot changed size while being written (%d of %d bytes)", n, fi.Size())
	}
	m.DB = backupFile{Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}
	js, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return cw.n, err
	}
	js = append(js, '\n')
	hdr = &tar.Header{Typeflag: tar.TypeReg, Name: backupManifestFN, Mode: 0o600, Size: int64(len(js)), ModTime: m.CreatedAt}
	if err := tw.WriteHeader(hdr); err != nil {
		return cw.n, err
	}
	if _, err := tw.Write(js); err != nil {
		return cw.n, err
	}
	if err := tw.Close(); err != nil {
		return cw.n, err
	}
	return cw.n, nil
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// checkOutput refuses early, before any work, an output file (--to) that
// writeFileAtomic would refuse at the end: a directory; an existing file
// without force; a SQLite database, or a file a process has open as one
// (overwriteError).
func checkOutput(path string, force bool) error {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return nil // absent (or unreadable: the write says why)
	case fi.IsDir():
		return fmt.Errorf("--to: %s is a directory: give a file name", path)
	case !force:
		return fmt.Errorf("--to: %s exists: give a new name, or --force to replace it", path)
	}
	release, err := sqlite.LockForOverwrite(path)
	if err != nil {
		return fmt.Errorf("--to: %w", overwriteError(path, err))
	}
	release()
	return nil
}

// overwriteError explains an error of sqlite.LockForOverwrite.
func overwriteError(path string, err error) error {
	switch {
	case errors.Is(err, sqlite.ErrInUse):
		return fmt.Errorf("%s is a database open in another process (a plantstore server or command, or a SQLite program): never replaced, not even with --force; give another file name", path)
	case errors.Is(err, sqlite.ErrIsDatabase):
		return fmt.Errorf("%s is a SQLite database: never replaced, not even with --force (restore replaces a database, from a backup); give another file name", path)
	}
	return err
}

// writeFileAtomic writes path through write into path.tmp-* in its
// directory (mode 0600, whatever the umask), fsyncs it, renames it to path
// and fsyncs the directory: path is either as before or complete. Without
// replace an existing path is an error (checked again at the end); with
// replace, a SQLite database at path, or a file a process has open as a
// database, is never replaced (sqlite.LockForOverwrite, held over the
// rename). It returns the bytes written.
func writeFileAtomic(path string, replace bool, write func(io.Writer) error) (int64, error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, filepath.Base(path)+".tmp-*")
	if err != nil {
		return 0, err
	}
	done := false
	defer func() {
		if !done {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	// CreateTemp asks for 0600, less the umask: exactly 0600 (the file may
	// be a database's backup, which holds webhook signing secrets).
	if err := f.Chmod(0o600); err != nil {
		return 0, err
	}
	cw := &countWriter{w: f}
	if err := write(cw); err != nil {
		return cw.n, fmt.Errorf("write %s: %w", f.Name(), err)
	}
	if err := f.Sync(); err != nil {
		return cw.n, fmt.Errorf("fsync %s: %w", f.Name(), err)
	}
	if err := f.Close(); err != nil {
		return cw.n, fmt.Errorf("write %s: %w", f.Name(), err)
	}
	if !replace {
		// A hard link does not replace: an existing path fails here.
		if err := os.Link(f.Name(), path); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return cw.n, fmt.Errorf("%s appeared meanwhile: not replaced", path)
			}
			// A file system without hard links: rename after a last look.
			if _, serr := os.Lstat(path); serr == nil {
				return cw.n, fmt.Errorf("%s appeared meanwhile: not replaced", path)
			}
			if err := os.Rename(f.Name(), path); err != nil {
				return cw.n, err
			}
		} else if err := os.Remove(f.Name()); err != nil {
			return cw.n, err
		}
	} else {
		release, err := sqlite.LockForOverwrite(path)
		if err != nil {
			return cw.n, overwriteError(path, err)
		}
		err = os.Rename(f.Name(), path)
		release()
		if err != nil {
			return cw.n, err
		}
	}
	done = true
	d, err := os.Open(dir)
	if err != nil {
		return cw.n, err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return cw.n, fmt.Errorf("fsync %s: %w", dir, err)
	}
	return cw.n, nil
}

// removeDBFiles removes a temporary database file and the files SQLite
// may have left beside it.
func removeDBFiles(path string) {
	for _, p := range []string{path, path + "-journal", path + "-wal", path + "-shm"} {
		os.Remove(p)
	}
}
