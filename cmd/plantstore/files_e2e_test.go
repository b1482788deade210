package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/internal/cli/cliexit"
	"github.com/plantstore/plantstore/internal/testkit/filetest"
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

// TestNeverWritesDatabaseFiles: no command writes, creates or opens as a
// database a file kept beside a SQLite database (its -wal, which holds
// commits not yet in the database file, -shm, -journal, .lock), not even
// with --force, however the path names it (a symbolic link, dir/..): each
// exits 1 naming the database, the files keep their bytes, no -journal
// appears and the database still has its rows.
func TestNeverWritesDatabaseFiles(t *testing.T) {
	t.Parallel()
	db := migrated(t)
	dir := filepath.Dir(db)
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(t.TempDir(), "b.tar")
	mustRun(t, "backup", "--db", db, "--to", archive)
	// A connection held open, as a server's: the plants imported next stay
	// in the -wal, the only copy of those commits.
	openStore(t, db)
	mustRun(t, "import", "--db", db, "--from", writeFile(t, "p.jsonl", `{"owner":"a","id":1,"name":"x"}`+"\n"+`{"owner":"a","id":2,"name":"y"}`+"\n"))
	before := map[string][]byte{}
	for _, side := range []string{"-wal", "-shm", ".lock"} {
		b, err := os.ReadFile(db + side)
		if err != nil || (side == "-wal" && len(b) == 0) {
			t.Fatalf("%s%s: %d bytes, %v; want the open database's", db, side, len(b), err)
		}
		before[db+side] = b
	}
	wal := db + "-wal"
	link := filepath.Join(t.TempDir(), "out.jsonl")
	if err := os.Symlink(wal, link); err != nil {
		t.Fatal(err)
	}
	dotdot := dir + "/sub/../" + filepath.Base(db) + "-wal"
	rejectsIn := writeFile(t, "in.jsonl", `{"id":1,"name":"x"}`+"\n")

	refused := [][]string{
		{"export", "--db", db, "--to", wal, "--force"},
		{"export", "--db", db, "--to", db + "-shm", "--force"},
		{"export", "--db", db, "--to", db + "-journal", "--force"},
		{"export", "--db", db, "--to", db + "-journal"},
		{"export", "--db", db, "--to", db + ".lock", "--force"},
		{"export", "--db", db, "--to", link, "--force"},
		{"export", "--db", db, "--to", dotdot, "--force"},
		{"backup", "--db", db, "--to", wal, "--force"},
		{"backup", "--db", db, "--to", db + ".lock", "--force"},
		{"backup", "--db", db, "--to", link, "--force"},
		{"backup", "--db", db, "--to", dotdot, "--force"},
		{"backup", "--db", wal, "--to", filepath.Join(t.TempDir(), "w.tar")},
		{"restore", "--from", archive, "--db", wal, "--force"},
		{"restore", "--from", archive, "--db", db + "-shm", "--force"},
		{"restore", "--from", archive, "--db", db + "-journal"},
		{"restore", "--from", archive, "--db", db + ".lock", "--force"},
		{"restore", "--from", archive, "--db", link, "--force"},
		{"restore", "--from", archive, "--db", dotdot, "--force"},
		{"migrate", "--db", db + "-journal"},
		{"migrate", "--db", link},
		{"token", "create", "--owner", "a", "--create", "--db", db + ".lock"},
		{"copy", "--from", db, "--to", db + "-journal"},
		{"export", "--db", wal},
		{"plants", "import", rejectsIn, "--server", "http://127.0.0.1:1", "--token", "t", "--rejects", wal},
		{"plants", "import", rejectsIn, "--server", "http://127.0.0.1:1", "--token", "t", "--rejects", link},
	}
	for _, args := range refused {
		r := runCLI(t, nil, args...)
		if cliexit.Status(r.err) != 1 || !strings.Contains(r.err.Error(), "of the SQLite database "+db) {
			t.Errorf("plantstore %s: %v, want exit 1 naming the database %s", strings.Join(args, " "), r.err, db)
		}
	}
	// serve --create-db: a process of its own (a server that started
	// would not return).
	code, _, stderr := execBinary(t, nil, "serve", "--addr", "127.0.0.1:0", "--metrics-addr", "", "--create-db", "--db", db+"-journal")
	if code != 1 || !strings.Contains(stderr, "of the SQLite database "+db) {
		t.Errorf("serve --create-db --db %s-journal: exit %d, want 1 naming the database:\n%s", db, code, stderr)
	}
	// The database itself as --rejects: open in this process, never
	// truncated.
	r := runCLI(t, nil, "plants", "import", rejectsIn, "--server", "http://127.0.0.1:1", "--token", "t", "--rejects", db)
	if cliexit.Status(r.err) != 1 || !strings.Contains(r.err.Error(), "open in another process") {
		t.Errorf("plants import --rejects DB: %v, want exit 1 (a database open in another process)", r.err)
	}

	for p, b := range before {
		if after, err := os.ReadFile(p); err != nil || !bytes.Equal(after, b) {
			t.Errorf("%s changed (%v)", p, err)
		}
	}
	for _, name := range dirNames(t, dir) {
		switch {
		case strings.HasSuffix(name, "-journal"), strings.Contains(name, ".tmp-"), strings.Contains(name, ".restore-"),
			strings.HasSuffix(name, "-wal.lock"), strings.HasSuffix(name, "-wal-wal"), strings.HasSuffix(name, "-journal.lock"):
			t.Errorf("%s left beside the database", name)
		}
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symbolic link to the -wal was replaced (%v)", err)
	}
	if out := mustRun(t, "export", "--db", db).stdout; strings.Count(out, "\n") != 2 {
		t.Errorf("the database holds %q, want its 2 plants", out)
	}
}
