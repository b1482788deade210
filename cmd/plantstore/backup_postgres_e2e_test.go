package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/testkit/pgtest"
	"github.com/plantstore/plantstore/internal/testkit/proctest"
)

// pgBackupCommands returns the commands of the PostgreSQL backup block of
// docs/deployment.md: the lines of the sh block after the comment naming
// TestPostgresBackupDocumented.
func pgBackupCommands(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "deployment.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)TestPostgresBackupDocumented.*?```sh\n(.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/deployment.md has no sh block after the comment naming TestPostgresBackupDocumented")
	}
	var cmds []string
	for line := range strings.Lines(string(m[1])) {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			cmds = append(cmds, line)
		}
	}
	return cmds
}

// TestPostgresBackupDocumented runs the pg_dump and pg_restore commands of
// docs/deployment.md, as written, against a served database of the
// throwaway cluster, restores into a new database and serves it: the
// plants and the tokens are there, and the server works.
func TestPostgresBackupDocumented(t *testing.T) {
	t.Parallel()
	cmds := pgBackupCommands(t)
	if len(cmds) != 2 || !strings.HasPrefix(cmds[0], "pg_dump ") || !strings.HasPrefix(cmds[1], "pg_restore ") {
		t.Fatalf("documented commands %q: want a pg_dump line, then a pg_restore line", cmds)
	}
	if !strings.Contains(pgBackupHelp, "`"+cmds[0]+"`") {
		t.Errorf("backup's message for a PostgreSQL --db shows another pg_dump command than docs/deployment.md:\n%s\n%s", pgBackupHelp, cmds[0])
	}
	src := pgtest.NewDatabase(t)
	dst := pgtest.NewDatabase(t) // the new, empty database (createdb)
	binDir := filepath.Dir(pgtest.Program(t, "pg_dump"))
	pgtest.Program(t, "pg_restore")

	srv := startServer(t, src, "--rate-limit", "0")
	token := bootstrapSecret(t, srv.stderr.String())
	if token == "" {
		t.Fatalf("no bootstrap token:\n%s", srv.stderr)
	}
	bob := strings.TrimSpace(mustRunBinary(t, "token", "create", "--owner", "bob", "--db", src))
	for id := 1; id <= 50; id++ {
		for _, tok := range []string{token, bob} {
			if status, _, body := do(t, testClient, "POST", srv.url+"/plants", tok, fmt.Sprintf(`{"id":%d,"name":"p%d","tag":"pg"}`, id, id)); status != http.StatusOK && status != http.StatusCreated {
				t.Fatalf("create: %d %s", status, body)
			}
		}
	}

	// The documented commands, while the server serves.
	work := t.TempDir()
	env := append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "PG") }),
		"PATH="+binDir+":"+os.Getenv("PATH"), "PLANTSTORE_DB="+src, "RESTORE_DB="+dst)
	for _, c := range cmds {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, "sh", "-c", c)
		cmd.Dir, cmd.Env = work, env
		out, err := proctest.CombinedOutput(cmd)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v\n%s", c, err, out)
		}
	}
	if err := srv.stop(t); err != nil {
		t.Fatal(err)
	}

	restored := startServer(t, dst, "--rate-limit", "0")
	if s := bootstrapSecret(t, restored.stderr.String()); s != "" {
		t.Fatal("the server on the restored database made a new bootstrap token: the tokens were not restored")
	}
	for _, tok := range []string{token, bob} {
		if ids := storedPlantIDs(t, testClient, restored.url, tok); len(ids) != 50 {
			t.Fatalf("restored database lists %d plants of a token's owner, want 50", len(ids))
		}
	}
	if status, _, body := do(t, testClient, "POST", restored.url+"/plants", bob, `{"id":51,"name":"after restore"}`); status != http.StatusOK && status != http.StatusCreated {
		t.Fatalf("create on the restored database: %d %s", status, body)
	}
	if ids := storedPlantIDs(t, testClient, restored.url, bob); len(ids) != 51 {
		t.Fatalf("after a create the restored database lists %d plants, want 51", len(ids))
	}
}

// mustRunBinary runs the binary and returns its stdout; it fails the test
// unless it exits 0.
func mustRunBinary(t *testing.T, args ...string) string {
	t.Helper()
	out, _ := mustBinary(t, nil, args...)
	return string(out)
}
