package dbfile_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/internal/dbfile"
	"github.com/plantstore/plantstore/internal/sqlite"
)

// openDB returns the path of a migrated SQLite database in a new directory,
// kept open until the test ends, so that its -wal, -shm and .lock exist.
func openDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plantstore.db")
	db := sqlite.NewDB(path)
	if err := db.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, side := range []string{"-wal", "-shm", ".lock"} {
		if _, err := os.Stat(path + side); err != nil {
			t.Fatalf("the open database has no %s: %v", side, err)
		}
	}
	return path
}

func symlink(t *testing.T, target, link string) string {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	return link
}

func mkdir(t *testing.T, path string) string {
	t.Helper()
	if err := os.MkdirAll(path, 0o700); err != nil {
		t.Fatal(err)
	}
	return path
}

func writeFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCheckNotCompanion: every file SQLite or plantstore keeps beside a
// database, existing or not, is refused naming the database, however the
// path reaches it (a symbolic link, a dangling one, "..", a linked
// directory); other files are not.
func TestCheckNotCompanion(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	dir := filepath.Dir(db)
	other := t.TempDir()
	// linked/.. is dir for the system, other for the names.
	mkdir(t, filepath.Join(dir, "sub"))
	linked := symlink(t, filepath.Join(dir, "sub"), filepath.Join(other, "linked"))
	mkdir(t, filepath.Join(dir, ".plantstore.db-litestream", "generations"))
	refused := []struct{ name, path, companion string }{
		{"wal", db + "-wal", db + "-wal"},
		{"shm", db + "-shm", db + "-shm"},
		{"lock", db + ".lock", db + ".lock"},
		{"journal, absent", db + "-journal", db + "-journal"},
		{"super-journal, absent", db + "-mj0A1B2C9D4", db + "-mj0A1B2C9D4"},
		{"relative", dir + "/sub/../plantstore.db-wal", db + "-wal"},
		{"symlink to the wal", symlink(t, db+"-wal", filepath.Join(other, "out.jsonl")), db + "-wal"},
		{"dangling symlink to the journal", symlink(t, db+"-journal", filepath.Join(other, "j.jsonl")), db + "-journal"},
		{"linked directory, then ..", linked + "/../plantstore.db-shm", db + "-shm"},
		{"litestream directory", filepath.Join(dir, ".plantstore.db-litestream"), filepath.Join(dir, ".plantstore.db-litestream")},
		{"in the litestream directory", filepath.Join(dir, ".plantstore.db-litestream", "generations", "x"), filepath.Join(dir, ".plantstore.db-litestream")},
	}
	// Through a link to the database's directory: refused under that name.
	dirlink := symlink(t, dir, filepath.Join(other, "dirlink"))
	refused = append(refused, struct{ name, path, companion string }{"symlink to the database's directory", dirlink + "/plantstore.db.lock", dirlink + "/plantstore.db.lock"})
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			err := dbfile.CheckNotCompanion(c.path)
			var ce *dbfile.CompanionError
			if !errors.As(err, &ce) {
				t.Fatalf("CheckNotCompanion(%s) = %v, want a CompanionError", c.path, err)
			}
			wantDB := filepath.Join(filepath.Dir(c.companion), "plantstore.db")
			if ce.DB != wantDB || ce.Companion != c.companion || ce.Missing {
				t.Errorf("CheckNotCompanion(%s): DB %s, companion %s, missing %v; want %s, %s, false", c.path, ce.DB, ce.Companion, ce.Missing, wantDB, c.companion)
			}
			if msg := err.Error(); !strings.Contains(msg, "SQLite database "+wantDB) || !strings.Contains(msg, c.path) {
				t.Errorf("message %q names neither the database nor the path", msg)
			}
		})
	}

	// An empty database (before its first write) beside its lock file.
	empty := writeFile(t, filepath.Join(other, "empty.db"), "")
	writeFile(t, empty+".lock", "")
	// A WAL whose database was deleted: its commits may be the last.
	orphan := writeFile(t, filepath.Join(other, "gone.db-wal"), "\x37\x7f\x06\x82rest of a WAL header")
	var ce *dbfile.CompanionError
	if err := dbfile.CheckNotCompanion(empty + "-wal"); !errors.As(err, &ce) || ce.DB != empty {
		t.Errorf("the -wal of an empty database with a lock file: %v", err)
	}
	if err := dbfile.CheckNotCompanion(orphan); !errors.As(err, &ce) || !ce.Missing || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("an orphan WAL: %v", err)
	}

	text := writeFile(t, filepath.Join(other, "notes"), "not a database")
	allowed := []string{
		db, // the database itself: LockForOverwrite's and restore's affair
		filepath.Join(dir, "plants.jsonl"),
		filepath.Join(dir, "plantstore.db.jsonl"),
		text + "-wal",
		text + ".lock",
		filepath.Join(other, "absent.db-wal"),
		writeFile(t, filepath.Join(other, "junk.db-wal"), "no header"),
		filepath.Join(dir, "-wal"),
		filepath.Join(dir, ".-litestream"),
	}
	for _, p := range allowed {
		if err := dbfile.CheckNotCompanion(p); err != nil {
			t.Errorf("CheckNotCompanion(%s) = %v, want nil", p, err)
		}
	}
}

// TestIsDatabase: the SQLite header makes a database; a missing, empty or
// other file is none.
func TestIsDatabase(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	dir := t.TempDir()
	for path, want := range map[string]bool{
		db:                                 true,
		db + "-wal":                        false,
		filepath.Join(dir, "absent"):       false,
		writeFile(t, dir+"/empty", ""):     false,
		writeFile(t, dir+"/short", "SQL"):  false,
		writeFile(t, dir+"/text", "hello"): false,
	} {
		if got, err := dbfile.IsDatabase(path); got != want || err != nil {
			t.Errorf("IsDatabase(%s) = %v, %v; want %v", path, got, err, want)
		}
	}
}
