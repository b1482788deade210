package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/plantstore/plantstore/internal/dbfile"
)

// Backups and restores of a database file (plantstore backup / restore).
//
// BackupFile copies a database that a server may be serving into a new
// file, a consistent snapshot; InspectFile checks a file (integrity, schema
// version, row counts); ReplaceFile puts a checked file in the place of a
// database no process has open. The archive around the file (tar, manifest)
// is the command's.

// ErrInUse is the error of ReplaceFile (and CheckNotInUse) when a process
// has the database open: a plantstore server or command (the in-use lock),
// or any other SQLite program in WAL mode (the -shm file's lock).
var ErrInUse = errors.New("sqlite: the database is open in another process")

// BackupFile writes a consistent snapshot of the database at src, which a
// server may be serving, to dst, a new or empty file; it is fsynced
// and in rollback-journal mode (a single file: a server switches it back to
// WAL when it opens it). It uses SQLite's online backup API on a connection
// that writes nothing: in WAL mode one read transaction copies every page, which
// blocks no writer (commits go on into the WAL; only checkpoints wait past
// the snapshot's point). It never creates src.
func BackupFile(ctx context.Context, src, dst string, timeout time.Duration) error {
	if _, err := os.Stat(src); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: %s", ErrNoDatabase, src)
		}
		return fmt.Errorf("sqlite: backup: %w", err)
	}
	if timeout <= 0 {
		timeout = DefaultOpTimeout
	}
	// The in-use lock keeps a restore from replacing src meanwhile. Best
	// effort: a reader that may not create src's lock file goes without
	// (its snapshot stays consistent: it reads the file it opened).
	if release, err := holdInUse(src); err == nil {
		defer release()
	}
	// Read-write (read-only when the file is) but writing nothing: a
	// read-only connection could not remove the WAL it opened when it is
	// the last one to close (no server running), and would leave it.
	q := url.Values{}
	q.Set("mode", "rw")
	q.Set("_query_only", "true")
	q.Set("_busy_timeout", strconv.FormatInt(timeout.Milliseconds(), 10))
	source, err := sql.Open("sqlite3", "file:"+url.PathEscape(src)+"?"+q.Encode())
	if err != nil {
		return fmt.Errorf("sqlite: backup: %w", err)
	}
	defer source.Close()
	f, err := os.OpenFile(dst, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("sqlite: backup: %w", err)
	}
	fi, err := f.Stat()
	f.Close()
	if err != nil {
		return fmt.Errorf("sqlite: backup: %w", err)
	}
	if fi.Size() != 0 {
		return fmt.Errorf("sqlite: backup: %s is not empty", dst)
	}
	target, err := sql.Open("sqlite3", "file:"+url.PathEscape(dst)+"?_busy_timeout=1000")
	if err != nil {
		return fmt.Errorf("sqlite: backup: %w", err)
	}
	defer target.Close()
	if err := copyDatabase(ctx, target, source, timeout); err != nil {
		return fmt.Errorf("sqlite: backup %s: %w", src, err)
	}
	// One file, no WAL: the snapshot travels alone.
	var mode string
	if err := target.QueryRowContext(ctx, `PRAGMA journal_mode=DELETE`).Scan(&mode); err != nil {
		return fmt.Errorf("sqlite: backup: journal mode: %w", err)
	}
	if err := target.Close(); err != nil {
		return fmt.Errorf("sqlite: backup: %w", err)
	}
	return syncFile(dst)
}

// syncFile fsyncs the file at path.
func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// syncDir fsyncs the directory dir, so that a rename in it survives a
// power cut.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// FileReport is what InspectFile found in a database file.
type FileReport struct {
	// Integrity is PRAGMA integrity_check's answer: "ok", or its first
	// problems, one a line.
	Integrity string
	// Schema is the file's schema version (the migrations applied), Known
	// the newest this binary knows.
	Schema, Known int64
	// Tables counts the rows of every table but SQLite's own.
	Tables map[string]int64
}

