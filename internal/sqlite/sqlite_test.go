package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	_ "github.com/mattn/go-sqlite3"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/sqlite"
)

// fixedNow is a time with nanoseconds, which SQLite stores exactly.
var fixedNow = time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC)

// openDB opens and migrates a DB on a new file in a temporary directory and
// closes it when the test ends.
func openDB(t *testing.T) *sqlite.DB {
	t.Helper()
	return openDBAt(t, filepath.Join(t.TempDir(), "plantstore.db"))
}

func openDBAt(t *testing.T, path string) *sqlite.DB {
	t.Helper()
	db := sqlite.NewDB(path)
	if err := db.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return db
}

// rawDB opens the file directly, bypassing the package, to inspect or
// tamper with what is stored.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	raw, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return raw
}

func TestOpen(t *testing.T) {
	t.Run("CreatesDirectory", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "a", "b", "plantstore.db")
		db := sqlite.NewDB(path)
		if err := db.Open(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("database file not created: %v", err)
		}
		if err := db.Ping(context.Background()); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("WAL", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "plantstore.db")
		openDBAt(t, path)
		var mode string
		if err := rawDB(t, path).QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil {
			t.Fatal(err)
		}
		if got, want := mode, "wal"; got != want {
			t.Fatalf("journal_mode = %q, want %q", got, want)
		}
	})

	t.Run("Relaxed", func(t *testing.T) {
		db := sqlite.NewDB(filepath.Join(t.TempDir(), "plantstore.db"))
		db.Durability = sqlite.DurabilityRelaxed
		if err := db.Open(context.Background()); err != nil {
			t.Fatal(err)
		}
		db.Close()
	})

	t.Run("ErrEmptyPath", func(t *testing.T) {
		if err := sqlite.NewDB("").Open(context.Background()); err == nil {
			t.Fatal("Open with an empty path: no error")
		}
	})

	t.Run("ErrUnknownDurability", func(t *testing.T) {
		db := sqlite.NewDB(filepath.Join(t.TempDir(), "plantstore.db"))
		db.Durability = "sometimes"
		if err := db.Open(context.Background()); err == nil {
			db.Close()
			t.Fatal("Open with an unknown durability: no error")
		}
	})

	t.Run("ErrPathIsDirectory", func(t *testing.T) {
		db := sqlite.NewDB(t.TempDir())
		if err := db.Open(context.Background()); err == nil {
			db.Close()
			t.Fatal("Open on a directory: no error")
		}
	})
}

func TestMigrate(t *testing.T) {
	ctx := context.Background()

	t.Run("OK", func(t *testing.T) {
		db := sqlite.NewDB(filepath.Join(t.TempDir(), "plantstore.db"))
		if err := db.Open(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer db.Close()

		current, known, err := db.SchemaStatus(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := current, int64(0); got != want {
			t.Fatalf("current version of a new file = %d, want %d", got, want)
		}
		if known < 1 {
			t.Fatalf("known version = %d, want at least 1", known)
		}

		n, err := db.Migrate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// Every migration file (versions may leave gaps: two written at
		// once take numbers apart), and the one Go migration (12: the
		// search index, search_migration.go).
		files, err := filepath.Glob("migration/*.sql")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := n, len(files)+1; got != want || want == 1 {
			t.Fatalf("first Migrate applied %d, want %d (the migration files and the Go migration)", got, want)
		}
		if n, err = db.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		if got, want := n, 0; got != want {
			t.Fatalf("second Migrate applied %d, want %d", got, want)
		}

		current, known2, err := db.SchemaStatus(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := current, known; got != want {
			t.Fatalf("current version after Migrate = %d, want %d", got, want)
		}
		if got, want := known2, known; got != want {
			t.Fatalf("known version changed: %d, want %d", got, want)
		}
	})

	t.Run("ErrSchemaTooNew", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "plantstore.db")
		db := openDBAt(t, path)
		_, known, err := db.SchemaStatus(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// A newer plantstore has migrated this file.
		if _, err := rawDB(t, path).Exec(`INSERT INTO goose_db_version (version_id, is_applied) VALUES (?, 1)`, known+98); err != nil {
			t.Fatal(err)
		}

		current, _, err := db.SchemaStatus(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := current, known+98; got != want {
			t.Fatalf("SchemaStatus current = %d, want %d", got, want)
		}

		_, err = db.Migrate(ctx)
		var tooNew *plantstore.SchemaTooNewError
		if !errors.As(err, &tooNew) {
			t.Fatalf("Migrate error = %v (%T), want *plantstore.SchemaTooNewError", err, err)
		}
		if diff := cmp.Diff(plantstore.SchemaTooNewError{Current: known + 98, Known: known}, *tooNew); diff != "" {
			t.Fatalf("SchemaTooNewError (-want +got):\n%s", diff)
		}
	})
}

// TestMigrateConcurrent opens and migrates one new file from several DBs at
// once, as replicas starting together (or `serve` and `token create`) do.
// STYLE.md 10: migrations run under a lock, so this is safe. Each round is a
// new file; several rounds make a race show up.
func TestMigrateConcurrent(t *testing.T) {
	const rounds, replicas = 10, 4
	ctx := context.Background()
	for round := range rounds {
		path := filepath.Join(t.TempDir(), "plantstore.db")
		errs := make([]error, replicas)
		var wg sync.WaitGroup
		for i := range replicas {
			wg.Go(func() {
				db := sqlite.NewDB(path)
				if errs[i] = db.Open(context.Background()); errs[i] != nil {
					return
				}
				defer db.Close()
				_, errs[i] = db.Migrate(ctx)
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d, replica %d: %v", round, i, err)
			}
		}
		db := openDBAt(t, path)
		current, known, err := db.SchemaStatus(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := current, known; got != want {
			t.Fatalf("round %d: schema version %d, want %d", round, got, want)
		}
	}
}

func TestDurability(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "plantstore.db")

	db := sqlite.NewDB(path)
	if err := db.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	want := &plantstore.Plant{Owner: "alice", ID: 7, Name: "Fern", Tag: ptr("green")}
	want.CreatedAt, want.UpdatedAt = fixedNow, fixedNow
	if _, _, err := insert3(db.InsertPlant(ctx, want, &plantstore.Event{Type: plantstore.EventPlantCreated, ID: "evt_1", PlantID: 7, CreatedAt: fixedNow})); err != nil {
		t.Fatal(err)
	}
	tok, secret, err := plantstore.NewToken("alice", nil, 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := db.InsertToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = openDBAt(t, path)
	got, err := db.FindPlant(ctx, "alice", 7)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("plant after reopen (-want +got):\n%s", diff)
	}
	gotTok, err := db.FindTokenByHash(ctx, plantstore.HashToken(secret))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := gotTok.ID, tok.ID; got != want {
		t.Fatalf("token after reopen: ID = %q, want %q", got, want)
	}
}
