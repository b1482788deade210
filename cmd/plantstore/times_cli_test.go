package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/cli/cliexit"
)

// TestTokenCreateTTLBound: token create refuses a --ttl beyond 100 years
// (exit 2, nothing printed or stored; 2,500,000h was stored as expired in
// 1727) and takes 100 years exactly, stored as given.
func TestTokenCreateTTLBound(t *testing.T) {
	t.Parallel()
	path := tempDBPath(t)
	mustRun(t, "migrate", "--db", path)
	for _, ttl := range []string{"2500000h", "876601h"} {
		r := runCLI(t, nil, "token", "create", "--owner", "alice", "--ttl", ttl, "--db", path)
		if cliexit.Status(r.err) != 2 || !strings.Contains(r.stderr, "at most 100 years") {
			t.Errorf("token create --ttl %s: %v, want exit 2 saying at most 100 years", ttl, r.err)
		}
		if secretRE.MatchString(r.stdout) || secretRE.MatchString(r.stderr) {
			t.Errorf("token create --ttl %s printed a token", ttl)
		}
	}
	if tokens, err := openStore(t, path).ListTokens(context.Background()); err != nil || len(tokens) != 0 {
		t.Fatalf("%d tokens stored by refused creates (%v), want 0", len(tokens), err)
	}
	before := time.Now()
	secret := strings.TrimSpace(mustRun(t, "token", "create", "--owner", "alice", "--ttl", "876600h", "--db", path).stdout)
	tok := storedToken(t, path, secret)
	if lo, hi := before.Add(876600*time.Hour), time.Now().Add(876600*time.Hour); tok.ExpiresAt == nil || tok.ExpiresAt.Before(lo.Truncate(time.Microsecond)) || tok.ExpiresAt.After(hi) {
		t.Fatalf("token create --ttl 876600h: expires %v, want in [%v, %v]", tok.ExpiresAt, lo, hi)
	}
}

// TestServeTimeFlagBounds: the webhook durations that set stored times are
// bounded, so that a retry's time (first retry times about 5760) or a
// lease stays in the range the row stores keep; serve stops at once naming
// the setting.
func TestServeTimeFlagBounds(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ flag, value string }{
		{"--webhook-first-retry", "400h"}, // the last retry would come in 263 years
		{"--webhook-first-retry", "61m"},
		{"--webhook-timeout", "2000000h"},
		{"--webhook-timeout", "61m"},
	} {
		// A missing database: a serve that accepted the setting stops there.
		r := runCLI(t, nil, "serve", "--addr", "127.0.0.1:0", "--db", missingDBPath(t), "--no-bootstrap-admin", tt.flag, tt.value)
		if cliexit.Status(r.err) != 2 || !strings.Contains(r.err.Error(), tt.flag) || !strings.Contains(r.err.Error(), "at most 1h") {
			t.Errorf("serve %s %s: %v, want exit 2 naming %s and at most 1h", tt.flag, tt.value, r.err, tt.flag)
		}
	}
}
