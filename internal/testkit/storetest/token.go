package storetest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/service"
)

// The cases of testCreateToken to testCreateFirstToken run through the
// service (TokenService); testTokenStore calls the backend's TokenStore.

// createToken issues a token through the service.
func createToken(t *testing.T, svc *service.Services, req plantstore.TokenRequest) (*plantstore.Token, string) {
	t.Helper()
	tok, secret, err := svc.Tokens.CreateToken(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	return tok, secret
}

// findTokens lists every token through the service.
func findTokens(t *testing.T, svc *service.Services) []*plantstore.Token {
	t.Helper()
	tokens, err := svc.Tokens.FindTokens(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return tokens
}

// authenticate fails the test unless secret authenticates as want.
func authenticate(t *testing.T, svc *service.Services, secret string, want *plantstore.Token) {
	t.Helper()
	got, err := svc.Tokens.Authenticate(t.Context(), secret)
	if err != nil {
		t.Fatalf("Authenticate: %v", err)
	}
	if diff := cmp.Diff(want, got, equateTime); diff != "" {
		t.Fatalf("Authenticate returned (-want +got):\n%s", diff)
	}
}

// refused fails the test unless Authenticate refuses secret with
// CodeTokenInvalid.
func refused(t *testing.T, svc *service.Services, what, secret string) {
	t.Helper()
	tok, err := svc.Tokens.Authenticate(t.Context(), secret)
	checkCode(t, what, err, plantstore.CodeTokenInvalid)
	if tok != nil {
		t.Fatalf("%s: Authenticate returned %+v with an error", what, tok)
	}
}

// suppliedSecret is an operator-supplied token secret (not generated).
const suppliedSecret = "bootstrap-secret-from-a-vault-0123456789"

func testCreateToken(t *testing.T, bs Backends) {
	for _, tt := range []struct {
		name       string
		scopes     []string
		ttl        time.Duration
		wantScopes []string
	}{
		{"OK", []string{plantstore.ScopePlantsRead}, time.Hour, []string{plantstore.ScopePlantsRead}},
		{"DefaultScopesNoExpiry", nil, 0, plantstore.DefaultScopes},
		{"AllScopesSortedOnce", []string{plantstore.ScopeWebhooksManage, plantstore.ScopePlantsWrite, plantstore.ScopePlantsRead, plantstore.ScopePlantsWrite},
			0, []string{plantstore.ScopePlantsRead, plantstore.ScopePlantsWrite, plantstore.ScopeWebhooksManage}},
		{"HundredYears", nil, plantstore.MaxTokenTTL, plantstore.DefaultScopes},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newClock(fixedNow)
			_, svc := open(t, bs, service.Config{Now: c.Now})
			tok, secret := createToken(t, svc, plantstore.TokenRequest{Owner: "alice", Scopes: tt.scopes, TTL: tt.ttl})
			if !strings.HasPrefix(tok.ID, "tok_") || !plantstore.PlausibleToken(secret) {
				t.Fatalf("token %s with secret %q: want a tok_ id and a plausible secret", tok.ID, secret)
			}
			want := &plantstore.Token{ID: tok.ID, Owner: "alice", Scopes: tt.wantScopes, Hash: plantstore.HashToken(secret), CreatedAt: fixedNow,
				Last4: secret[len(secret)-4:]}
			if tt.ttl > 0 {
				want.ExpiresAt = ptr(fixedNow.Add(tt.ttl))
			}
			if diff := cmp.Diff(want, tok, equateTime); diff != "" {
				t.Fatalf("returned token (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]*plantstore.Token{want}, findTokens(t, svc), equateTime); diff != "" {
				t.Fatalf("FindTokens (-want +got):\n%s", diff)
			}
			authenticate(t, svc, secret, want)
		})
	}

	t.Run("Distinct", func(t *testing.T) {
		svc := openServices(t, bs)
		a, secretA := createToken(t, svc, plantstore.TokenRequest{Owner: "alice"})
		b, secretB := createToken(t, svc, plantstore.TokenRequest{Owner: "alice"})
		if a.ID == b.ID || secretA == secretB {
			t.Fatalf("two tokens share id %s / %s or secret", a.ID, b.ID)
		}
		if got, want := len(findTokens(t, svc)), 2; got != want {
			t.Fatalf("%d tokens, want %d", got, want)
		}
		authenticate(t, svc, secretA, a)
		authenticate(t, svc, secretB, b)
	})

	t.Run("SuppliedSecret", func(t *testing.T) {
		svc := openServices(t, bs)
		tok, secret := createToken(t, svc, plantstore.TokenRequest{Owner: "admin", Secret: suppliedSecret, TTL: time.Hour})
		if got, want := secret, suppliedSecret; got != want {
			t.Fatalf("secret = %q, want the supplied %q", got, want)
		}
		if tok.Last4 != "" {
			t.Fatalf("Last4 = %q of a supplied secret, want none (it has no checksum)", tok.Last4)
		}
		authenticate(t, svc, suppliedSecret, tok)

		// The same secret again is refused; the first token keeps it.
		if _, _, err := svc.Tokens.CreateToken(t.Context(), plantstore.TokenRequest{Owner: "mallory", Secret: suppliedSecret}); err == nil {
			t.Fatal("a second token with the same secret was issued")
		}
		if got, want := len(findTokens(t, svc)), 1; got != want {
			t.Fatalf("%d tokens, want %d", got, want)
		}
		authenticate(t, svc, suppliedSecret, tok)
	})

	t.Run("ErrInvalid", func(t *testing.T) {
		svc := openServices(t, bs)
		for _, tt := range []struct {
			name string
			req  plantstore.TokenRequest
		}{
			{"EmptyOwner", plantstore.TokenRequest{Owner: ""}},
			{"BlankOwner", plantstore.TokenRequest{Owner: " \t"}},
			{"UnknownScope", plantstore.TokenRequest{Owner: "alice", Scopes: []string{"plants:eat"}}},
			{"NegativeTTL", plantstore.TokenRequest{Owner: "alice", TTL: -time.Second}},
			{"NegativeTTLSupplied", plantstore.TokenRequest{Owner: "alice", TTL: -time.Second, Secret: suppliedSecret}},
			{"TTLPast100Years", plantstore.TokenRequest{Owner: "alice", TTL: plantstore.MaxTokenTTL + time.Second}},
			{"TTLPast100YearsSupplied", plantstore.TokenRequest{Owner: "alice", TTL: plantstore.MaxTokenTTL + time.Second, Secret: suppliedSecret}},
			{"TTLPast2262", plantstore.TokenRequest{Owner: "alice", TTL: 2500000 * time.Hour}},
			{"SuppliedTooShort", plantstore.TokenRequest{Owner: "alice", Secret: "short"}},
			{"SuppliedWithSpace", plantstore.TokenRequest{Owner: "alice", Secret: "with space " + suppliedSecret}},
			{"SuppliedPrefixNotOurs", plantstore.TokenRequest{Owner: "alice", Secret: plantstore.TokenPrefix + suppliedSecret}},
		} {
			t.Run(tt.name, func(t *testing.T) {
				tok, secret, err := svc.Tokens.CreateToken(t.Context(), tt.req)
				checkCode(t, "CreateToken", err, plantstore.CodeInvalidBody)
				if tok != nil || secret != "" {
					t.Fatalf("CreateToken returned %+v, %q with an error", tok, secret)
				}
			})
		}
		if got := findTokens(t, svc); len(got) != 0 {
			t.Fatalf("%d tokens stored by invalid requests, want 0", len(got))
		}
	})
}

func testAuthenticate(t *testing.T, bs Backends) {
	c := newClock(fixedNow)
	_, svc := open(t, bs, service.Config{Now: c.Now})
	active, activeSecret := createToken(t, svc, plantstore.TokenRequest{Owner: "alice"})
	expiring, expiringSecret := createToken(t, svc, plantstore.TokenRequest{Owner: "bob", TTL: time.Minute})
	revoked, revokedSecret := createToken(t, svc, plantstore.TokenRequest{Owner: "carol"})
	if err := svc.Tokens.RevokeToken(t.Context(), revoked.ID); err != nil {
		t.Fatal(err)
	}
	_, unknownSecret, err := plantstore.NewToken("dave", nil, 0, fixedNow) // never stored
	if err != nil {
		t.Fatal(err)
	}

	t.Run("Active", func(t *testing.T) {
		c.Set(fixedNow.Add(time.Second))
		authenticate(t, svc, activeSecret, active)
	})
	t.Run("BeforeExpiry", func(t *testing.T) {
		c.Set(fixedNow.Add(time.Minute - time.Millisecond))
		authenticate(t, svc, expiringSecret, expiring)
	})
	t.Run("ErrExpired", func(t *testing.T) {
		// A microsecond past ExpiresAt: PostgreSQL may round it up by less.
		for _, d := range []time.Duration{time.Minute + time.Microsecond, time.Hour} {
			c.Set(fixedNow.Add(d))
			refused(t, svc, fmt.Sprintf("expired token %v after its creation", d), expiringSecret)
		}
		// An expired token is expired, not gone.
		authenticate(t, svc, activeSecret, active)
	})
	t.Run("ErrRevoked", func(t *testing.T) {
		c.Set(fixedNow.Add(time.Second))
		refused(t, svc, "revoked token", revokedSecret)
	})
	t.Run("ErrUnknown", func(t *testing.T) {
		refused(t, svc, "unknown token", unknownSecret)
		refused(t, svc, "unknown supplied token", suppliedSecret)
	})
	t.Run("ErrMalformed", func(t *testing.T) {
		last := activeSecret[len(activeSecret)-1:]
		other := "0"
		if last == "0" {
			other = "1"
		}
		for _, secret := range []string{
			"",
			plantstore.TokenPrefix,
			activeSecret[:len(activeSecret)-1],
			activeSecret + "0",
			activeSecret[:len(activeSecret)-1] + other, // checksum wrong
			"Bearer " + activeSecret,
			strings.ToUpper(activeSecret),
		} {
			refused(t, svc, fmt.Sprintf("secret %q", secret), secret)
		}
	})
}

func testFindTokens(t *testing.T, bs Backends) {
	t.Run("Empty", func(t *testing.T) {
		svc := openServices(t, bs)
		if got := findTokens(t, svc); len(got) != 0 {
			t.Fatalf("%d tokens, want 0", len(got))
		}
	})

	t.Run("OldestFirst", func(t *testing.T) {
		c := newClock(fixedNow)
		_, svc := open(t, bs, service.Config{Now: c.Now})
		var want []*plantstore.Token
		// Created newest first; listed oldest first. One is revoked and one
		// expired: all are listed.
		for i, owner := range []string{"dave", "carol", "bob", "alice"} {
			c.Set(fixedNow.Add(-time.Duration(i) * time.Minute))
			req := plantstore.TokenRequest{Owner: owner}
			if owner == "bob" {
				req.TTL = time.Second
			}
			tok, _ := createToken(t, svc, req)
			want = append([]*plantstore.Token{tok}, want...)
		}
		revokedAt := c.Add(time.Hour)
		if err := svc.Tokens.RevokeToken(t.Context(), want[0].ID); err != nil {
			t.Fatal(err)
		}
		want[0].RevokedAt = &revokedAt
		if diff := cmp.Diff(want, findTokens(t, svc), equateTime); diff != "" {
			t.Fatalf("tokens (-want +got):\n%s", diff)
		}
	})
}

func testRevokeToken(t *testing.T, bs Backends) {
	t.Run("OK", func(t *testing.T) {
		c := newClock(fixedNow)
		_, svc := open(t, bs, service.Config{Now: c.Now})
		tok, secret := createToken(t, svc, plantstore.TokenRequest{Owner: "alice"})
		c.Add(time.Second) // oldest first is the order of FindTokens
		other, otherSecret := createToken(t, svc, plantstore.TokenRequest{Owner: "bob"})
		authenticate(t, svc, secret, tok)

		at := c.Add(time.Minute)
		if err := svc.Tokens.RevokeToken(t.Context(), tok.ID); err != nil {
			t.Fatal(err)
		}
		want := *tok
		want.RevokedAt = &at
		if diff := cmp.Diff([]*plantstore.Token{&want, other}, findTokens(t, svc), equateTime); diff != "" {
			t.Fatalf("tokens after revoking one (-want +got):\n%s", diff)
		}
		refused(t, svc, "revoked token", secret)

		// A second revoke, later, succeeds and keeps the first time.
		c.Add(time.Hour)
		if err := svc.Tokens.RevokeToken(t.Context(), tok.ID); err != nil {
			t.Fatalf("second revoke: %v", err)
		}
		if diff := cmp.Diff([]*plantstore.Token{&want, other}, findTokens(t, svc), equateTime); diff != "" {
			t.Fatalf("tokens after the second revoke (-want +got):\n%s", diff)
		}
		// The other token is untouched.
		authenticate(t, svc, otherSecret, other)
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		svc := openServices(t, bs)
		checkCode(t, "RevokeToken", svc.Tokens.RevokeToken(t.Context(), "tok_0000000000000000"), plantstore.CodeNotFound)
	})
}

func testCreateFirstToken(t *testing.T, bs Backends) {
	t.Run("OK", func(t *testing.T) {
		c := newClock(fixedNow)
		_, svc := open(t, bs, service.Config{Now: c.Now})
		first, secret, created, err := svc.Tokens.CreateFirstToken(t.Context(), plantstore.TokenRequest{Owner: "admin"})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := created, true; got != want {
			t.Fatalf("created = %v, want %v", got, want)
		}
		want := &plantstore.Token{ID: first.ID, Owner: "admin", Scopes: plantstore.DefaultScopes, Hash: plantstore.HashToken(secret), CreatedAt: fixedNow,
			Last4: secret[len(secret)-4:]}
		if diff := cmp.Diff(want, first, equateTime); diff != "" {
			t.Fatalf("returned token (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]*plantstore.Token{want}, findTokens(t, svc), equateTime); diff != "" {
			t.Fatalf("FindTokens (-want +got):\n%s", diff)
		}
		authenticate(t, svc, secret, want)

		// Afterwards it stores nothing.
		second, secret2, created, err := svc.Tokens.CreateFirstToken(t.Context(), plantstore.TokenRequest{Owner: "admin", Secret: suppliedSecret})
		if err != nil {
			t.Fatal(err)
		}
		if created || second != nil || secret2 != "" {
			t.Fatalf("second call: created = %v, token %+v, secret %q; want false, nil, empty", created, second, secret2)
		}
		if got, want := len(findTokens(t, svc)), 1; got != want {
			t.Fatalf("%d tokens, want %d", got, want)
		}
		refused(t, svc, "the second token's secret", suppliedSecret)
	})

	// An operator's bootstrap token from a secrets manager.
	t.Run("SuppliedSecret", func(t *testing.T) {
		svc := openServices(t, bs)
		tok, secret, created, err := svc.Tokens.CreateFirstToken(t.Context(), plantstore.TokenRequest{Owner: "admin", Secret: suppliedSecret})
		if err != nil {
			t.Fatal(err)
		}
		if !created || secret != suppliedSecret {
			t.Fatalf("created = %v, secret %q; want true, the supplied one", created, secret)
		}
		authenticate(t, svc, suppliedSecret, tok)
	})

	// Any token, revoked ones included, means the first one exists.
	t.Run("NotWhenRevokedTokenExists", func(t *testing.T) {
		svc := openServices(t, bs)
		tok, _ := createToken(t, svc, plantstore.TokenRequest{Owner: "alice"})
		if err := svc.Tokens.RevokeToken(t.Context(), tok.ID); err != nil {
			t.Fatal(err)
		}
		_, _, created, err := svc.Tokens.CreateFirstToken(t.Context(), plantstore.TokenRequest{Owner: "admin"})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := created, false; got != want {
			t.Fatalf("created = %v, want %v", got, want)
		}
		if got, want := len(findTokens(t, svc)), 1; got != want {
			t.Fatalf("%d tokens, want %d", got, want)
		}
	})

	// Replicas starting at once each try to create the first token: exactly
	// one does.
	t.Run("Concurrent", func(t *testing.T) {
		const n = 8
		svc := openServices(t, bs)
		tokens := make([]*plantstore.Token, n)
		secrets := make([]string, n)
		created := make([]bool, n)
		errs := make([]error, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				tokens[i], secrets[i], created[i], errs[i] = svc.Tokens.CreateFirstToken(t.Context(), plantstore.TokenRequest{Owner: fmt.Sprintf("admin%d", i)})
			})
		}
		close(start)
		wg.Wait()

		winner := -1
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("call %d: %v", i, errs[i])
			}
			if created[i] {
				if winner >= 0 {
					t.Fatalf("calls %d and %d both report created", winner, i)
				}
				winner = i
			}
		}
		if winner < 0 {
			t.Fatal("no call reports created")
		}
		all := findTokens(t, svc)
		if got, want := len(all), 1; got != want {
			t.Fatalf("%d tokens, want %d", got, want)
		}
		if got, want := all[0].ID, tokens[winner].ID; got != want {
			t.Fatalf("stored token %s, want the winner's %s", got, want)
		}
		authenticate(t, svc, secrets[winner], tokens[winner])
	})
}

