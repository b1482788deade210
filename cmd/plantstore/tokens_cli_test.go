package main

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/client"
	"github.com/plantstore/plantstore/internal/cli/cliexit"
)

// tokens runs `plantstore tokens ARGS` against the server with token.
func (ps *plantsServer) tokens(t *testing.T, token string, args ...string) result {
	t.Helper()
	return runCLI(t, map[string]string{"PLANTSTORE_SERVER": ps.url, "PLANTSTORE_TOKEN": token},
		append([]string{"tokens"}, args...)...)
}

// decodeResult unmarshals a run's stdout into v.
func decodeResult(t *testing.T, r result, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		t.Fatalf("stdout is not the JSON expected: %v\n%s", err, r.stdout)
	}
}

// TestTokensCLI runs every `plantstore tokens` command against a running
// server: create (the secret once), list (a page with its cursor, --all,
// table), show, revoke; and the API's refusals as errors.
func TestTokensCLI(t *testing.T) {
	t.Parallel()
	ps := openPlantsServer(t)
	// Owner carol: alice has the server's token already.
	admin, adminSecret, err := ps.svc.Tokens.CreateToken(context.Background(), plantstore.TokenRequest{Owner: "carol", Scopes: plantstore.KnownScopes})
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) result { t.Helper(); return mustSucceed(t, ps.tokens(t, adminSecret, args...)) }

	var created client.Token
	decodeResult(t, run("create", "--scope", "plants:read", "--ttl", "3600"), &created) // seconds, as the API's ttl
	if !strings.HasPrefix(created.ID, "tok_") || !strings.HasPrefix(created.Secret, plantstore.TokenPrefix) ||
		created.ExpiresAt == nil || created.ExpiresAt.Sub(created.CreatedAt) != time.Hour || created.Status != "active" ||
		created.Last4 == nil || *created.Last4 != created.Secret[len(created.Secret)-4:] {
		t.Fatalf("create = %+v", created)
	}
	// The new token works.
	mustSucceed(t, runCLI(t, map[string]string{"PLANTSTORE_SERVER": ps.url, "PLANTSTORE_TOKEN": created.Secret}, "plants", "list"))

	r := run("create", "--scope", "plants:read,plants:write", "--format", "table")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 2 || !regexp.MustCompile(`^ID +SCOPES +CREATED +EXPIRES +STATUS +LAST4 +SECRET$`).MatchString(lines[0]) ||
		!regexp.MustCompile(`^tok_[0-9a-f]{16} +plants:read,plants:write +\S+ +never +active +[0-9a-f]{4} +pst_[0-9a-f]{72}$`).MatchString(lines[1]) {
		t.Fatalf("create --format table =\n%s", r.stdout)
	}
	second := strings.Fields(lines[1])[0]

	// list: oldest first, never a secret; one page with the cursor on
	// stderr, or --all.
	ids := []string{admin.ID, created.ID, second}
	var page []client.Token
	r = run("list", "--limit", "2")
	decodeResult(t, r, &page)
	if len(page) != 2 || page[0].ID != ids[0] || page[1].ID != ids[1] || !strings.Contains(r.stderr, "--after "+ids[1]) {
		t.Fatalf("list --limit 2 = %s, stderr %q; want %v and the cursor", r.stdout, r.stderr, ids[:2])
	}
	if strings.Contains(r.stdout, "secret") || strings.Contains(r.stdout, "pst_") || !strings.Contains(r.stdout, `"last4"`) {
		t.Fatalf("list prints a secret, or no last4:\n%s", r.stdout)
	}
	r = run("list", "--all", "--limit", "1", "--format", "table")
	lines = strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 4 || strings.Contains(lines[0], "SECRET") || !strings.HasPrefix(lines[1], ids[0]+" ") ||
		!strings.HasPrefix(lines[2], ids[1]+" ") || !strings.HasPrefix(lines[3], ids[2]+" ") || r.stderr != "" {
		t.Fatalf("list --all --format table =\n%s\nstderr %q", r.stdout, r.stderr)
	}
	r = run("list", "--after", ids[1])
	decodeResult(t, r, &page)
	if len(page) != 1 || page[0].ID != ids[2] {
		t.Fatalf("list --after %s = %s", ids[1], r.stdout)
	}

	// show, revoke (twice: the same answer); the revoked token is refused.
	var shown client.Token
	decodeResult(t, run("show", created.ID), &shown)
	if shown.ID != created.ID || shown.Secret != "" || shown.Status != "active" {
		t.Fatalf("show = %+v", shown)
	}
	var revoked, again client.Token
	decodeResult(t, run("revoke", created.ID), &revoked)
	decodeResult(t, run("revoke", created.ID), &again)
	if revoked.Status != "revoked" || revoked.RevokedAt == nil || again.RevokedAt == nil || !again.RevokedAt.Equal(*revoked.RevokedAt) {
		t.Fatalf("revoke = %+v, again %+v", revoked, again)
	}
	if r := runCLI(t, map[string]string{"PLANTSTORE_SERVER": ps.url, "PLANTSTORE_TOKEN": created.Secret}, "plants", "list"); r.err == nil ||
		!strings.Contains(r.err.Error(), "40102") {
		t.Fatalf("plants list with the revoked token: %v", r.err)
	}
	r = run("show", created.ID, "--format", "table")
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); len(lines) != 2 || !strings.Contains(lines[1], " revoked ") {
		t.Fatalf("show --format table of a revoked token =\n%s", r.stdout)
	}

	// The API's refusals: exit 1 with the server's message.
	_, reader, err := ps.svc.Tokens.CreateToken(context.Background(), plantstore.TokenRequest{Owner: "carol",
		Scopes: []string{plantstore.ScopePlantsRead, plantstore.ScopeTokensManage}, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	_, bob, err := ps.svc.Tokens.CreateToken(context.Background(), plantstore.TokenRequest{Owner: "bob", Scopes: plantstore.KnownScopes})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		token string
		args  []string
		want  string
	}{
		{reader, []string{"create", "--scope", "plants:write", "--ttl", "1m"}, "lacks the plants:write scope"},
		{reader, []string{"create", "--scope", "plants:read"}, "must expire too"},
		{reader, []string{"create", "--scope", "plants:read", "--ttl", "2h"}, "cannot outlive it"},
		{bob, []string{"show", created.ID}, "error 40405"},
		{bob, []string{"revoke", created.ID}, "error 40405"},
		{ps.token, []string{"list"}, "lacks the tokens:manage scope"},
	} {
		r := ps.tokens(t, tt.token, tt.args...)
		if r.err == nil || cliexit.Status(r.err) != 1 || !strings.Contains(r.err.Error(), tt.want) {
			t.Errorf("tokens %v: err %v (exit %d), want exit 1 and %q", tt.args, r.err, cliexit.Status(r.err), tt.want)
		}
	}
	if got, err := ps.svc.Tokens.FindOwnerToken(context.Background(), "carol", created.ID); err != nil || got.RevokedAt == nil {
		t.Fatalf("after bob's revoke: %+v, %v", got, err)
	}
}

