package sqlite

import (
	"context"
	"database/sql"
	"os"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/portable"
	"github.com/plantstore/plantstore/internal/testkit/storetest"
)

// openMemoryDB opens a new, migrated Memory database, closed by t's cleanup.
func openMemoryDB(t *testing.T, opTimeout time.Duration) *DB {
	t.Helper()
	db := &DB{Memory: true}
	db.OpTimeout = opTimeout
	if err := db.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestConformanceMemory runs the conformance suite on Memory databases
// (serve --db memory:). Its storage is made unavailable by another
// connection to the same memory database holding the write lock.
func TestConformanceMemory(t *testing.T) {
	t.Parallel()
	storetest.Run(t, storetest.Backends{
		Open:       func(t *testing.T) portable.Database { return openMemoryDB(t, 0) },
		NoSnapshot: true,
		Unavailable: func(t *testing.T) (plantstore.Backend, func(), func()) {
			db := openMemoryDB(t, 300*time.Millisecond)
			raw, err := sql.Open("sqlite3", "file:/"+db.memName+"?vfs=memdb&_txlock=immediate&_busy_timeout=10000")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { raw.Close() })
			var lock *sql.Tx
			breakIt := func() {
				if lock, err = raw.BeginTx(context.Background(), nil); err != nil {
					t.Fatal(err)
				}
			}
			restore := func() {
				if err := lock.Rollback(); err != nil {
					t.Fatal(err)
				}
			}
			return db, breakIt, restore
		},
	})
}

// TestMemory: a Memory database writes nothing to disk (no file in the
// working directory, none at Path), two are apart, and one is gone once
// closed.
func TestMemory(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	ctx := context.Background()
	a, b := openMemoryDB(t, 0), openMemoryDB(t, 0)
	if a.Path != "memory:" {
		t.Errorf("Path = %q, want memory:", a.Path)
	}
	p := &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", CreatedAt: time.Now()}
	if _, _, err := insert3(a.InsertPlant(ctx, p, nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.FindPlant(ctx, "alice", 1); err != nil {
		t.Fatalf("FindPlant on the database written: %v", err)
	}
	if _, err := b.FindPlant(ctx, "alice", 1); err != plantstore.ErrNotFound {
		t.Fatalf("FindPlant on another memory database: %v, want ErrNotFound", err)
	}
	if err := a.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("files written: %v", entries)
	}
	name := a.memName
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite3", "file:/"+name+"?vfs=memdb")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var n int
	if err := raw.QueryRow(`SELECT count(*) FROM sqlite_master`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("after Close the memory database has %d schema objects (%v), want none", n, err)
	}
}
