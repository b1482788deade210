package outfile_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/internal/outfile"
	"github.com/plantstore/plantstore/sqlite"
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
