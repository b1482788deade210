package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore/internal/cli/cliexit"
	"github.com/plantstore/plantstore/internal/testkit/pgtest"
)

// migrated returns the path of a new, migrated SQLite database.
func migrated(t *testing.T) string {
	t.Helper()
	db := missingDBPath(t)
	mustRun(t, "migrate", "--db", db)
	return db
}

// TestExportImport: import keeps each line's owner (--owner fills lines
// without one), export writes every owner's plants by owner and id, and
// the lines move a database's plants to another backend unchanged.
func TestExportImport(t *testing.T) {
	t.Parallel()
	db := migrated(t)
	in := writeFile(t, "in.jsonl", "\ufeff"+`{"owner":"bob","id":2,"name":"Ivy","tag":"climbing"}`+"\n\n"+
		`{"id":1,"name":"<Fern> & co"}`+"\n"+
		`{"owner":"alice","id":-9223372036854775808,"name":"Min","note":"ignored, as POST /plants ignores it"}`+"\n"+
		`{"owner":"bob","id":1,"name":"Cactus"}`+"\n")
	r := mustRun(t, "import", "--db", db, "--from", in, "--owner", "alice")
	if !strings.Contains(r.stderr, "imported 4 plants of 4") {
		t.Fatalf("import: %s", r.stderr)
	}
	want := `{"owner":"alice","id":-9223372036854775808,"name":"Min"}
{"owner":"alice","id":1,"name":"<Fern> & co"}
{"owner":"bob","id":1,"name":"Cactus"}
{"owner":"bob","id":2,"name":"Ivy","tag":"climbing"}
`
	if diff := cmp.Diff(want, mustRun(t, "export", "--db", db).stdout); diff != "" {
		t.Fatalf("export (-want +got):\n%s", diff)
	}
	if got := mustRun(t, "export", "--db", db, "--owner", "bob").stdout; got != strings.Join(strings.Split(want, "\n")[2:], "\n") {
		t.Fatalf("export --owner bob:\n%s", got)
	}

	// Again: every id exists, nothing is stored.
	if r := mustRun(t, "import", "--db", db, "--from", in, "--owner", "alice"); !strings.Contains(r.stderr, "imported 0 plants of 4 (4 skipped") {
		t.Fatalf("second import: %s", r.stderr)
	}

	// To a file, then into PostgreSQL, and out again: the same lines.
	out := filepath.Join(t.TempDir(), "plants.jsonl")
	mustRun(t, "export", "--db", db, "--to", out)
	if b, err := os.ReadFile(out); err != nil || string(b) != want {
		t.Fatalf("export --to: %q, %v", b, err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(out)); len(entries) != 1 {
		t.Fatalf("export --to left %d files, want the one", len(entries))
	}
	pg := pgtest.NewDatabase(t)
	mustRun(t, "migrate", "--db", pg)
	mustRun(t, "import", "--db", pg, "--from", out, "--batch", "3")
	if diff := cmp.Diff(want, mustRun(t, "export", "--db", pg).stdout); diff != "" {
		t.Fatalf("export from PostgreSQL (-want +got):\n%s", diff)
	}
}

// TestImportBadLine: a bad line anywhere stores nothing, and the error names
// its line. A line is checked as POST /plants checks a body (plantlines):
// invalid UTF-8, a key twice, a lone surrogate, "ID" for id are refused as
// the API refuses them.
func TestImportBadLine(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, line, msg string }{
		{"NoOwner", `{"id":3,"name":"x"}`, `line 3: no "owner" (give one on the line, or --owner)`},
		{"UpperOwner", `{"Owner":"a","id":3,"name":"x"}`, `line 3: no "owner"`},
		{"UpperID", `{"owner":"a","ID":3,"name":"x"}`, `line 3: id: required`},
		{"FractionalID", `{"owner":"a","id":3.0,"name":"x"}`, `line 3: id: must be an integer`},
		{"NoName", `{"owner":"a","id":3}`, `line 3: name: required`},
		{"EmptyName", `{"owner":"a","id":3,"name":""}`, `line 3: name: must have at least 1 character`},
		{"NullTag", `{"owner":"a","id":3,"name":"x","tag":null}`, `line 3: tag: must be a string`},
		{"NotJSON", `{"owner":"a",`, `line 3: not valid JSON`},
		{"TwoValues", `{"owner":"a","id":3,"name":"x"} {}`, `line 3: not valid JSON (or more than one JSON value)`},
		{"BadOwner", `{"owner":"a\u0001","id":3,"name":"x"}`, `line 3: owner must have printable characters only`},
		{"InvalidUTF8", "{\"owner\":\"a\",\"id\":3,\"name\":\"x\xff\"}", `line 3: not valid UTF-8`},
		{"DuplicateKey", `{"owner":"a","id":3,"name":"x","id":4}`, `line 3: duplicate key "id"`},
		{"DuplicateOwner", `{"owner":"a","owner":"b","id":3,"name":"x"}`, `line 3: duplicate key "owner"`},
		{"LoneSurrogate", `{"owner":"a","id":3,"name":"\udfff"}`, `line 3: name: must not contain a lone surrogate`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			db := migrated(t)
			in := writeFile(t, "in.jsonl", `{"owner":"a","id":1,"name":"x"}`+"\n"+`{"owner":"a","id":2,"name":"y"}`+"\n"+tt.line+"\n")
			r := runCLI(t, nil, "import", "--db", db, "--from", in)
			if r.err == nil || !strings.Contains(r.err.Error(), tt.msg) {
				t.Fatalf("import: %v, want an error with %q", r.err, tt.msg)
			}
			if got := mustRun(t, "export", "--db", db).stdout; got != "" {
				t.Fatalf("a refused import stored:\n%s", got)
			}
		})
	}
}