// newToken makes a token for the row-store cases.
func newToken(t *testing.T, owner string, ttl time.Duration, now time.Time) *plantstore.Token {
	t.Helper()
	tok, _, err := plantstore.NewToken(owner, nil, ttl, now)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func insertToken(t *testing.T, b plantstore.Backend, tok *plantstore.Token) {
	t.Helper()
	if err := b.InsertToken(t.Context(), tok); err != nil {
		t.Fatal(err)
	}
}

func findTokenByHash(t *testing.T, b plantstore.Backend, hash []byte) *plantstore.Token {
	t.Helper()
	tok, err := b.FindTokenByHash(t.Context(), hash)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func listTokens(t *testing.T, b plantstore.Backend) []*plantstore.Token {
	t.Helper()
	tokens, err := b.ListTokens(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return tokens
}

// testTokenStore calls the backend's TokenStore directly.
func testTokenStore(t *testing.T, bs Backends) {
	t.Run("StoredAsGiven", func(t *testing.T) {
		b := bs.Open(t)
		expiring := newToken(t, "alice", 0, fixedNow)
		expiring.Scopes = []string{plantstore.ScopePlantsRead}
		expiring.CreatedAt = fixedNow.In(elsewhere)
		expiring.ExpiresAt = ptr(fixedNow.Add(90 * time.Minute).In(elsewhere))
		forever := newToken(t, "bob", 0, fixedNow.Add(time.Second))
		forever.Scopes = []string{plantstore.ScopePlantsRead, plantstore.ScopePlantsWrite, plantstore.ScopeWebhooksManage}
		insertToken(t, b, expiring)
		insertToken(t, b, forever)
		for _, want := range []*plantstore.Token{expiring, forever} {
			if diff := cmp.Diff(want, findTokenByHash(t, b, want.Hash), equateTime); diff != "" {
				t.Fatalf("FindTokenByHash (-want +got):\n%s", diff)
			}
		}
		if diff := cmp.Diff([]*plantstore.Token{expiring, forever}, listTokens(t, b), equateTime); diff != "" {
			t.Fatalf("ListTokens (-want +got):\n%s", diff)
		}
	})

	t.Run("ErrDuplicateHash", func(t *testing.T) {
		b := bs.Open(t)
		tok := newToken(t, "alice", 0, fixedNow)
		insertToken(t, b, tok)
		other := newToken(t, "bob", 0, fixedNow)
		other.Hash = tok.Hash
		checkIs(t, "InsertToken with a taken hash", b.InsertToken(t.Context(), other), plantstore.ErrExists)
		if diff := cmp.Diff([]*plantstore.Token{tok}, listTokens(t, b), equateTime); diff != "" {
			t.Fatalf("ListTokens (-want +got):\n%s", diff)
		}
		if got, want := findTokenByHash(t, b, tok.Hash).ID, tok.ID; got != want {
			t.Fatalf("the hash finds token %s, want the first one, %s", got, want)
		}
	})

	t.Run("ErrDuplicateID", func(t *testing.T) {
		b := bs.Open(t)
		tok := newToken(t, "alice", 0, fixedNow)
		insertToken(t, b, tok)
		other := newToken(t, "bob", 0, fixedNow)
		other.ID = tok.ID
		checkIs(t, "InsertToken with a taken id", b.InsertToken(t.Context(), other), plantstore.ErrExists)
		if diff := cmp.Diff([]*plantstore.Token{tok}, listTokens(t, b), equateTime); diff != "" {
			t.Fatalf("ListTokens (-want +got):\n%s", diff)
		}
		_, err := b.FindTokenByHash(t.Context(), other.Hash)
		checkIs(t, "FindTokenByHash of the refused token", err, plantstore.ErrNotFound)
	})

	t.Run("FindTokenByHash", func(t *testing.T) {
		b := bs.Open(t)
		ctx := t.Context()
		insertToken(t, b, newToken(t, "alice", 0, fixedNow))
		for _, tt := range []struct {
			name string
			hash []byte
		}{
			{"ErrUnknownHash", plantstore.HashToken("not-a-token-that-exists-anywhere")},
			{"ErrNilHash", nil},
			{"ErrEmptyHash", []byte{}},
		} {
			t.Run(tt.name, func(t *testing.T) {
				tok, err := b.FindTokenByHash(ctx, tt.hash)
				checkIs(t, "FindTokenByHash", err, plantstore.ErrNotFound)
				if tok != nil {
					t.Fatalf("got token %+v with an error", tok)
				}
			})
		}

		// Revoked and expired tokens are found as they are: what they are
		// worth is the service's decision.
		t.Run("RevokedAndExpired", func(t *testing.T) {
			expired := newToken(t, "bob", time.Minute, fixedNow.Add(-time.Hour))
			revoked := newToken(t, "carol", 0, fixedNow)
			insertToken(t, b, expired)
			insertToken(t, b, revoked)
			at := fixedNow.Add(time.Minute)
			if err := b.RevokeToken(ctx, revoked.ID, at); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(expired, findTokenByHash(t, b, expired.Hash), equateTime); diff != "" {
				t.Fatalf("expired token (-want +got):\n%s", diff)
			}
			want := *revoked
			want.RevokedAt = &at
			if diff := cmp.Diff(&want, findTokenByHash(t, b, revoked.Hash), equateTime); diff != "" {
				t.Fatalf("revoked token (-want +got):\n%s", diff)
			}
		})
	})

	t.Run("RevokeToken", func(t *testing.T) {
		b := bs.Open(t)
		ctx := t.Context()
		tok := newToken(t, "alice", 0, fixedNow)
		other := newToken(t, "bob", 0, fixedNow)
		insertToken(t, b, tok)
		insertToken(t, b, other)

		first := fixedNow.Add(time.Minute).In(elsewhere)
		if err := b.RevokeToken(ctx, tok.ID, first); err != nil {
			t.Fatal(err)
		}
		got := findTokenByHash(t, b, tok.Hash)
		if got.RevokedAt == nil {
			t.Fatal("RevokedAt = nil after RevokeToken")
		}
		checkTime(t, "RevokedAt", *got.RevokedAt, first)

		// Revoking again, later or earlier, keeps the first time.
		for _, at := range []time.Time{first.Add(time.Hour), first.Add(-time.Hour)} {
			if err := b.RevokeToken(ctx, tok.ID, at); err != nil {
				t.Fatalf("revoke again at %v: %v", at, err)
			}
			got := findTokenByHash(t, b, tok.Hash)
			if got.RevokedAt == nil {
				t.Fatal("RevokedAt = nil after a second RevokeToken")
			}
			checkTime(t, fmt.Sprintf("RevokedAt after a revoke at %v", at), *got.RevokedAt, first)
		}
		if got := findTokenByHash(t, b, other.Hash); got.RevokedAt != nil {
			t.Fatalf("other token RevokedAt = %v, want nil", got.RevokedAt)
		}
		checkIs(t, "RevokeToken of an unknown id", b.RevokeToken(ctx, "tok_0000000000000000", first), plantstore.ErrNotFound)
	})

	t.Run("ListTokens", func(t *testing.T) {
		b := bs.Open(t)
		if got := listTokens(t, b); len(got) != 0 {
			t.Fatalf("%d tokens in a new backend, want 0", len(got))
		}
		var want []*plantstore.Token
		for i := range 4 {
			tok := newToken(t, fmt.Sprintf("owner%d", i), 0, fixedNow.Add(-time.Duration(i)*time.Microsecond*1500))
			insertToken(t, b, tok)
			want = append([]*plantstore.Token{tok}, want...)
		}
		if diff := cmp.Diff(want, listTokens(t, b), equateTime); diff != "" {
			t.Fatalf("ListTokens, oldest first (-want +got):\n%s", diff)
		}
	})

	t.Run("InsertFirstToken", func(t *testing.T) {
		b := bs.Open(t)
		ctx := t.Context()
		first := newToken(t, "admin", 0, fixedNow.In(elsewhere))
		inserted, err := b.InsertFirstToken(ctx, first)
		if err != nil {
			t.Fatal(err)
		}
		if !inserted {
			t.Fatal("InsertFirstToken into an empty table: inserted = false")
		}
		second := newToken(t, "admin", 0, fixedNow)
		if inserted, err = b.InsertFirstToken(ctx, second); err != nil {
			t.Fatal(err)
		}
		if inserted {
			t.Fatal("second InsertFirstToken: inserted = true")
		}
		if diff := cmp.Diff([]*plantstore.Token{first}, listTokens(t, b), equateTime); diff != "" {
			t.Fatalf("ListTokens (-want +got):\n%s", diff)
		}
		_, err = b.FindTokenByHash(ctx, second.Hash)
		checkIs(t, "FindTokenByHash of the second token", err, plantstore.ErrNotFound)
	})
}
