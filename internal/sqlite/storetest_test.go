package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/portable"
	"github.com/plantstore/plantstore/internal/sqlite"
	"github.com/plantstore/plantstore/internal/testkit/storetest"
)

// TestConformance runs the storage conformance suite on a new file per
// backend. Its storage is made unavailable the way another process can do
// it to a live file: by holding SQLite's write lock (an open write
// transaction) past the backend's timeout; a full disk and the error
// classes are tested in unavailable_internal_test.go.
func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, storetest.Backends{
		Open: func(t *testing.T) portable.Database {
			return openDB(t)
		},
		Unavailable: func(t *testing.T) (plantstore.Backend, func(), func()) {
			path := filepath.Join(t.TempDir(), "plantstore.db")
			db := sqlite.NewDB(path)
			db.OpTimeout = 300 * time.Millisecond
			if err := db.Open(t.Context()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			if _, err := db.Migrate(t.Context()); err != nil {
				t.Fatal(err)
			}
			var lock *sql.Tx
			breakIt := func() { lock = holdWriteLock(t, path) }
			restore := func() {
				if err := lock.Rollback(); err != nil {
					t.Fatal(err)
				}
			}
			return db, breakIt, restore
		},
	})
}

// holdWriteLock takes the file's write lock from another connection, as
// another process would, until the returned transaction ends.
func holdWriteLock(t *testing.T, path string) *sql.Tx {
	t.Helper()
	raw, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=10000&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	tx, err := raw.BeginTx(context.Background(), nil) // BEGIN IMMEDIATE: the write lock now
	if err != nil {
		t.Fatal(err)
	}
	return tx
}
