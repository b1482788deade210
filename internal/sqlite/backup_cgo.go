//go:build cgo

package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// copyDatabase copies every page of source's main database into target's
// with the online backup API, in one step: one read transaction on source
// (in WAL mode writers go on), so a busy writer cannot make it start over,
// as it does between the steps of a copy in chunks. A busy source (a
// checkpoint or recovery holding its lock) is retried until timeout.
func copyDatabase(ctx context.Context, target, source *sql.DB, timeout time.Duration) error {
	sc, err := source.Conn(ctx)
	if err != nil {
		return err
	}
	defer sc.Close()
	tc, err := target.Conn(ctx)
	if err != nil {
		return err
	}
	defer tc.Close()
	deadline := time.Now().Add(timeout)
	return tc.Raw(func(t any) error {
		return sc.Raw(func(s any) error {
			tconn, ok1 := t.(*sqlite3.SQLiteConn)
			sconn, ok2 := s.(*sqlite3.SQLiteConn)
			if !ok1 || !ok2 {
				return errors.New("not a go-sqlite3 connection")
			}
			b, err := tconn.Backup("main", sconn, "main")
			if err != nil {
				return err
			}
			for {
				done, err := b.Step(-1)
				if err != nil {
					b.Close()
					return err
				}
				if done {
					return b.Close()
				}
				// SQLITE_BUSY or SQLITE_LOCKED: try again shortly.
				if err := ctx.Err(); err != nil {
					b.Close()
					return err
				}
				if time.Now().After(deadline) {
					b.Close()
					return errors.New("the database stayed locked past the timeout")
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	})
}
