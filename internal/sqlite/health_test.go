package sqlite_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/sqlite"
)

// TestMoved: once the database file or its WAL is deleted, renamed or
// replaced under an open DB, the first write after it fails (its commit went
// into a file no longer at the path: it must not be acknowledged), and so do
// Ping, every later write and the reads: ErrUnavailable, wrapping ErrMoved.
func TestMoved(t *testing.T) {
	for _, tt := range []struct {
		name  string
		fault func(t *testing.T, path string)
	}{
		{"Deleted", func(t *testing.T, path string) { mustDo(t, os.Remove(path)) }},
		{"Renamed", func(t *testing.T, path string) { mustDo(t, os.Rename(path, path+".old")) }},
		{"Replaced", func(t *testing.T, path string) {
			other := filepath.Join(filepath.Dir(path), "other.db")
			mustDo(t, os.WriteFile(other, nil, 0o600))
			mustDo(t, os.Rename(other, path))
		}},
		{"WALDeleted", func(t *testing.T, path string) { mustDo(t, os.Remove(path+"-wal")) }},
		{"DirectoryRenamed", func(t *testing.T, path string) {
			dir := filepath.Dir(path)
			mustDo(t, os.Rename(dir, dir+".old"))
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			path := filepath.Join(t.TempDir(), "data", "plantstore.db")
			db := openDBAt(t, path)
			mustInsert(t, db, 1)
			if err := db.Ping(ctx); err != nil {
				t.Fatalf("Ping before the fault: %v", err)
			}
			tt.fault(t, path)

			_, _, err := insert(db, 2)
			checkMoved(t, "first write after the fault", err)
			checkMoved(t, "Ping", db.Ping(ctx))
			_, _, err = insert(db, 3)
			checkMoved(t, "second write", err)
			_, err = db.FindPlant(ctx, "alice", 1)
			checkMoved(t, "FindPlant", err)
			_, err = db.ListPlants(ctx, plantstore.PlantFilter{Owner: "alice", Limit: 10})
			checkMoved(t, "ListPlants", err)
			_, err = db.FindTokenByHash(ctx, []byte{1})
			checkMoved(t, "FindTokenByHash", err)
		})
	}
}

// TestMoved_NotMoved: writes that only touch the files (a checkpoint,
// another process's writes) are not a move.
func TestMoved_NotMoved(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "plantstore.db")
	db := openDBAt(t, path)
	mustInsert(t, db, 1)
	raw := rawDB(t, path)
	if _, err := raw.Exec(`INSERT INTO tokens (id, hash, owner, scopes, created_at) VALUES ('tok_x', x'02', 'bob', 'plants:read', 0)`); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	mustInsert(t, db, 2)
	if err := db.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}

// TestOpen_MustExist: with MustExist, a missing file is ErrNoDatabase naming
// the path, and nothing is created (no directory, no lock file); an
// existing file opens.
func TestOpen_MustExist(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	path := filepath.Join(dir, "data", "plantstore.db")
	db := sqlite.NewDB(path)
	db.MustExist = true
	err := db.Open(ctx)
	if !errors.Is(err, sqlite.ErrNoDatabase) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Open of a missing file: err = %v, want ErrNoDatabase naming %s", err, path)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("Open of a missing file created %v", entries)
	}

	openDBAt(t, path).Close() // created without MustExist
	db = sqlite.NewDB(path)
	db.MustExist = true
	if err := db.Open(ctx); err != nil {
		t.Fatalf("Open of an existing file: %v", err)
	}
	db.Close()
}

// TestOpen_LeftoverWAL: a database deleted while open leaves its WAL (the
// commits since the last checkpoint) and shared memory file; Open refuses to
// create a new database beside them (SQLite would discard that WAL): it
// fails with ErrOrphanWAL and leaves them as they are.
func TestOpen_LeftoverWAL(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "plantstore.db")
	db := openDBAt(t, path)
	mustInsert(t, db, 1)
	mustDo(t, os.Remove(path))
	db.Close()
	before, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatalf("no WAL left behind (%v): the test needs one", err)
	}

	err = sqlite.NewDB(path).Open(ctx)
	if !errors.Is(err, sqlite.ErrOrphanWAL) || !strings.Contains(err.Error(), path+"-wal") {
		t.Fatalf("Open beside a leftover WAL: err = %v, want ErrOrphanWAL naming the WAL", err)
	}
	after, err := os.Stat(path + "-wal")
	if err != nil || after.Size() != before.Size() {
		t.Fatalf("the leftover WAL changed: %v, size %d -> %d", err, before.Size(), after.Size())
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Open created %s beside the leftover WAL (%v)", path, err)
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func insert(db *sqlite.DB, id int64) (*plantstore.Plant, int, error) {
	p := &plantstore.Plant{Owner: "alice", ID: id, Name: "Fern", CreatedAt: fixedNow}
	return insert3(db.InsertPlant(context.Background(), p, &plantstore.Event{Type: plantstore.EventPlantCreated, ID: "evt_" + p.Name, PlantID: id, CreatedAt: fixedNow}))
}

func mustInsert(t *testing.T, db *sqlite.DB, id int64) {
	t.Helper()
	if _, _, err := insert(db, id); err != nil {
		t.Fatalf("insert %d: %v", id, err)
	}
}

func checkMoved(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, plantstore.ErrUnavailable) || !errors.Is(err, sqlite.ErrMoved) {
		t.Fatalf("%s: err = %v, want ErrUnavailable wrapping ErrMoved", what, err)
	}
}
