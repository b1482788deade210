//go:build linux

package sqlite

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// The "in use" lock. Every DB opened on a file (and Backup's source) holds
// a shared lock on the first byte of path+".lock" until Close; ReplaceFile
// takes it exclusively without waiting, so it refuses to replace a database
// that any plantstore process has open, and no process opens the database
// while it is being replaced. These are open file description locks
// (F_OFD_SETLK): they belong to the descriptor, not to the process, so two
// DBs of one process on one file each hold their own and closing any other
// descriptor of the file drops neither, unlike classic POSIX locks. On Linux
// they do not interact with the flock of lockFile (open and migrate taking
// turns, as older binaries do), which stays as it was.

// inUseSupported reports whether this system has the in-use lock.
const inUseSupported = true

// ofdLock sets (typ F_RDLCK or F_WRLCK) the lock on byte 0 of f, waiting
// for it when wait is set.
func ofdLock(f *os.File, typ int16, wait bool) error {
	cmd := unix.F_OFD_SETLK
	if wait {
		cmd = unix.F_OFD_SETLKW
	}
	lk := unix.Flock_t{Type: typ, Whence: io.SeekStart, Start: 0, Len: 1}
	for {
		err := unix.FcntlFlock(f.Fd(), cmd, &lk)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// holdInUse takes the shared in-use lock of the database at path (waiting
// while a ReplaceFile holds it) and returns its release.
func holdInUse(path string) (release func(), err error) {
	f, err := openLockFile(path)
	if errors.Is(err, os.ErrPermission) {
		f, err = os.Open(path + ".lock") // a reader (backup) of a file it may not write
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: in-use lock: %w", err)
	}
	if err := ofdLock(f, unix.F_RDLCK, true); err != nil {
		f.Close()
		return nil, fmt.Errorf("sqlite: in-use lock: %w", err)
	}
	return func() { f.Close() }, nil // closing the descriptor drops its lock
}

// tryExclusive takes the in-use lock of the database at path exclusively,
// without waiting: ErrInUse when a process holds it.
func tryExclusive(path string) (release func(), err error) {
	f, err := openLockFile(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: in-use lock: %w", err)
	}
	if err := ofdLock(f, unix.F_WRLCK, false); err != nil {
		f.Close()
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) {
			return nil, fmt.Errorf("%w: %s", ErrInUse, path)
		}
		return nil, fmt.Errorf("sqlite: in-use lock: %w", err)
	}
	return func() { f.Close() }, nil
}

// sqliteUsers reports whether a process other than this one has the
// database at path open through SQLite in WAL mode (the sqlite3 shell, a
// replicator such as Litestream, a binary older than the in-use lock): each
// such connection holds a shared lock on the "DMS" byte of the -shm file
// (offset 128 in SQLite's unix VFS), which a test for a write lock sees.
func sqliteUsers(path string) (bool, error) {
	f, err := os.Open(path + "-shm")
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("sqlite: check %s-shm: %w", path, err)
	}
	defer f.Close()
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart, Start: shmDMS, Len: 1}
	// F_GETLK (classic) reports the locks of other processes only, which is
	// what SQLite takes; this process's own connections are not a conflict.
	if err := unix.FcntlFlock(f.Fd(), unix.F_GETLK, &lk); err != nil {
		return false, fmt.Errorf("sqlite: check %s-shm: %w", path, err)
	}
	return lk.Type != unix.F_UNLCK, nil
}

// shmDMS is the offset of the -shm file's "dead man switch" lock byte in
// SQLite's unix VFS (UNIX_SHM_BASE 120 + SQLITE_SHM_NLOCK 8).
const shmDMS = 128
