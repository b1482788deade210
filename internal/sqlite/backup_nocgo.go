//go:build !cgo

package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// copyDatabase needs the driver's backup API, which needs cgo (as does
// opening any SQLite database).
func copyDatabase(context.Context, *sql.DB, *sql.DB, time.Duration) error {
	return errors.New("sqlite: backup needs a binary built with cgo")
}