// TestCopyRefusals: copy to the same database is a usage error; to a
// non-empty target it is refused unless --resume; a missing source is not
// created.
func TestCopyRefusals(t *testing.T) {
	t.Parallel()
	db := migrated(t)
	mustRun(t, "import", "--db", db, "--from", writeFile(t, "p.jsonl", `{"owner":"a","id":1,"name":"x"}`+"\n"))
	if r := runCLI(t, nil, "copy", "--from", db, "--to", filepath.Join(filepath.Dir(db), ".", filepath.Base(db))); cliexit.Status(r.err) != 2 {
		t.Fatalf("copy to itself: %v, want exit 2", r.err)
	}
	other := migrated(t)
	mustRun(t, "import", "--db", other, "--from", writeFile(t, "p.jsonl", `{"owner":"b","id":1,"name":"y"}`+"\n"))
	r := runCLI(t, nil, "copy", "--from", db, "--to", other)
	if r.err == nil || !strings.Contains(r.err.Error(), "not empty") || !strings.Contains(r.err.Error(), "--resume") {
		t.Fatalf("copy to a non-empty target: %v", r.err)
	}
	if got := mustRun(t, "export", "--db", other).stdout; got != `{"owner":"b","id":1,"name":"y"}`+"\n" {
		t.Fatalf("a refused copy changed the target:\n%s", got)
	}
	mustRun(t, "copy", "--from", db, "--to", other, "--resume")
	if got := mustRun(t, "export", "--db", other).stdout; got != `{"owner":"a","id":1,"name":"x"}`+"\n" {
		t.Fatalf("after copy --resume the target has:\n%s", got)
	}
	missing := missingDBPath(t)
	if r := runCLI(t, nil, "copy", "--from", missing, "--to", missingDBPath(t)); r.err == nil || !strings.Contains(r.err.Error(), "does not exist") {
		t.Fatalf("copy from a missing database: %v", r.err)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatalf("copy created its missing source: %v", err)
	}
}