// TestTokensCLIUsage: flags the command checks before sending anything.
func TestTokensCLIUsage(t *testing.T) {
	t.Parallel()
	env := map[string]string{"PLANTSTORE_TOKEN": "t", "PLANTSTORE_SERVER": "http://127.0.0.1:1"}
	for _, args := range [][]string{
		{"tokens"},
		{"tokens", "create"},                 // --scope is required
		{"tokens", "create", "--scope", ","}, // no scope in it
		{"tokens", "create", "--scope", "plants:read", "--ttl", "1500ms"}, // not whole seconds
		{"tokens", "create", "--scope", "plants:read", "--ttl=-1h"},
		{"tokens", "show"},
		{"tokens", "list", "--format", "xml"},
	} {
		if r := runCLI(t, env, args...); cliexit.Status(r.err) != 2 {
			t.Errorf("%v: exit %d (%v), want 2", args, cliexit.Status(r.err), r.err)
		}
	}
	if r := runCLI(t, nil, "tokens", "list"); cliexit.Status(r.err) != 2 || !strings.Contains(r.stderr, "--token=STRING (or PLANTSTORE_TOKEN)") {
		t.Errorf("no token: exit %d, stderr %q; want 2 naming --token", cliexit.Status(r.err), r.stderr)
	}
}

// TestTokensCLITableEscapes: strings a server sends are printed in the
// table so that control characters cannot add, hide or rewrite rows.
func TestTokensCLITableEscapes(t *testing.T) {
	t.Parallel()
	url := newLoopbackServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`[{"id":"tok_0123456789abcdef","scopes":["plants:read\ntok_forged  all  active"],` +
			`"created_at":"2026-01-02T15:04:05Z","expires_at":null,"revoked_at":null,"last4":"\u001b[2J","status":"active"}]`))
	}))
	r := runCLI(t, map[string]string{"PLANTSTORE_SERVER": url, "PLANTSTORE_TOKEN": "t"}, "tokens", "list", "--format", "table")
	if r.err != nil {
		t.Fatalf("tokens list: %v\n%s", r.err, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 2 || strings.ContainsAny(r.stdout, "\x1b") || !strings.Contains(lines[1], `"plants:read\ntok_forged`) ||
		!strings.Contains(lines[1], `"\x1b[2J"`) {
		t.Fatalf("table =\n%q\nwant one row, the scopes and last4 quoted", r.stdout)
	}
}
