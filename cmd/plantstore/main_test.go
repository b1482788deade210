package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/cli/cliexit"
	"github.com/plantstore/plantstore/internal/sqlite"
)

var tokenLineRE = regexp.MustCompile(`^pst_[0-9a-f]{72}\n$`)

// secretRE finds a generated token anywhere in a text.
var secretRE = regexp.MustCompile(`pst_[0-9a-f]{72}`)

// result is what one in-process run of the command produced.
type result struct {
	err            error
	stdout, stderr string
}

// runCLI runs the command in-process with args and the environment env
// (nothing else of the process environment is visible to it).
func runCLI(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	getenv := func(k string) string {
		if v, ok := env[k]; ok || k != "PLANTSTORE_METRICS_ADDR" {
			return v
		}
		return "127.0.0.1:0" // never the default metrics address: servers run in parallel
	}
	err := run(context.Background(), args, getenv, &stdout, &stderr)
	return result{err, stdout.String(), stderr.String()}
}

// mustRun runs the command and fails the test if it returns an error.
func mustRun(t *testing.T, args ...string) result {
	t.Helper()
	r := runCLI(t, nil, args...)
	if r.err != nil {
		t.Fatalf("plantstore %s: %v\nstderr:\n%s", strings.Join(args, " "), r.err, r.stderr)
	}
	return r
}

// tempDBPath returns the path of a new, empty database file in a new
// directory: a 0-byte file, which SQLite takes as an empty database, so
// every command opens it (serve migrates it and bootstraps as on a first
// start). Tests of a path with no file use missingDBPath.
func tempDBPath(t *testing.T) string {
	t.Helper()
	path := missingDBPath(t)
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// missingDBPath returns a path in a new directory with no file at it.
func missingDBPath(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "plantstore.db")
}

