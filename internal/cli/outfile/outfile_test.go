package outfile_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/internal/cli/outfile"
	"github.com/plantstore/plantstore/internal/sqlite"
)

func write(s string) func(io.Writer) error {
	return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
}

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.jsonl")
	n, err := outfile.Write(path, false, write("one\n"))
	if err != nil || n != 4 {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("written file: %v, %v; want mode 0600", fi, err)
	}
	// An existing file: refused without replace, before and at the end.
	if err := outfile.Check(path, false); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("Check of an existing file = %v", err)
	}
	if _, err := outfile.Write(path, false, write("two\n")); err == nil {
		t.Error("Write over an existing file without replace: no error")
	}
	if _, err := outfile.Write(path, true, write("two\n")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "two\n" {
		t.Errorf("replaced file holds %q", b)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d files in the directory, want 1 (no temporary left)", len(entries))
	}
	if err := outfile.Check(dir, true); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("Check of a directory = %v", err)
	}
}

// TestNeverOverDatabase: a SQLite database is never replaced, not even
// when asked to.
func TestNeverOverDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plantstore.db")
	db := sqlite.NewDB(path)
	if err := db.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := outfile.Check(path, true); err == nil || !strings.Contains(err.Error(), "never replaced") {
		t.Errorf("Check of a database = %v", err)
	}
	if _, err := outfile.Write(path, true, write("x")); err == nil {
		t.Error("Write over a database: no error")
	}
}

// TestNeverCompanion: a file kept beside a database (its -wal, -shm,
// -journal, .lock; named through a symbolic link or "..") is never
// written, with replace or without, existing or not: the error names the
// database, the file keeps its bytes and nothing is left beside it.
func TestNeverCompanion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "plantstore.db")
	db := sqlite.NewDB(path)
	if err := db.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "out.jsonl")
	if err := os.Symlink(path+"-wal", link); err != nil {
		t.Fatal(err)
	}
	before := map[string][]byte{}
	for _, side := range []string{"-wal", "-shm", ".lock"} {
		b, err := os.ReadFile(path + side)
		if err != nil {
			t.Fatal(err)
		}
		before[path+side] = b
	}
	for _, target := range []string{path + "-wal", path + "-shm", path + ".lock", path + "-journal", link, dir + "/sub/../plantstore.db-wal"} {
		for _, replace := range []bool{true, false} {
			check := func(what string, err error) {
				t.Helper()
				if err == nil || !strings.Contains(err.Error(), "SQLite database "+path) || !strings.Contains(err.Error(), "never written") {
					t.Errorf("%s(%s, replace %v) = %v, want a refusal naming %s", what, target, replace, err, path)
				}
			}
			check("Check", outfile.Check(target, replace))
			_, err := outfile.Write(target, replace, write("x\n"))
			check("Write", err)
		}
	}
	for p, b := range before {
		if after, err := os.ReadFile(p); err != nil || string(after) != string(b) {
			t.Errorf("%s changed (%v)", p, err)
		}
	}
	if _, err := os.Lstat(path + "-journal"); err == nil {
		t.Error("a -journal was created")
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("%s left beside the database", e.Name())
		}
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symbolic link was replaced (%v)", err)
	}
}
