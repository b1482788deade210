package http_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
)

// TestNoSecretLeaks runs a realistic session — tokens valid, invalid,
// revoked, expired, out of scope and rate-limited; plants and webhooks
// created, read, rotated, deleted; bad bodies; storage failures — and then
// checks that no token secret (nor its part after the pst_ prefix, nor its
// random hex) and no webhook secret appears in any log line (debug level)
// or in any error body.
func TestNoSecretLeaks(t *testing.T) {
	t.Parallel()
	var fail failures
	ts := MustOpenServer(t, func(s *TestServer) {
		withFailingServices(&fail, errors.New("sqlite: list plants: no such table: plants"),
			errors.New("sqlite: find token: no such table: tokens"))(s)
		s.Service.TokenCacheTTL = time.Second
		s.RateLimit, s.RateBurst = 1, 15
		s.AuthFailureLimit, s.AuthFailureBurst = 60, 10
	})
	ctx := context.Background()

	var secrets []string // everything that must not leak
	token := func(owner string, scopes ...string) string {
		s := ts.Token(t, owner, scopes...)
		secrets = append(secrets, s)
		return s
	}
	alice := token("alice", plantstore.KnownScopes...)
	reader := token("alice", plantstore.ScopePlantsRead)
	bob := token("bob", plantstore.KnownScopes...)
	flood := token("carol")
	manager := token("dave", plantstore.KnownScopes...)
	revoked := token("alice")
	custom, err := plantstore.NewTokenFromSecret("operator-chosen-secret-0123456789abcdefXYZ", "ops", nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.DB.InsertToken(ctx, custom); err != nil {
		t.Fatal(err)
	}
	secrets = append(secrets, "operator-chosen-secret-0123456789abcdefXYZ")
	expiredTok, expired, err := plantstore.NewToken("alice", nil, time.Minute, time.Now().Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.DB.InsertToken(ctx, expiredTok); err != nil {
		t.Fatal(err)
	}
	secrets = append(secrets, expired)
	_, unknown, _ := plantstore.NewToken("nobody", nil, 0, time.Now()) // never stored
	secrets = append(secrets, unknown)
	tokens, err := ts.Services.Tokens.FindTokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range tokens {
		if string(x.Hash) == string(plantstore.HashToken(revoked)) {
			if err := ts.Services.Tokens.RevokeToken(ctx, x.ID); err != nil {
				t.Fatal(err)
			}
		}
	}

	var errorBodies []string
	do := func(r Request) *Response {
		resp := ts.Do(t, r)
		if resp.Status >= 400 {
			errorBodies = append(errorBodies, fmt.Sprintf("%s %s -> %d %s", r.Method, r.Path, resp.Status, resp.Body))
		}
		return resp
	}
	auth := func(h string) map[string]string { return map[string]string{"Authorization": h} }

	// Plants, valid and not.
	do(Request{Method: "POST", Path: "/plants", Token: alice, Body: `{"id":1,"name":"Fern","tag":"green"}`})
	do(Request{Method: "POST", Path: "/plants", Token: alice, Body: `{"id":1,"name":"Other"}`}) // 409
	do(Request{Method: "POST", Path: "/plants", Token: alice, Body: `{"id":`})                  // 400
	do(Request{Method: "POST", Path: "/plants", Token: alice, Body: `{"id":"x"}`})              // 400
	do(Request{Method: "POST", Path: "/plants", Token: alice, Body: `{"pad":"` + strings.Repeat("x", 70000) + `"}`})
	do(Request{Method: "POST", Path: "/plants", Token: alice, Body: `{"id":2,"name":"x"}`, Header: map[string]string{"Content-Type": "text/plain"}})
	do(Request{Method: "GET", Path: "/plants?tag=green&limit=1", Token: custom.Owner + "x"}) // garbage token
	do(Request{Method: "GET", Path: "/plants?limit=0", Token: alice})
	do(Request{Method: "GET", Path: "/plants/1", Token: alice})
	do(Request{Method: "GET", Path: "/plants/abc", Token: alice})
	do(Request{Method: "GET", Path: "/plants/1", Token: bob})                                   // 404
	do(Request{Method: "POST", Path: "/plants", Token: reader, Body: `{"id":3,"name":"Moss"}`}) // 403
	do(Request{Method: "GET", Path: "/plants", Token: "operator-chosen-secret-0123456789abcdefXYZ"})
	do(Request{Method: "PUT", Path: "/plants/1", Token: alice}) // 405 (PATCH is a route now)
	do(Request{Method: "DELETE", Path: "/plants/1", Token: alice})
	// Webhooks, with their secrets.
	hook := decodeWebhook(t, do(Request{Method: "POST", Path: "/webhooks", Token: alice, Body: `{"url":"http://127.0.0.1:9/hook"}`}), 201)
	secrets = append(secrets, *hook.Secret)
	rotated := decodeWebhook(t, do(Request{Method: "POST", Path: "/webhooks/" + hook.ID + "/rotate-secret", Token: alice}), 200)
	secrets = append(secrets, *rotated.Secret)
	do(Request{Method: "POST", Path: "/webhooks", Token: alice, Body: `{"url":"http://127.0.0.1/hook"}`})
	do(Request{Method: "GET", Path: "/webhooks/" + hook.ID, Token: alice})
	do(Request{Method: "GET", Path: "/webhooks/" + hook.ID + "/deliveries", Token: bob})
	do(Request{Method: "POST", Path: "/webhooks/" + hook.ID + "/rotate-secret", Token: bob})
	do(Request{Method: "GET", Path: "/webhooks", Token: reader})
	// Tokens over the API: a minted secret (in the 201's body only),
	// refused mints, reads, a revoke.
	var minted struct{ ID, Secret string }
	if err := json.Unmarshal(do(Request{Method: "POST", Path: "/tokens", Token: manager, Body: `{"scopes":["plants:read"],"ttl":60}`}).Body, &minted); err != nil || minted.Secret == "" {
		t.Fatalf("mint: %+v, %v", minted, err)
	}
	secrets = append(secrets, minted.Secret)
	do(Request{Method: "GET", Path: "/plants", Token: minted.Secret})
	do(Request{Method: "POST", Path: "/tokens", Token: minted.Secret, Body: `{"scopes":["plants:read"]}`}) // 403
	do(Request{Method: "POST", Path: "/tokens", Token: manager, Body: `{"scopes":["plants:read"],"secret":"` + alice + `"}`})
	do(Request{Method: "GET", Path: "/tokens", Token: manager})
	do(Request{Method: "GET", Path: "/tokens/" + minted.ID, Token: bob}) // 404
	do(Request{Method: "DELETE", Path: "/tokens/" + minted.ID, Token: manager})
	do(Request{Method: "GET", Path: "/plants", Token: minted.Secret}) // 401
	do(Request{Method: "GET", Path: "/me", Token: manager})
	// Bad tokens, in every shape a client gets wrong: 401s, then 429s
	// once the address's failed-auth burst is spent.
	for _, h := range []string{
		"Basic " + alice, "Token " + alice, alice, "Bearer  " + alice + " trailing",
		"Bearer " + revoked, "Bearer " + expired, "Bearer " + unknown,
		"Bearer " + alice[:len(alice)-1] + flip(alice[len(alice)-1]),
		"Bearer " + alice + "x", "Bearer " + alice[len(plantstore.TokenPrefix):],
	} {
		do(Request{Method: "GET", Path: "/plants", Header: auth(h)})
		do(Request{Method: "POST", Path: "/plants", Header: auth(h), Body: `{"id":9,"name":"x"}`})
	}
	// A flood: the token's rate limit (429) ...
	for range 20 {
		do(Request{Method: "GET", Path: "/plants", Token: flood})
	}
	// ... and storage failures, whose causes are logged.
	fail.plants.Store(true)
	do(Request{Method: "GET", Path: "/plants", Token: alice})
	fail.tokens.Store(true)
	do(Request{Method: "GET", Path: "/plants", Token: bob})
	do(Request{Method: "GET", Path: "/plants", Token: unknown})

	logs := ts.logs.String()
	// The session did what it should: the logs and bodies are not empty.
	for _, want := range []string{`"owner":"alice"`, `"status":429`, `"status":401`, `"status":403`, "no such table: tokens", "no such table: plants"} {
		if !strings.Contains(logs, want) {
			t.Fatalf("the log lacks %s:\n%s", want, logs)
		}
	}
	codes := map[int32]bool{}
	for _, b := range errorBodies {
		var e struct{ Error int32 }
		json.Unmarshal([]byte(b[strings.Index(b, "{"):]), &e)
		codes[e.Error] = true
	}
	for _, want := range []int32{40001, 40002, 40003, 40004, 40101, 40102, 40301, 40401, 40403, 40405, 40501, 40901, 41301, 41501, 42901, 50001} {
		if !codes[want] {
			t.Errorf("no error body with code %d", want)
		}
	}

	for _, s := range secrets {
		forbidden := []string{s}
		if body, ok := strings.CutPrefix(s, plantstore.TokenPrefix); ok {
			forbidden = append(forbidden, body, body[:64], body[:16], body[48:64])
		}
		if body, ok := strings.CutPrefix(s, "whsec_"); ok {
			forbidden = append(forbidden, body, body[:16])
		}
		for _, f := range forbidden {
			if i := strings.Index(logs, f); i >= 0 {
				t.Errorf("the log shows %q (of secret %.12s...): ...%s...", f, s, logs[max(0, i-200):min(len(logs), i+100)])
			}
			for _, b := range errorBodies {
				if strings.Contains(b, f) {
					t.Errorf("an error body shows %q (of secret %.12s...): %s", f, s, b)
				}
			}
		}
	}
	t.Logf("%d secrets checked against %d log bytes and %d error bodies", len(secrets), len(logs), len(errorBodies))
}