// openStore opens the database file directly, to check what a command stored.
func openStore(t *testing.T, path string) *sqlite.DB {
	t.Helper()
	db := sqlite.NewDB(path)
	if err := db.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// storedToken returns the stored token for secret.
func storedToken(t *testing.T, path, secret string) *plantstore.Token {
	t.Helper()
	tok, err := openStore(t, path).FindTokenByHash(context.Background(), plantstore.HashToken(secret))
	if err != nil {
		t.Fatalf("token not stored: %v", err)
	}
	return tok
}

func TestTokenCreate(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		path := tempDBPath(t)
		r := mustRun(t, "token", "create", "--owner", "alice", "--db", path)
		if !tokenLineRE.MatchString(r.stdout) {
			t.Fatalf("stdout = %q, want exactly one line with the token", r.stdout)
		}
		tok := storedToken(t, path, strings.TrimSuffix(r.stdout, "\n"))
		if got, want := tok.Owner, "alice"; got != want {
			t.Fatalf("Owner = %q, want %q", got, want)
		}
		if diff := cmp.Diff([]string{"plants:read", "plants:write"}, tok.Scopes); diff != "" {
			t.Fatalf("Scopes (-want +got):\n%s", diff)
		}
		if tok.ExpiresAt != nil {
			t.Fatalf("ExpiresAt = %v, want nil", tok.ExpiresAt)
		}
		if strings.Contains(r.stderr, strings.TrimSpace(r.stdout)) {
			t.Fatalf("stderr repeats the secret: %q", r.stderr)
		}
	})

	for _, tt := range []struct {
		name       string
		args       []string
		wantScopes []string
	}{
		{"ScopeRead", []string{"--scope", "plants:read"}, []string{"plants:read"}},
		{"ScopeWrite", []string{"--scope", "plants:write"}, []string{"plants:write"}},
		{"ScopeRepeated", []string{"--scope", "plants:write", "--scope", "plants:read"}, []string{"plants:read", "plants:write"}},
		{"ScopeCommaSeparated", []string{"--scope", "plants:read,plants:write"}, []string{"plants:read", "plants:write"}},
		{"ScopeEquals", []string{"--scope=plants:read"}, []string{"plants:read"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := tempDBPath(t)
			r := mustRun(t, append([]string{"token", "create", "--owner", "alice", "--db", path}, tt.args...)...)
			if !tokenLineRE.MatchString(r.stdout) {
				t.Fatalf("stdout = %q, want exactly one line with the token", r.stdout)
			}
			tok := storedToken(t, path, strings.TrimSuffix(r.stdout, "\n"))
			if diff := cmp.Diff(tt.wantScopes, tok.Scopes); diff != "" {
				t.Fatalf("Scopes (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("TTL", func(t *testing.T) {
		path := tempDBPath(t)
		before := time.Now()
		r := mustRun(t, "token", "create", "--owner", "alice", "--ttl", "2h", "--db", path)
		after := time.Now()
		tok := storedToken(t, path, strings.TrimSuffix(r.stdout, "\n"))
		if tok.ExpiresAt == nil {
			t.Fatal("ExpiresAt = nil, want a time")
		}
		if exp := *tok.ExpiresAt; exp.Before(before.Add(2*time.Hour).Truncate(time.Second)) || exp.After(after.Add(2*time.Hour)) {
			t.Fatalf("ExpiresAt = %v, want between %v and %v", exp, before.Add(2*time.Hour), after.Add(2*time.Hour))
		}
	})

	t.Run("PLANTSTORE_DB", func(t *testing.T) {
		path := tempDBPath(t)
		r := runCLI(t, map[string]string{"PLANTSTORE_DB": path}, "token", "create", "--owner", "alice")
		if r.err != nil {
			t.Fatalf("token create: %v\n%s", r.err, r.stderr)
		}
		storedToken(t, path, strings.TrimSuffix(r.stdout, "\n"))
	})

	t.Run("FlagOverridesEnv", func(t *testing.T) {
		envPath, flagPath := tempDBPath(t), tempDBPath(t)
		r := runCLI(t, map[string]string{"PLANTSTORE_DB": envPath}, "token", "create", "--owner", "alice", "--db", flagPath)
		if r.err != nil {
			t.Fatalf("token create: %v\n%s", r.err, r.stderr)
		}
		storedToken(t, flagPath, strings.TrimSuffix(r.stdout, "\n"))
	})

	for _, tt := range []struct {
		name string
		args []string
	}{
		{"ErrUnknownScope", []string{"--owner", "alice", "--scope", "plants:admin"}},
		{"ErrUnknownAmongKnown", []string{"--owner", "alice", "--scope", "plants:read", "--scope", "admin"}},
		{"ErrEmptyOwner", []string{"--owner", " "}},
		{"ErrMissingOwner", nil},
		{"ErrNegativeTTL", []string{"--owner", "alice", "--ttl=-1h"}},
		{"ErrBadTTL", []string{"--owner", "alice", "--ttl", "soon"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := tempDBPath(t)
			r := runCLI(t, nil, append([]string{"token", "create", "--db", path}, tt.args...)...)
			if r.err == nil {
				t.Fatalf("no error; stdout %q", r.stdout)
			}
			if secretRE.MatchString(r.stdout) || secretRE.MatchString(r.stderr) {
				t.Fatalf("a token was printed: stdout %q, stderr %q", r.stdout, r.stderr)
			}
			if r.stdout != "" && !strings.Contains(r.stdout, "Usage") {
				t.Fatalf("stdout = %q, want nothing", r.stdout)
			}
		})
	}

	t.Run("ErrUnknownScopeStoresNothing", func(t *testing.T) {
		path := tempDBPath(t)
		mustRun(t, "migrate", "--db", path)
		r := runCLI(t, nil, "token", "create", "--owner", "alice", "--scope", "nope", "--db", path)
		if r.err == nil {
			t.Fatal("no error")
		}
		if got, want := r.stdout, ""; got != want {
			t.Fatalf("stdout = %q, want %q", got, want)
		}
		if !strings.Contains(r.err.Error(), "nope") {
			t.Fatalf("error %q does not name the bad scope", r.err)
		}
		tokens, err := openStore(t, path).ListTokens(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if got, want := len(tokens), 0; got != want {
			t.Fatalf("%d tokens stored, want %d", got, want)
		}
	})
}

// listedToken is one element of `token list --format json`.
type listedToken struct {
	ID        string     `json:"id"`
	Owner     string     `json:"owner"`
	Scopes    []string   `json:"scopes"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at"`
	RevokedAt *time.Time `json:"revoked_at"`
	Status    string     `json:"status"`
}

func listJSON(t *testing.T, path string) []listedToken {
	t.Helper()
	r := mustRun(t, "token", "list", "--format", "json", "--db", path)
	var out []listedToken
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("token list --format json: %v\n%s", err, r.stdout)
	}
	return out
}

func TestTokenListRevoke(t *testing.T) {
	t.Parallel()
	path := tempDBPath(t)

	t.Run("Empty", func(t *testing.T) {
		r := mustRun(t, "token", "list", "--format", "json", "--db", path)
		if got, want := strings.TrimSpace(r.stdout), "[]"; got != want {
			t.Fatalf("stdout = %q, want %q", got, want)
		}
	})

	var secrets []string
	for _, args := range [][]string{
		{"--owner", "alice"},
		{"--owner", "bob", "--scope", "plants:read"},
		{"--owner", "carol", "--ttl", "1h"},
	} {
		r := mustRun(t, append([]string{"token", "create", "--db", path}, args...)...)
		secrets = append(secrets, strings.TrimSpace(r.stdout))
	}
	aliceID := storedToken(t, path, secrets[0]).ID
	bobID := storedToken(t, path, secrets[1]).ID

	noSecrets := func(t *testing.T, out string) {
		t.Helper()
		for _, s := range secrets {
			for _, part := range []string{s, s[4:20], s[len(s)-24:]} {
				if strings.Contains(out, part) {
					t.Fatalf("token list shows (part of) a secret:\n%s", out)
				}
			}
		}
		if secretRE.MatchString(out) {
			t.Fatalf("token list shows something shaped like a token:\n%s", out)
		}
	}

	t.Run("Table", func(t *testing.T) {
		r := mustRun(t, "token", "list", "--db", path)
		noSecrets(t, r.stdout+r.stderr)
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if got, want := len(lines), 4; got != want {
			t.Fatalf("%d lines, want header and 3 tokens:\n%s", got, r.stdout)
		}
		for _, want := range []string{"ID", "OWNER", "SCOPES", "STATUS"} {
			if !strings.Contains(lines[0], want) {
				t.Fatalf("header %q lacks %q", lines[0], want)
			}
		}
		for i, owner := range []string{"alice", "bob", "carol"} {
			if f := strings.Fields(lines[i+1]); !strings.HasPrefix(f[0], "tok_") || f[1] != owner || f[len(f)-1] != "active" {
				t.Fatalf("line %q: want tok_ id, owner %s, status active", lines[i+1], owner)
			}
		}
	})

	t.Run("JSON", func(t *testing.T) {
		r := mustRun(t, "token", "list", "--format", "json", "--db", path)
		noSecrets(t, r.stdout+r.stderr)
		out := listJSON(t, path)
		if got, want := len(out), 3; got != want {
			t.Fatalf("%d tokens, want %d", got, want)
		}
		for i, want := range []struct {
			owner  string
			scopes []string
		}{
			{"alice", []string{"plants:read", "plants:write"}},
			{"bob", []string{"plants:read"}},
			{"carol", []string{"plants:read", "plants:write"}},
		} {
			if got, want := out[i].Owner, want.owner; got != want {
				t.Fatalf("token %d: Owner = %q, want %q", i, got, want)
			}
			if diff := cmp.Diff(want.scopes, out[i].Scopes); diff != "" {
				t.Fatalf("token %d: Scopes (-want +got):\n%s", i, diff)
			}
			if got, want := out[i].Status, "active"; got != want {
				t.Fatalf("token %d: Status = %q, want %q", i, got, want)
			}
		}
		if out[2].ExpiresAt == nil || out[0].ExpiresAt != nil {
			t.Fatalf("ExpiresAt: alice %v, carol %v; want nil and a time", out[0].ExpiresAt, out[2].ExpiresAt)
		}
	})

	t.Run("Revoke", func(t *testing.T) {
		r := mustRun(t, "token", "revoke", bobID, "--db", path)
		if got, want := r.stdout, ""; got != want {
			t.Fatalf("stdout = %q, want %q", got, want)
		}
		statuses := map[string]string{}
		for _, tok := range listJSON(t, path) {
			statuses[tok.ID] = tok.Status
			if tok.ID == bobID && tok.RevokedAt == nil {
				t.Fatal("revoked token has no revoked_at")
			}
		}
		if got, want := statuses[bobID], "revoked"; got != want {
			t.Fatalf("bob's status = %q, want %q", got, want)
		}
		if got, want := statuses[aliceID], "active"; got != want {
			t.Fatalf("alice's status = %q, want %q", got, want)
		}

		table := mustRun(t, "token", "list", "--db", path).stdout
		noSecrets(t, table)
		for line := range strings.SplitSeq(table, "\n") {
			if strings.HasPrefix(line, bobID) && !strings.HasSuffix(strings.TrimSpace(line), "revoked") {
				t.Fatalf("table line %q: want status revoked", line)
			}
		}

		// Revoking again is not an error.
		mustRun(t, "token", "revoke", bobID, "--db", path)
	})

	t.Run("ErrRevokeUnknown", func(t *testing.T) {
		r := runCLI(t, nil, "token", "revoke", "tok_0000000000000000", "--db", path)
		if r.err == nil {
			t.Fatal("revoking an unknown token: no error")
		}
		if !strings.Contains(r.err.Error(), "not found") {
			t.Fatalf("error = %q, want it to say not found", r.err)
		}
	})

	t.Run("ErrRevokeMissingID", func(t *testing.T) {
		if r := runCLI(t, nil, "token", "revoke", "--db", path); r.err == nil {
			t.Fatal("revoke without an id: no error")
		}
	})
}

// goMigrations counts the Go migrations declared in the package in dir
// (goose.NewGoMigration calls outside its tests).
func goMigrations(t *testing.T, dir string) int {
	t.Helper()
	srcs, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, src := range srcs {
		if strings.HasSuffix(src, "_test.go") {
			continue
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		n += strings.Count(string(b), "goose.NewGoMigration(")
	}
	return n
}

func TestMigrate(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "sub", "dir", "plantstore.db")
		r := mustRun(t, "migrate", "--db", path)
		if got, want := r.stdout, ""; got != want {
			t.Fatalf("stdout = %q, want %q", got, want)
		}
		current, known, err := openStore(t, path).SchemaStatus(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if got, want := current, known; got != want {
			t.Fatalf("schema version %d, want %d", got, want)
		}
		// A new file gets every migration: each SQL file and each Go one
		// (versions may leave gaps: two written at once take numbers
		// apart). The report counts what the version table records.
		files, err := filepath.Glob("../../internal/sqlite/migration/*.sql")
		if err != nil || len(files) == 0 {
			t.Fatalf("migration files: %v, %v", files, err)
		}
		want := len(files) + goMigrations(t, "../../internal/sqlite")
		var applied int
		if err := openRaw(t, path).QueryRow(`SELECT count(DISTINCT version_id) FROM goose_db_version WHERE version_id > 0 AND is_applied`).Scan(&applied); err != nil {
			t.Fatal(err)
		}
		if applied != want {
			t.Fatalf("%d migrations applied, want %d (%d SQL files and the Go ones)", applied, want, len(files))
		}
		if want := fmt.Sprintf("applied %d migration(s); schema version is %d", applied, known); !strings.Contains(r.stderr, want) {
			t.Fatalf("stderr = %q, want it to report the applied migrations (%q)", r.stderr, want)
		}

		r = mustRun(t, "migrate", "--db", path)
		if !strings.Contains(r.stderr, "applied 0 migration") {
			t.Fatalf("second migrate: stderr = %q, want 0 applied", r.stderr)
		}
	})

	t.Run("PLANTSTORE_DB", func(t *testing.T) {
		path := tempDBPath(t)
		if r := runCLI(t, map[string]string{"PLANTSTORE_DB": path}, "migrate"); r.err != nil {
			t.Fatalf("migrate: %v\n%s", r.err, r.stderr)
		}
		current, _, err := openStore(t, path).SchemaStatus(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if current < 1 {
			t.Fatalf("schema version %d after migrate with PLANTSTORE_DB", current)
		}
	})

	t.Run("ErrSchemaTooNew", func(t *testing.T) {
		path := tempDBPath(t)
		mustRun(t, "migrate", "--db", path)
		setSchemaVersion(t, path, 999)
		for _, args := range [][]string{
			{"migrate"},
			{"token", "list"},
			{"token", "create", "--owner", "alice"},
			{"serve", "--addr", "127.0.0.1:0", "--no-migrate"},
			{"serve", "--addr", "127.0.0.1:0"},
		} {
			r := runCLI(t, nil, append(args, "--db", path)...)
			var tooNew *plantstore.SchemaTooNewError
			if !errors.As(r.err, &tooNew) {
				t.Fatalf("%v: error = %v, want *plantstore.SchemaTooNewError", args, r.err)
			}
			if secretRE.MatchString(r.stdout + r.stderr) {
				t.Fatalf("%v printed a token", args)
			}
		}
	})
}

// setSchemaVersion records version as applied in the goose version table, as
// a newer plantstore's migration would.
func setSchemaVersion(t *testing.T, path string, version int64) {
	t.Helper()
	db := openStore(t, path)
	// sqlite.DB exposes no raw SQL; reach the file through database/sql.
	raw := openRaw(t, path)
	if _, err := raw.Exec(`INSERT INTO goose_db_version (version_id, is_applied) VALUES (?, 1)`, version); err != nil {
		t.Fatal(err)
	}
	current, _, err := db.SchemaStatus(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := current, version; got != want {
		t.Fatalf("schema version = %d, want %d", got, want)
	}
}

func openRaw(t *testing.T, path string) *sql.DB {
	t.Helper()
	raw, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return raw
}

func TestServeErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"ErrNoMigrateOnNewFile", []string{"--no-migrate"}, "older"},
		{"ErrBootstrapTokenShort", []string{"--bootstrap-token", "short"}, "bootstrap-token"},
		{"ErrBootstrapTokenFakePrefix", []string{"--bootstrap-token", "pst_" + strings.Repeat("0", 72)}, "bootstrap-token"},
		{"ErrNegativeRate", []string{"--rate-limit=-1"}, "rate"},
		{"ErrZeroShutdownTimeout", []string{"--shutdown-timeout", "0s"}, "shutdown-timeout"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := tempDBPath(t)
			r := runCLI(t, nil, append([]string{"serve", "--addr", "127.0.0.1:0", "--db", path}, tt.args...)...)
			if r.err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(r.err.Error(), tt.wantErr) {
				t.Fatalf("error = %q, want it to mention %q", r.err, tt.wantErr)
			}
			if secretRE.MatchString(r.stdout + r.stderr) {
				t.Fatalf("a token was printed:\n%s%s", r.stdout, r.stderr)
			}
		})
	}

	t.Run("ErrBadAddr", func(t *testing.T) {
		r := runCLI(t, nil, "serve", "--addr", "127.0.0.1:notaport", "--db", tempDBPath(t), "--no-bootstrap-admin")
		if r.err == nil {
			t.Fatal("no error")
		}
	})

	t.Run("ErrBadAddrFromEnv", func(t *testing.T) {
		env := map[string]string{"PLANTSTORE_ADDR": "127.0.0.1:notaport", "PLANTSTORE_DB": tempDBPath(t), "PLANTSTORE_BOOTSTRAP_ADMIN": "false"}
		r := runCLI(t, env, "serve")
		if r.err == nil {
			t.Fatal("no error")
		}
		if !strings.Contains(r.err.Error(), "notaport") {
			t.Fatalf("error = %q, want it to show PLANTSTORE_ADDR was used", r.err)
		}
	})
}

