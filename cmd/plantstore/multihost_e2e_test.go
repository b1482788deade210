package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/testkit/pgtest"
	"github.com/plantstore/plantstore/internal/testkit/proctest"
)

// multiHost returns db (a URL of a test database) as a multi-host URL
// whose first host is a port where nothing listens, with a password and
// target_session_attrs=read-write, as a failover setup gives them:
// postgres://postgres:PASSWORD@127.0.0.1:DEAD,127.0.0.1:PORT/db?..., or
// with the password as a parameter (inQuery). The test clusters trust the
// user, whatever the password.
func multiHost(t *testing.T, db, password string, inQuery bool) string {
	t.Helper()
	const prefix = "postgres://postgres@"
	if !strings.HasPrefix(db, prefix) {
		t.Fatalf("unexpected test database URL %s", db)
	}
	if inQuery {
		return fmt.Sprintf("postgres://postgres@127.0.0.1:%d,%s&password=%s&target_session_attrs=read-write",
			freePort(t), strings.TrimPrefix(db, prefix), password)
	}
	return fmt.Sprintf("postgres://postgres:%s@127.0.0.1:%d,%s&target_session_attrs=read-write",
		password, freePort(t), strings.TrimPrefix(db, prefix))
}

// runBinaryOut runs the plantstore binary (bounded to 30 s) and returns
// its stdout and stderr; it fails the test if the command fails.
func runBinaryOut(t *testing.T, args ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	var out, errOut syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := proctest.Run(cmd); err != nil {
		t.Fatalf("plantstore %s: %v\nstderr:\n%s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), errOut.String()
}

// TestMultiHostURL: every command that takes a database URL works with a
// multi-host one whose first host is down (serve, migrate, token create,
// list and revoke, export, import, copy), and none shows its password:
// logs and messages show the URL with every host and the password masked,
// in the user information or in a password parameter.
func TestMultiHostURL(t *testing.T) {
	t.Parallel()
	const password = "multi-host-secret-7f3a"
	src := multiHost(t, pgtest.NewDatabase(t), password, false)
	dst := multiHost(t, pgtest.NewDatabase(t), password, true)
	for _, u := range []string{src, dst} {
		if r := redactURL(u); !strings.Contains(r, ",127.0.0.1:") || strings.Contains(r, password) {
			t.Fatalf("redactURL(%s) = %s", u, r)
		}
	}
	var shown strings.Builder // everything the commands printed
	run := func(args ...string) string {
		t.Helper()
		stdout, stderr := runBinaryOut(t, args...)
		shown.WriteString(stdout + stderr)
		return stdout
	}

	run("migrate", "--db", src)
	bob := strings.TrimSpace(run("token", "create", "--owner", "bob", "--db", src))
	if list := run("token", "list", "--db", src); !strings.Contains(list, "bob") {
		t.Fatalf("token list shows no token of bob:\n%s", list)
	}

	s := launchServer(t, "serve on a multi-host URL", src, "--no-bootstrap-admin", "--rate-limit", "0")
	redacted := redactURL(src)
	s.waitReady(t)
	if status, _, body := do(t, testClient, "POST", s.url+"/plants", bob, `{"id":1,"name":"Fern"}`); status != http.StatusOK {
		t.Fatalf("POST /plants: %d %s", status, body)
	}
	if err := s.stop(t); err != nil {
		t.Fatalf("serve: %v", err)
	}
	log := s.stderr.String()
	shown.WriteString(log)
	if !strings.Contains(log, redacted) {
		t.Errorf("serve's log does not show the database as %s:\n%s", redacted, log)
	}

	file := filepath.Join(t.TempDir(), "plants.jsonl")
	run("export", "--db", src, "--to", file)
	run("migrate", "--db", dst)
	run("import", "--db", dst, "--from", file)
	if b, err := os.ReadFile(file); err != nil || !strings.Contains(string(b), `"Fern"`) {
		t.Fatalf("export: %q, %v; want bob's Fern", b, err)
	}
	if out := run("export", "--db", dst); !strings.Contains(out, `"Fern"`) {
		t.Fatalf("export after the import: %s", out)
	}
	copied := filepath.Join(t.TempDir(), "copy.db")
	run("copy", "--from", dst, "--to", copied)
	if out := run("export", "--db", copied); !strings.Contains(out, `"owner":"bob"`) {
		t.Fatalf("export of the copy: %s", out)
	}
	for _, tok := range binaryTokens(t, src) {
		run("token", "revoke", tok.ID, "--db", src)
	}

	if strings.Contains(shown.String(), password) {
		t.Fatalf("the password was shown:\n%s", shown.String())
	}
	if !strings.Contains(shown.String(), redactURL(dst)) {
		t.Fatalf("copy did not show its source (redacted %s):\n%s", redactURL(dst), shown.String())
	}
}
