//go:build unix

package sqlite

import (
	"fmt"
	"syscall"
)

// lockFile takes an exclusive advisory lock on path+".lock", waiting for it,
// so that processes opening or migrating one database at once take turns.
// A side file is used because closing any descriptor of the database file
// would drop SQLite's own POSIX locks in this process.
func lockFile(path string) (unlock func(), err error) {
	f, err := openLockFile(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("sqlite: lock: %w", err)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