// InspectFile checks the database file at path, which no other process
// uses (a snapshot or a file being restored): integrity, schema version and
// row counts. It opens it read-only and creates nothing.
func InspectFile(ctx context.Context, path string) (*FileReport, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("sqlite: inspect: %w", err)
	}
	db, err := sql.Open("sqlite3", "file:"+url.PathEscape(path)+"?mode=ro")
	if err != nil {
		return nil, fmt.Errorf("sqlite: inspect: %w", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	r := &FileReport{Tables: map[string]int64{}}
	lines, err := queryStrings(ctx, db, `PRAGMA integrity_check(20)`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: inspect %s: integrity check: %w", path, err)
	}
	r.Integrity = strings.Join(lines, "\n")
	if r.Integrity != "ok" {
		return r, nil // counts of a damaged file mean little
	}
	p, err := newProvider(db, nil)
	if err != nil {
		return nil, fmt.Errorf("sqlite: migrations: %w", err)
	}
	if r.Schema, r.Known, err = p.GetVersions(ctx); err != nil {
		return nil, fmt.Errorf("sqlite: inspect %s: schema version: %w", path, err)
	}
	// The search index (plant_search and its tables) is derived from plants.
	names, err := queryStrings(ctx, db, `SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\'
AND name <> 'plant_search' AND name NOT LIKE 'plant\_search\_%' ESCAPE '\' ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: inspect %s: tables: %w", path, err)
	}
	for _, name := range names {
		var n int64
		q := `SELECT COUNT(*) FROM "` + strings.ReplaceAll(name, `"`, `""`) + `"`
		if err := db.QueryRowContext(ctx, q).Scan(&n); err != nil {
			return nil, fmt.Errorf("sqlite: inspect %s: count %s: %w", path, name, err)
		}
		r.Tables[name] = n
	}
	return r, nil
}

// CheckNotInUse returns ErrInUse when a process has the database at path
// open (see ReplaceFile).
func CheckNotInUse(path string) error {
	release, err := lockUnused(path)
	if err != nil {
		return err
	}
	release()
	return nil
}

// lockUnused takes the lock processes take turns opening path with, then
// the in-use lock exclusively without waiting, and checks that no other
// SQLite program has path open: ErrInUse when a process does. release
// drops both locks.
func lockUnused(path string) (release func(), err error) {
	unlock, err := lockFile(path)
	if err != nil {
		return nil, err
	}
	exclusive, err := tryExclusive(path)
	if err != nil {
		unlock()
		return nil, err
	}
	if err := checkSQLiteUsers(path); err != nil {
		exclusive()
		unlock()
		return nil, err
	}
	return func() { exclusive(); unlock() }, nil
}

func checkSQLiteUsers(path string) error {
	used, err := sqliteUsers(path)
	if err != nil {
		return err
	}
	if used {
		return fmt.Errorf("%w: %s (a SQLite program holds its shared memory file %s-shm)", ErrInUse, path, path)
	}
	return nil
}

// InUseChecked reports whether ReplaceFile can tell that a process has the
// database open on this system (Linux: yes).
func InUseChecked() bool { return inUseSupported }

// ReplaceFile puts the database file tmp (checked, fsynced) in the place of
// the database at path, which may not exist: with the in-use lock held
// exclusively (ErrInUse when a process has the database open; no process
// opens it meanwhile) it removes path's -wal and -shm files (they belong to
// the database replaced: SQLite would apply that WAL to the new file),
// renames tmp over path and fsyncs the directory. tmp must be in path's
// directory.
func ReplaceFile(tmp, path string) error {
	if filepath.Dir(tmp) != filepath.Dir(path) {
		return fmt.Errorf("sqlite: replace: %s is not in the directory of %s", tmp, path)
	}
	release, err := lockUnused(path)
	if err != nil {
		return err
	}
	defer release()
	dir := filepath.Dir(path)
	for _, stale := range []string{path + "-wal", path + "-shm", path + "-journal"} {
		if err := os.Remove(stale); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("sqlite: replace: %w", err)
		}
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("sqlite: replace: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("sqlite: replace: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("sqlite: replace: %w", err)
	}
	return nil
}

// ErrIsDatabase is the error of LockForOverwrite when the file is a SQLite
// database.
var ErrIsDatabase = errors.New("sqlite: the file is a SQLite database")

// LockForOverwrite is for a command about to put a file that is not a
// database (an export, a backup archive) at path in place of the file there:
// it returns ErrInUse when a process has path open as a database, and
// ErrIsDatabase when path is a SQLite database at rest (its header says so,
// or a -wal or -shm file is beside it). Otherwise it holds, until release,
// the in-use lock of path exclusively when path has one (a plantstore
// process opened it once), so that no plantstore process opens it before
// the caller's rename; a path without one has never been a plantstore
// database, and the lock file is not created for it.
func LockForOverwrite(path string) (release func(), err error) {
	release = func() {}
	if _, err := os.Lstat(path + ".lock"); err == nil {
		if release, err = lockUnused(path); err != nil {
			return nil, err
		}
	} else if err := checkSQLiteUsers(path); err != nil {
		return nil, err
	}
	db, err := dbfile.IsDatabase(path)
	if err == nil && !db {
		for _, side := range []string{path + "-wal", path + "-shm"} {
			if _, serr := os.Lstat(side); serr == nil {
				db = true
			}
		}
	}
	switch {
	case err != nil:
		release()
		return nil, fmt.Errorf("sqlite: %w", err)
	case db:
		release()
		return nil, fmt.Errorf("%w: %s", ErrIsDatabase, path)
	}
	return release, nil
}

// releaseInUse drops the in-use lock Open took, once.
func (db *DB) releaseInUse() {
	if db.inUse != nil {
		db.inUse()
		db.inUse = nil
	}
}

// queryStrings returns the one text column of query's rows.
func queryStrings(ctx context.Context, db *sql.DB, query string) ([]string, error) {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