func TestHelp(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		args     []string
		wantText []string
	}{
		{"Root", []string{"--help"}, []string{"serve", "migrate", "token"}},
		{"Serve", []string{"serve", "--help"}, []string{"PLANTSTORE_ADDR", "PLANTSTORE_DB", "bootstrap-admin", "--bootstrap-token"}},
		{"TokenCreate", []string{"token", "create", "--help"}, []string{"--owner", "--scope", "--ttl", "PLANTSTORE_DB"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, nil, tt.args...)
			var code cliexit.Code
			if !errors.As(r.err, &code) {
				t.Fatalf("run returned %v, want a cliexit.Code", r.err)
			}
			if got, want := int(code), 0; got != want {
				t.Fatalf("exit code = %d, want %d", got, want)
			}
			for _, want := range tt.wantText {
				if !strings.Contains(r.stdout, want) {
					t.Fatalf("help lacks %q:\n%s", want, r.stdout)
				}
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"ErrNoCommand", nil},
		{"ErrUnknownCommand", []string{"grow"}},
		{"ErrUnknownFlag", []string{"migrate", "--colour"}},
		{"ErrBadFormat", []string{"token", "list", "--format", "xml"}},
		{"ErrBadDurability", []string{"serve", "--addr", "127.0.0.1:0", "--durability", "maybe"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, nil, append(tt.args, "--db", tempDBPath(t))...)
			var code cliexit.Code
			if !errors.As(r.err, &code) {
				t.Fatalf("run returned %v, want a cliexit.Code", r.err)
			}
			if code == 0 {
				t.Fatal("exit code 0 for a usage error")
			}
		})
	}
}

