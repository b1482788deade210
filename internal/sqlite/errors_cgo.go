//go:build cgo

package sqlite

import (
	"errors"

	"github.com/mattn/go-sqlite3"
)

// driverUnavailable reports the driver's errors that mean the storage
// cannot serve now: the disk is full, the file system read-only, an I/O
// error, the file locked or busy past the busy timeout, or it cannot be
// opened; and out of memory. They are read from the driver's typed error
// codes (which exist only when it is built with cgo).
func driverUnavailable(err error) bool {
	var se sqlite3.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code {
	case sqlite3.ErrFull, sqlite3.ErrReadonly, sqlite3.ErrIoErr, sqlite3.ErrBusy,
		sqlite3.ErrLocked, sqlite3.ErrCantOpen, sqlite3.ErrNomem:
		return true
	}
	return false
}

// isUniqueViolation reports a UNIQUE or PRIMARY KEY constraint failure.
func isUniqueViolation(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.ExtendedCode == sqlite3.ErrConstraintUnique || se.ExtendedCode == sqlite3.ErrConstraintPrimaryKey)
}
