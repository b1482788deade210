package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/internal/cliexit"
	"github.com/plantstore/plantstore/internal/filetest"
)

// TestFileModes: with umask 000 in a directory anyone may write, the files
// of migrate, serve (the database, its -wal and -shm), backup, export and
// restore are 0600; a database file others may read (an older plantstore's)
// is made 0600 at the next open, with a warning.
func TestFileModes(t *testing.T) {
	filetest.WithUmask(t, 0)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	in := func(name string) string { return filepath.Join(dir, name) }

	mustBinary(t, nil, "migrate", "--db", in("migrated.db"))
	filetest.CheckMode(t, in("migrated.db"), 0o600)
	filetest.CheckMode(t, in("migrated.db.lock"), 0o600)

	db := in("served.db")
	srv := startServer(t, db, "--create-db")
	token := bootstrapSecret(t, srv.stderr.String())
	if status, _, body := do(t, testClient, "POST", srv.url+"/plants", token, `{"id":1,"name":"Fern"}`); status != 201 && status != 200 {
		t.Fatalf("create: %d %s", status, body)
	}
	for _, p := range []string{db, db + "-wal", db + "-shm", db + ".lock"} {
		filetest.CheckMode(t, p, 0o600)
	}
	if err := srv.stop(t); err != nil {
		t.Fatal(err)
	}

	mustBinary(t, nil, "backup", "--db", db, "--to", in("backup.tar"))
	filetest.CheckMode(t, in("backup.tar"), 0o600)
	mustBinary(t, nil, "export", "--db", db, "--to", in("plants.jsonl"))
	filetest.CheckMode(t, in("plants.jsonl"), 0o600)
	mustBinary(t, nil, "restore", "--from", in("backup.tar"), "--db", in("restored.db"))
	filetest.CheckMode(t, in("restored.db"), 0o600)

	// A database an older plantstore left 0644 (and a restore over it):
	// the next command tightens it and says so.
	if err := os.Chmod(in("migrated.db"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr := mustBinary(t, nil, "token", "list", "--db", in("migrated.db"))
	if !strings.Contains(stderr, "migrated.db was mode 0644: made it 0600") {
		t.Errorf("token list on a 0644 database: stderr %q, want a warning that it was made 0600", stderr)
	}
	filetest.CheckMode(t, in("migrated.db"), 0o600)
	if err := os.Chmod(in("restored.db"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustBinary(t, nil, "restore", "--from", in("backup.tar"), "--db", in("restored.db"), "--force")
	filetest.CheckMode(t, in("restored.db"), 0o600)
}

// TestExportOverwrite: export --to refuses an existing file unless --force;
// it never replaces a database, neither one a running server holds nor one
// at rest, even with --force (nor does backup); a refused export leaves the
// file as it was and nothing beside it.
func TestExportOverwrite(t *testing.T) {
	db := migrated(t)
	mustRun(t, "import", "--db", db, "--from", writeFile(t, "p.jsonl", `{"owner":"a","id":1,"name":"x"}`+"\n"))
	const want = `{"owner":"a","id":1,"name":"x"}` + "\n"

	out := writeFile(t, "out.jsonl", "keep me\n")
	r := runCLI(t, nil, "export", "--db", db, "--to", out)
	if cliexit.Status(r.err) != 1 || !strings.Contains(r.err.Error(), "exists") || !strings.Contains(r.err.Error(), "--force") {
		t.Fatalf("export over an existing file: %v, want exit 1 naming --force", r.err)
	}
	if b, _ := os.ReadFile(out); string(b) != "keep me\n" {
		t.Fatalf("a refused export changed the file: %q", b)
	}
	mustRun(t, "export", "--db", db, "--to", out, "--force")
	if b, _ := os.ReadFile(out); string(b) != want {
		t.Fatalf("export --force wrote %q, want %q", b, want)
	}

	served := tempDBPath(t)
	srv := startServer(t, served)
	before, err := os.ReadFile(served)
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, r result, msg string) {
		t.Helper()
		if cliexit.Status(r.err) != 1 || !strings.Contains(r.err.Error(), msg) {
			t.Errorf("%s: %v, want exit 1 with %q", what, r.err, msg)
		}
		after, err := os.ReadFile(served)
		if err != nil || !bytes.Equal(before, after) {
			t.Fatalf("%s changed the database (%v)", what, err)
		}
		for _, name := range dirNames(t, filepath.Dir(served)) {
			if strings.Contains(name, ".tmp-") {
				t.Errorf("%s left %s", what, name)
			}
		}
	}
	check("export over a served database", runCLI(t, nil, "export", "--db", db, "--to", served), "exists")
	check("export --force over a served database", runCLI(t, nil, "export", "--db", db, "--to", served, "--force"), "open in another process")
	check("backup --force over a served database", runCLI(t, nil, "backup", "--db", db, "--to", served, "--force"), "open in another process")
	srv.waitReady(t)
	if err := srv.stop(t); err != nil {
		t.Fatal(err)
	}
	if before, err = os.ReadFile(served); err != nil {
		t.Fatal(err)
	}
	check("export --force over a stopped database", runCLI(t, nil, "export", "--db", db, "--to", served, "--force"), "is a SQLite database")
	check("backup --force over a stopped database", runCLI(t, nil, "backup", "--db", db, "--to", served, "--force"), "is a SQLite database")
}
