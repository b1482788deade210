package main

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
)

// TestTokenCreateStderr: token create prints the secret alone on stdout
// and, on stderr, exactly "created tok_… for owner … (scopes …, expires
// …)": the id token revoke takes, the scopes as stored, and "never" or the
// expiry in RFC 3339 (UTC); never the secret.
func TestTokenCreateStderr(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		args   []string
		scopes string
		ttl    time.Duration
	}{
		{"Default", nil, "plants:read plants:write", 0},
		{"Scopes", []string{"--scope", "webhooks:manage,plants:read"}, "plants:read webhooks:manage", 0},
		{"TTL", []string{"--ttl", "720h"}, "plants:read plants:write", 720 * time.Hour},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := tempDBPath(t)
			r := mustRun(t, append([]string{"token", "create", "--owner", "alice", "--db", path}, tt.args...)...)
			if !tokenLineRE.MatchString(r.stdout) {
				t.Fatalf("stdout = %q, want exactly one line with the token", r.stdout)
			}
			secret := strings.TrimSuffix(r.stdout, "\n")
			tok := storedToken(t, path, secret)
			expires := "never"
			if tt.ttl > 0 {
				if tok.ExpiresAt == nil {
					t.Fatal("no expiry stored")
				}
				expires = tok.ExpiresAt.UTC().Format(time.RFC3339)
				if got, err := time.Parse(time.RFC3339, expires); err != nil || got.Sub(time.Now().Add(tt.ttl)).Abs() > time.Minute {
					t.Fatalf("expiry %s (%v), want about now + %v", expires, err, tt.ttl)
				}
			}
			want := "created " + tok.ID + " for owner alice (scopes " + tt.scopes + ", expires " + expires + ")\n"
			if r.stderr != want {
				t.Fatalf("stderr = %q\n   want %q", r.stderr, want)
			}
			if !strings.HasPrefix(tok.ID, "tok_") {
				t.Fatalf("token id %q", tok.ID)
			}
			if strings.Contains(r.stderr, secret) {
				t.Fatalf("stderr shows the secret: %q", r.stderr)
			}
			// The id on stderr is the one token revoke takes.
			mustRun(t, "token", "revoke", tok.ID, "--db", path)
			if got := listJSON(t, path)[0].Status; got != "revoked" {
				t.Fatalf("status after revoking the printed id = %q", got)
			}
		})
	}
}

// TestTokenCreateHelpListsScopes: the help of token create (and of serve's
// bootstrap flag) names every scope a token can carry.
func TestTokenCreateHelpListsScopes(t *testing.T) {
	t.Parallel()
	r := runCLI(t, nil, "token", "create", "--help") // exits 0 through a cliexit.Code error
	for _, scope := range plantstore.KnownScopes {
		if !strings.Contains(r.stdout, scope) {
			t.Errorf("token create --help lacks the scope %s:\n%s", scope, r.stdout)
		}
	}
	r = runCLI(t, nil, "serve", "--help")
	for _, scope := range plantstore.KnownScopes {
		if !strings.Contains(r.stdout, scope) {
			t.Errorf("serve --help lacks the scope %s:\n%s", scope, r.stdout)
		}
	}
}

// TestServeBootstrapScopes: the first token of a database, generated or
// supplied with --bootstrap-token, carries every scope: it reads and writes
// plants and manages webhooks.
func TestServeBootstrapScopes(t *testing.T) {
	t.Parallel()
	want := slices.Sorted(slices.Values(plantstore.KnownScopes))
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"Generated", nil},
		{"Supplied", []string{"--bootstrap-token", strings.Repeat("s", 40)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			db := tempDBPath(t)
			s := startServer(t, db, append([]string{"--rate-limit", "0"}, tt.args...)...)
			secret := strings.Repeat("s", 40)
			if tt.args == nil {
				secret = bootstrapSecret(t, s.stderr.String())
			}
			tokens := listJSON(t, db)
			if len(tokens) != 1 || !slices.Equal(tokens[0].Scopes, want) {
				t.Fatalf("tokens = %+v, want one with the scopes %v", tokens, want)
			}
			if !strings.Contains(s.stderr.String(), strings.Join(want, " ")) {
				t.Fatalf("start-up does not name the scopes %v:\n%s", want, s.stderr)
			}
			if re := readmeBootstrapRE(t); tt.args == nil && !re.MatchString(s.stderr.String()) {
				t.Fatalf("start-up does not say what README.md shows (%s):\n%s", re, s.stderr)
			}
			for _, req := range []struct{ method, path, body string }{
				{"POST", "/plants", `{"id":1,"name":"Fern"}`},
				{"GET", "/plants", ""},
				{"GET", "/webhooks", ""},
			} {
				if status, _, body := do(t, testClient, req.method, s.url+req.path, secret, req.body); status != http.StatusOK {
					t.Fatalf("%s %s with the bootstrap token: %d %s", req.method, req.path, status, body)
				}
			}
		})
	}
}