// TestPostgresUnreachable: every command fails clearly on a PostgreSQL URL
// nobody answers, prints nothing on stdout and never shows the password.
func TestPostgresUnreachable(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"migrate"},
		{"token", "create", "--owner", "alice"},
		{"token", "list"},
		{"serve", "--addr", "127.0.0.1:0"},
	} {
		for _, dsn := range []string{"postgres://user:hunter2secret@127.0.0.1:1/plants?connect_timeout=2", "postgresql://127.0.0.1:1/plants"} {
			r := runCLI(t, nil, append(args, "--db", dsn)...)
			if r.err == nil {
				t.Fatalf("%v --db %s: no error", args, dsn)
			}
			if !strings.Contains(r.err.Error(), "storage is not available") {
				t.Fatalf("%v --db %s: error = %q, want it to say the storage is not available", args, dsn, r.err)
			}
			if strings.Contains(r.err.Error()+r.stderr, "hunter2secret") {
				t.Fatalf("%v: the password shows: %q", args, r.err.Error()+r.stderr)
			}
			if r.stdout != "" {
				t.Fatalf("%v --db %s: stdout = %q, want nothing", args, dsn, r.stdout)
			}
		}
	}
}

// TestRunServe runs `serve` in-process on 127.0.0.1:0, learns the port from
// the "plantstore serving" log line, uses the service and stops it by
// cancelling the context, as SIGTERM does in main.
func TestRunServe(t *testing.T) {
	t.Parallel()
	path := tempDBPath(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0", "--db", path}, func(string) string { return "" }, stdout, stderr)
	}()

	urlRE := regexp.MustCompile(`"msg":"plantstore serving".*"url":"(http://127\.0\.0\.1:[0-9]+)","metrics":"(http://127\.0\.0\.1:[0-9]+/metrics)"`)
	var base, metrics string
	for deadline := time.Now().Add(10 * time.Second); base == ""; {
		if m := urlRE.FindStringSubmatch(stderr.String()); m != nil {
			base, metrics = m[1], m[2]
			break
		}
		select {
		case err := <-done:
			t.Fatalf("serve returned early: %v\nstderr:\n%s", err, stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no \"plantstore serving\" log line after 10 s\nstderr:\n%s", stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}

	secret := bootstrapSecret(t, stderr.String())
	if secret == "" {
		t.Fatalf("no bootstrap token on stderr:\n%s", stderr)
	}
	if got, want := stdout.String(), ""; got != want {
		t.Fatalf("serve wrote to stdout: %q", got)
	}
	status, _, body := do(t, testClient, "POST", base+"/plants", secret, `{"id":5,"name":"Monstera","tag":"big"}`)
	if got, want := status, 200; got != want {
		t.Fatalf("POST /plants: status %d, want %d: %s", got, want, body)
	}
	var got map[string]any
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"id": float64(5), "name": "Monstera", "tag": "big"}, createdPlant(t, got)); diff != "" {
		t.Fatalf("POST /plants body (-want +got):\n%s", diff)
	}
	// /metrics is on the metrics listener, not on the API's.
	if status, _, body := do(t, testClient, "GET", metrics, "", ""); status != 200 || !strings.Contains(string(body), `plantstore_http_requests_total{code="200",method="POST",route="/plants"} 1`) {
		t.Fatalf("GET %s: %d\n%s", metrics, status, body)
	}
	if status, _, body := do(t, testClient, "GET", base+"/metrics", "", ""); status != 404 || errorCode(body) != 40402 {
		t.Fatalf("GET /metrics on the API listener: %d %s, want the contract's 404", status, body)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v after cancel, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve still running 10 s after its context was cancelled")
	}

	// What was acknowledged is in the file.
	p, err := openStore(t, path).FindPlant(context.Background(), "admin", 5)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.Name, "Monstera"; got != want {
		t.Fatalf("stored Name = %q, want %q", got, want)
	}
}

// TestConcurrentFirstUse runs `migrate` and `token create` at once on a new
// file, as an operator does when `serve` is starting (STYLE.md 10: several
// processes starting at once are safe).
func TestConcurrentFirstUse(t *testing.T) {
	t.Parallel()
	const rounds = 5
	for round := range rounds {
		path := tempDBPath(t)
		results := make([]result, 4)
		var wg sync.WaitGroup
		for i := range results {
			wg.Go(func() {
				args := []string{"migrate", "--db", path}
				if i%2 == 1 {
					args = []string{"token", "create", "--owner", "alice", "--db", path}
				}
				results[i] = runCLI(t, nil, args...)
			})
		}
		wg.Wait()
		for i, r := range results {
			if r.err != nil {
				t.Fatalf("round %d, command %d: %v", round, i, r.err)
			}
		}
		if n := len(listJSON(t, path)); n != 2 {
			t.Fatalf("round %d: %d tokens, want 2", round, n)
		}
	}
}

// skipUnlessCI skips a test whose precondition this machine lacks, but fails
// it in CI (CI=true), where .ci/run provides every precondition: a skipped
// test proves nothing there.
func skipUnlessCI(t *testing.T, reason string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("%s (CI must run this test)", reason)
	}
	t.Skip(reason)
}
