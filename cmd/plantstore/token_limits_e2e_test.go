package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestTokenLimits: serve's --max-tokens-per-owner bounds the live tokens a
// mint leaves an owner (409 40904 past it; the operator's token counts),
// and --token-retention deletes an expired token in the background (the
// newest token stays).
func TestTokenLimits(t *testing.T) {
	t.Parallel()
	db := tempDBPath(t)
	admin := strings.TrimSpace(runBinary(t, "token", "create", "--owner", "alice", "--db", db,
		"--scope", "plants:read", "--scope", "tokens:manage"))
	s := startServer(t, db, "--no-bootstrap-admin", "--rate-limit", "0", "--max-tokens-per-owner", "3", "--token-retention", "1s")
	mint := func(body string, want int) string {
		t.Helper()
		status, _, data := do(t, testClient, "POST", s.url+"/tokens", admin, body)
		if status != want {
			t.Fatalf("POST /tokens %s: %d %s, want %d", body, status, data, want)
		}
		var tok struct {
			ID    string `json:"id"`
			Error int32  `json:"error"`
		}
		if err := json.Unmarshal(data, &tok); err != nil {
			t.Fatal(err)
		}
		if want == 409 && (tok.Error != 40904 || !strings.Contains(string(data), "--max-tokens-per-owner allows (3)")) {
			t.Fatalf("POST /tokens past the cap: %s, want error 40904 naming the cap", data)
		}
		return tok.ID
	}
	short := mint(`{"scopes":["plants:read"],"ttl":1}`, 201)
	mint(`{"scopes":["plants:read"]}`, 201)
	mint(`{"scopes":["plants:read"]}`, 409)
	listed := func() string {
		_, _, body := do(t, testClient, "GET", s.url+"/tokens", admin, "")
		return string(body)
	}
	if !strings.Contains(listed(), short) {
		t.Fatalf("GET /tokens = %s, want %s listed", listed(), short)
	}
	waitFor(t, 20*time.Second, "the expired token to be pruned", func() bool { return !strings.Contains(listed(), short) })
	mint(`{"scopes":["plants:read"]}`, 201)
}
