// Package outfile writes the output file of a command (export --to, backup
// --to): whole or absent (written beside it, fsynced, renamed, the
// directory fsynced), mode 0600 whatever the umask, an existing file
// replaced only when asked, and never a SQLite database nor a file a
// process has open as one (sqlite.LockForOverwrite, held over the rename),
// nor a file kept beside a database (its -wal, -shm, -journal, .lock:
// dbfile.CheckNotCompanion), whether it exists or not.
package outfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/plantstore/plantstore/internal/dbfile"
	"github.com/plantstore/plantstore/internal/sqlite"
)

// Check refuses early, before any work, an output file that Write would
// refuse at the end: a directory; an existing file without replace; a
// SQLite database, or a file a process has open as one; a file kept beside
// a database, existing or not.
func Check(path string, replace bool) error {
	if err := notCompanion(path); err != nil {
		return err
	}
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return nil // absent (or unreadable: the write says why)
	case fi.IsDir():
		return fmt.Errorf("%s is a directory: give a file name", path)
	case !replace:
		return fmt.Errorf("%s exists: give a new name, or --force to replace it", path)
	}
	release, err := sqlite.LockForOverwrite(path)
	if err != nil {
		return overwriteError(path, err)
	}
	release()
	return nil
}

// notCompanion refuses a path that names a file kept beside a SQLite
// database (dbfile.CheckNotCompanion).
func notCompanion(path string) error {
	err := dbfile.CheckNotCompanion(path)
	var ce *dbfile.CompanionError
	if errors.As(err, &ce) {
		return fmt.Errorf("%w: never written, not even with --force (that database would lose commits, or be replaceable while served); give another file name", err)
	}
	return err
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

// Write writes path through write into path.tmp-* in its directory (mode
// 0600, whatever the umask), fsyncs it, renames it to path and fsyncs the
// directory: path is either as before or complete. Without replace an
// existing path is an error (checked again at the end); with replace, a
// SQLite database at path, or a file a process has open as a database, is
// never replaced; nor is a file kept beside a database ever written (see
// Check). It returns the bytes written.
func Write(path string, replace bool, write func(io.Writer) error) (int64, error) {
	if err := notCompanion(path); err != nil {
		return 0, err
	}
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
	// Checked again at the end: the database may have appeared meanwhile.
	if err := notCompanion(path); err != nil {
		return cw.n, err
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
