package sqlite

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
)

// File modes. A database holds webhook signing secrets (and token hashes),
// so its files are its owner's alone: FileMode. SQLite itself would create
// the database file 0644 less the umask (SQLITE_DEFAULT_FILE_PERMISSIONS),
// and gives the -wal, -shm and -journal files the database file's mode
// (set with fchmod, whatever the umask). So Open creates the database file
// itself, 0600, before SQLite opens it: the files SQLite adds get 0600 too.

// FileMode is the mode of every file Open creates: the database file and,
// through it, its -wal, -shm and -journal.
const FileMode fs.FileMode = 0o600

// secureFiles runs in Open, with the open lock held, before SQLite opens the
// database: a database file that does not exist is created empty (SQLite
// takes a 0-byte file as an empty database) with FileMode, set again with
// fchmod so that neither the umask nor a directory's default ACL changes
// it; an existing database file, -wal or -shm that others than its owner
// may read or write loses those permissions (mode &^ 0o077), and
// OnFileMode is told, with the error when that failed (the process does not
// own the file: it is still opened).
func (db *DB) secureFiles() error {
	_, err := os.Lstat(db.Path)
	if errors.Is(err, fs.ErrNotExist) && !db.MustExist { // with MustExist SQLite opens the file without creating it
		f, err := os.OpenFile(db.Path, os.O_RDWR|os.O_CREATE|os.O_EXCL, FileMode)
		switch {
		case err == nil:
			err = f.Chmod(FileMode)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("sqlite: create %s: %w", db.Path, err)
			}
			return nil
		case !errors.Is(err, fs.ErrExist): // else another process created it meanwhile
			return fmt.Errorf("sqlite: create %s: %w", db.Path, err)
		}
	}
	if runtime.GOOS == "windows" { // no Unix permissions to tighten
		return nil
	}
	for _, path := range []string{db.Path, db.Path + "-wal", db.Path + "-shm"} {
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm()&0o077 == 0 || !fi.Mode().IsRegular() {
			continue // absent (or not ours to judge): SQLite creates it with the database's mode
		}
		was := fi.Mode().Perm()
		err = os.Chmod(path, was&^0o077)
		if db.OnFileMode != nil {
			db.OnFileMode(path, was, err)
		}
	}
	return nil
}

// openLockFile opens path+".lock" (the open lock and the in-use lock)
// read-write, creating it with FileMode; like SQLite with its own files, it
// sets FileMode again on an empty lock file that has another mode (a umask
// took bits away), when it may.
func openLockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, FileMode)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err == nil && fi.Size() == 0 && fi.Mode().Perm() != FileMode {
		_ = f.Chmod(FileMode) // best effort: not the owner's file
	}
	return f, nil
}
