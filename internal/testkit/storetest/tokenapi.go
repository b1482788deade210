package storetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/service"
)

// The token API: an authenticated caller lists, reads, mints and
// revokes the tokens of its own owner. testOwnerTokenStore calls the
// backend's TokenStore; testMintToken and testOwnerTokens run through the
// service.

// ownerTokens makes tokens of owner created at the times given (in order),
// stores them and returns them.
func ownerTokens(t *testing.T, b plantstore.Backend, owner string, at ...time.Time) []*plantstore.Token {
	t.Helper()
	var out []*plantstore.Token
	for _, now := range at {
		tok := newToken(t, owner, 0, now)
		insertToken(t, b, tok)
		out = append(out, tok)
	}
	return out
}

// byCreation sorts tokens as the token API lists them: by creation time,
// then id.
func byCreation(tokens []*plantstore.Token) []*plantstore.Token {
	out := append([]*plantstore.Token(nil), tokens...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			a, b := out[i], out[j]
			if b.CreatedAt.Before(a.CreatedAt) || b.CreatedAt.Equal(a.CreatedAt) && b.ID < a.ID {
				out[i], out[j] = b, a
			}
		}
	}
	return out
}

func testOwnerTokenStore(t *testing.T, bs Backends) {
	t.Run("Last4", func(t *testing.T) {
		b := bs.Open(t)
		issued := newToken(t, "alice", 0, fixedNow)
		if len(issued.Last4) != 4 {
			t.Fatalf("NewToken: Last4 = %q, want 4 characters", issued.Last4)
		}
		old := newToken(t, "alice", 0, fixedNow.Add(time.Second))
		old.Last4 = "" // as tokens issued before it was stored
		insertToken(t, b, issued)
		insertToken(t, b, old)
		for _, want := range []*plantstore.Token{issued, old} {
			if diff := cmp.Diff(want, findTokenByHash(t, b, want.Hash), equateTime); diff != "" {
				t.Fatalf("FindTokenByHash (-want +got):\n%s", diff)
			}
			got, err := b.FindOwnerToken(t.Context(), "alice", want.ID)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got, equateTime); diff != "" {
				t.Fatalf("FindOwnerToken (-want +got):\n%s", diff)
			}
		}
	})

	t.Run("ListOwnerTokens", func(t *testing.T) {
		b := bs.Open(t)
		ctx := t.Context()
		// Created out of order, two at the same instant (then by id), a
		// millisecond apart otherwise (PostgreSQL keeps microseconds);
		// bob's tokens in between.
		alice := ownerTokens(t, b, "alice",
			fixedNow.Add(3*time.Millisecond), fixedNow, fixedNow.Add(time.Millisecond), fixedNow.Add(time.Millisecond), fixedNow.Add(-time.Hour))
		bob := ownerTokens(t, b, "bob", fixedNow, fixedNow.Add(2*time.Millisecond))
		if err := b.RevokeToken(ctx, alice[1].ID, fixedNow.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		alice[1].RevokedAt = ptr(fixedNow.Add(time.Minute))
		want := byCreation(alice)

		list := func(f plantstore.TokenFilter) []*plantstore.Token {
			t.Helper()
			got, err := b.ListOwnerTokens(ctx, f)
			if err != nil {
				t.Fatalf("ListOwnerTokens(%+v): %v", f, err)
			}
			return got
		}
		if diff := cmp.Diff(want, list(plantstore.TokenFilter{Owner: "alice", Limit: 100}), equateTime); diff != "" {
			t.Fatalf("every token, oldest first (-want +got):\n%s", diff)
		}
		// Pages of two, each after the last of the one before.
		var paged []*plantstore.Token
		f := plantstore.TokenFilter{Owner: "alice", Limit: 2}
		for range 10 {
			page := list(f)
			if len(page) > 2 {
				t.Fatalf("page of %d tokens, want at most 2", len(page))
			}
			paged = append(paged, page...)
			if len(page) < 2 {
				break
			}
			f.After = &page[len(page)-1].ID
		}
		if diff := cmp.Diff(want, paged, equateTime); diff != "" {
			t.Fatalf("pages of two (-want +got):\n%s", diff)
		}
		if got := list(plantstore.TokenFilter{Owner: "alice", After: &want[len(want)-1].ID, Limit: 10}); len(got) != 0 {
			t.Fatalf("after the last token: %d tokens, want none", len(got))
		}
		if diff := cmp.Diff(byCreation(bob), list(plantstore.TokenFilter{Owner: "bob", Limit: 100}), equateTime); diff != "" {
			t.Fatalf("bob's tokens (-want +got):\n%s", diff)
		}
		if got := list(plantstore.TokenFilter{Owner: "carol", Limit: 100}); got == nil || len(got) != 0 {
			t.Fatalf("an owner without tokens: %v, want an empty list", got)
		}
		// A cursor that is not one of the owner's tokens.
		for _, after := range []string{bob[0].ID, "tok_0000000000000000"} {
			_, err := b.ListOwnerTokens(ctx, plantstore.TokenFilter{Owner: "alice", After: &after, Limit: 10})
			checkIs(t, "ListOwnerTokens after "+after, err, plantstore.ErrNotFound)
		}
	})

	t.Run("FindOwnerToken", func(t *testing.T) {
		b := bs.Open(t)
		ctx := t.Context()
		tok := ownerTokens(t, b, "alice", fixedNow)[0]
		got, err := b.FindOwnerToken(ctx, "alice", tok.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tok, got, equateTime); diff != "" {
			t.Fatalf("FindOwnerToken (-want +got):\n%s", diff)
		}
		for _, tt := range []struct{ owner, id string }{{"bob", tok.ID}, {"alice", "tok_0000000000000000"}, {"Alice", tok.ID}} {
			got, err := b.FindOwnerToken(ctx, tt.owner, tt.id)
			checkIs(t, fmt.Sprintf("FindOwnerToken(%q, %q)", tt.owner, tt.id), err, plantstore.ErrNotFound)
			if got != nil {
				t.Fatalf("got %+v with an error", got)
			}
		}
	})

	t.Run("RevokeOwnerToken", func(t *testing.T) {
		b := bs.Open(t)
		ctx := t.Context()
		tok := ownerTokens(t, b, "alice", fixedNow)[0]

		// Another owner cannot revoke it.
		got, err := b.RevokeOwnerToken(ctx, "bob", tok.ID, fixedNow.Add(time.Second))
		checkIs(t, "RevokeOwnerToken by another owner", err, plantstore.ErrNotFound)
		if got != nil {
			t.Fatalf("got %+v with an error", got)
		}
		if r := findTokenByHash(t, b, tok.Hash).RevokedAt; r != nil {
			t.Fatalf("RevokedAt = %v after another owner's revoke, want nil", r)
		}
		_, err = b.RevokeOwnerToken(ctx, "alice", "tok_0000000000000000", fixedNow)
		checkIs(t, "RevokeOwnerToken of an unknown id", err, plantstore.ErrNotFound)

		first := fixedNow.Add(time.Minute).In(elsewhere)
		want := *tok
		want.RevokedAt = &first
		for _, at := range []time.Time{first, first.Add(time.Hour), first.Add(-time.Hour)} {
			got, err := b.RevokeOwnerToken(ctx, "alice", tok.ID, at)
			if err != nil {
				t.Fatalf("revoke at %v: %v", at, err)
			}
			// The answer and the row keep the first time.
			if diff := cmp.Diff(&want, got, equateTime); diff != "" {
				t.Fatalf("revoke at %v returned (-want +got):\n%s", at, diff)
			}
			if diff := cmp.Diff(&want, findTokenByHash(t, b, tok.Hash), equateTime); diff != "" {
				t.Fatalf("after a revoke at %v (-want +got):\n%s", at, diff)
			}
		}
	})
}

// caller returns the token an authenticated request would carry: one
// issued for owner with scopes and ttl, as Authenticate returns it (read
// back from the store).
func caller(t *testing.T, svc *service.Services, owner string, ttl time.Duration, scopes ...string) *plantstore.Token {
	t.Helper()
	_, secret := createToken(t, svc, plantstore.TokenRequest{Owner: owner, Scopes: scopes, TTL: ttl})
	tok, err := svc.Tokens.Authenticate(t.Context(), secret)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// ownerTokenList returns every token of owner through the service.
func ownerTokenList(t *testing.T, svc *service.Services, owner string) []*plantstore.Token {
	t.Helper()
	tokens, more, err := svc.Tokens.FindOwnerTokens(t.Context(), plantstore.TokenFilter{Owner: owner, Limit: plantstore.MaxPageSize})
	if err != nil {
		t.Fatal(err)
	}
	if more {
		t.Fatal("more than a page of tokens")
	}
	return tokens
}

func testMintToken(t *testing.T, bs Backends) {
	all := plantstore.KnownScopes

	t.Run("OK", func(t *testing.T) {
		c := newClock(fixedNow)
		_, svc := open(t, bs, service.Config{Now: c.Now})
		parent := caller(t, svc, "alice", 0, all...)
		now := c.Add(time.Minute)
		tok, secret, err := svc.Tokens.MintToken(t.Context(), parent, []string{plantstore.ScopePlantsWrite, plantstore.ScopePlantsRead}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		want := &plantstore.Token{ID: tok.ID, Owner: "alice", Scopes: []string{plantstore.ScopePlantsRead, plantstore.ScopePlantsWrite},
			Hash: plantstore.HashToken(secret), CreatedAt: now, ExpiresAt: ptr(now.Add(time.Hour)), Last4: secret[len(secret)-4:]}
		if diff := cmp.Diff(want, tok, equateTime); diff != "" {
			t.Fatalf("minted token (-want +got):\n%s", diff)
		}
		if tok.ID == parent.ID || !plantstore.PlausibleToken(secret) {
			t.Fatalf("minted %s with secret %q: want a new id and a plausible secret", tok.ID, secret)
		}
		authenticate(t, svc, secret, want)
		if diff := cmp.Diff([]*plantstore.Token{parent, want}, ownerTokenList(t, svc, "alice"), equateTime); diff != "" {
			t.Fatalf("the owner's tokens (-want +got):\n%s", diff)
		}
	})

	// A token that never expires may mint any lifetime up to 100 years, or
	// none.
	t.Run("NeverExpiringCaller", func(t *testing.T) {
		svc := openServices(t, bs)
		parent := caller(t, svc, "alice", 0, plantstore.ScopePlantsRead)
		for _, ttl := range []time.Duration{0, time.Second, plantstore.MaxTokenTTL} {
			tok, _, err := svc.Tokens.MintToken(t.Context(), parent, []string{plantstore.ScopePlantsRead}, ttl)
			if err != nil {
				t.Fatalf("ttl %v: %v", ttl, err)
			}
			if (tok.ExpiresAt == nil) != (ttl == 0) {
				t.Fatalf("ttl %v: ExpiresAt = %v", ttl, tok.ExpiresAt)
			}
		}
	})

	// A token that expires at T may mint tokens that expire by T, not later
	// and not never.
	t.Run("ExpiringCaller", func(t *testing.T) {
		c := newClock(fixedNow)
		_, svc := open(t, bs, service.Config{Now: c.Now})
		parent := caller(t, svc, "alice", time.Hour, all...)
		exp := *parent.ExpiresAt // as stored (PostgreSQL: microseconds)
		c.Set(exp.Add(-30 * time.Minute))
		for _, ttl := range []time.Duration{0, 30*time.Minute + time.Nanosecond, 31 * time.Minute, plantstore.MaxTokenTTL} {
			tok, secret, err := svc.Tokens.MintToken(t.Context(), parent, []string{plantstore.ScopePlantsRead}, ttl)
			checkCode(t, fmt.Sprintf("MintToken with ttl %v", ttl), err, plantstore.CodeInsufficientScope)
			if tok != nil || secret != "" {
				t.Fatalf("MintToken returned %+v, %q with an error", tok, secret)
			}
		}
		if _, _, err := svc.Tokens.MintToken(t.Context(), parent, []string{plantstore.ScopePlantsRead}, plantstore.MaxTokenTTL+time.Second); plantstore.ErrorCode(err) != plantstore.CodeInvalidBody {
			t.Fatalf("ttl past 100 years: %v, want code %d", err, plantstore.CodeInvalidBody)
		}
		if got := len(ownerTokenList(t, svc, "alice")); got != 1 {
			t.Fatalf("%d tokens after refused mints, want 1", got)
		}
		// Exactly the time left: the new token expires with its parent.
		tok, _, err := svc.Tokens.MintToken(t.Context(), parent, []string{plantstore.ScopePlantsRead}, 30*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if tok.ExpiresAt == nil || !tok.ExpiresAt.Equal(exp) {
			t.Fatalf("ExpiresAt = %v, want the parent's %v", tok.ExpiresAt, exp)
		}
	})

	t.Run("ErrScopeNotHeld", func(t *testing.T) {
		svc := openServices(t, bs)
		parent := caller(t, svc, "alice", 0, plantstore.ScopePlantsRead, plantstore.ScopeTokensManage)
		for _, scopes := range [][]string{
			{plantstore.ScopePlantsWrite},
			{plantstore.ScopePlantsRead, plantstore.ScopeWebhooksManage},
		} {
			_, _, err := svc.Tokens.MintToken(t.Context(), parent, scopes, time.Hour)
			checkCode(t, fmt.Sprintf("MintToken of %v", scopes), err, plantstore.CodeInsufficientScope)
			if !strings.Contains(err.Error(), "lacks the") {
				t.Fatalf("error %v, want it to name the scope the token lacks", err)
			}
		}
		if got := len(ownerTokenList(t, svc, "alice")); got != 1 {
			t.Fatalf("%d tokens after refused mints, want 1", got)
		}
	})

	t.Run("ErrInvalid", func(t *testing.T) {
		svc := openServices(t, bs)
		parent := caller(t, svc, "alice", 0, all...)
		for _, tt := range []struct {
			name   string
			scopes []string
			ttl    time.Duration
		}{
			{"NoScopes", nil, time.Hour},
			{"UnknownScope", []string{"plants:eat"}, time.Hour},
			{"NegativeTTL", []string{plantstore.ScopePlantsRead}, -time.Second},
			{"TTLPast100Years", []string{plantstore.ScopePlantsRead}, plantstore.MaxTokenTTL + time.Nanosecond},
		} {
			t.Run(tt.name, func(t *testing.T) {
				tok, secret, err := svc.Tokens.MintToken(t.Context(), parent, tt.scopes, tt.ttl)
				checkCode(t, "MintToken", err, plantstore.CodeInvalidBody)
				if tok != nil || secret != "" {
					t.Fatalf("MintToken returned %+v, %q with an error", tok, secret)
				}
			})
		}
		if got := len(ownerTokenList(t, svc, "alice")); got != 1 {
			t.Fatalf("%d tokens after refused mints, want 1", got)
		}
	})

	// A JWT's principal (never stored) mints tokens of its namespaced
	// owner, within its scopes and expiry.
	t.Run("JWTCaller", func(t *testing.T) {
		c := newClock(fixedNow)
		_, svc := open(t, bs, service.Config{Now: c.Now})
		exp := fixedNow.Add(time.Hour)
		jwt := &plantstore.Token{ID: "jwt:https://issuer.example#alice", Owner: "jwt:https://issuer.example#alice",
			Scopes: []string{"openid", plantstore.ScopePlantsRead, plantstore.ScopeTokensManage}, ExpiresAt: &exp}
		tok, secret, err := svc.Tokens.MintToken(t.Context(), jwt, []string{plantstore.ScopePlantsRead}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := tok.Owner, jwt.Owner; got != want {
			t.Fatalf("Owner = %q, want the JWT's %q", got, want)
		}
		authenticate(t, svc, secret, tok)
		_, _, err = svc.Tokens.MintToken(t.Context(), jwt, []string{plantstore.ScopePlantsRead}, time.Hour+time.Second)
		checkCode(t, "MintToken past the JWT's expiry", err, plantstore.CodeInsufficientScope)
		_, _, err = svc.Tokens.MintToken(t.Context(), jwt, []string{plantstore.ScopePlantsWrite}, time.Minute)
		checkCode(t, "MintToken of a scope the JWT lacks", err, plantstore.CodeInsufficientScope)

		// An owner that is not a valid token owner as it is (NewToken
		// would trim it into another one) mints nothing.
		for _, owner := range []string{"jwt:https://issuer.example#alice ", "jwt:https://issuer.example#a\u00a0b"} {
			odd := &plantstore.Token{ID: "jwt:x", Owner: owner, Scopes: jwt.Scopes, ExpiresAt: &exp}
			_, _, err := svc.Tokens.MintToken(t.Context(), odd, []string{plantstore.ScopePlantsRead}, time.Minute)
			checkCode(t, fmt.Sprintf("MintToken for owner %q", owner), err, plantstore.CodeInsufficientScope)
		}
		if got := len(ownerTokenList(t, svc, "jwt:https://issuer.example#alice")); got != 1 {
			t.Fatalf("%d tokens of the JWT's owner, want 1", got)
		}
	})
}

func testOwnerTokens(t *testing.T, bs Backends) {
	t.Run("FindOwnerTokens", func(t *testing.T) {
		c := newClock(fixedNow)
		_, svc := open(t, bs, service.Config{Now: c.Now})
		var want []*plantstore.Token
		for range 5 {
			c.Add(time.Millisecond)
			tok, _ := createToken(t, svc, plantstore.TokenRequest{Owner: "alice"})
			want = append(want, tok)
		}
		createToken(t, svc, plantstore.TokenRequest{Owner: "bob"})

		var got []*plantstore.Token
		f := plantstore.TokenFilter{Owner: "alice", Limit: 2}
		for i := 0; ; i++ {
			page, more, err := svc.Tokens.FindOwnerTokens(t.Context(), f)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, page...)
			if wantMore := i < 2; more != wantMore {
				t.Fatalf("page %d: more = %v, want %v", i, more, wantMore)
			}
			if !more {
				break
			}
			f.After = &page[len(page)-1].ID
		}
		if diff := cmp.Diff(want, got, equateTime); diff != "" {
			t.Fatalf("pages (-want +got):\n%s", diff)
		}
		// Limit 0: the default page.
		page, more, err := svc.Tokens.FindOwnerTokens(t.Context(), plantstore.TokenFilter{Owner: "alice"})
		if err != nil || more || len(page) != 5 {
			t.Fatalf("default page: %d tokens, more %v, err %v; want 5, false, nil", len(page), more, err)
		}

		bobs := ownerTokenList(t, svc, "bob")
		for _, tt := range []struct {
			name string
			f    plantstore.TokenFilter
		}{
			{"LimitTooLarge", plantstore.TokenFilter{Owner: "alice", Limit: plantstore.MaxPageSize + 1}},
			{"NegativeLimit", plantstore.TokenFilter{Owner: "alice", Limit: -1}},
			{"AfterNotAnID", plantstore.TokenFilter{Owner: "alice", After: ptr("whk_0123456789abcdef")}},
			{"AfterUnknown", plantstore.TokenFilter{Owner: "alice", After: ptr("tok_0000000000000000")}},
			{"AfterAnotherOwners", plantstore.TokenFilter{Owner: "alice", After: &bobs[0].ID}},
		} {
			t.Run(tt.name, func(t *testing.T) {
				_, _, err := svc.Tokens.FindOwnerTokens(t.Context(), tt.f)
				checkCode(t, "FindOwnerTokens", err, plantstore.CodeInvalidQuery)
			})
		}
	})

	t.Run("FindOwnerToken", func(t *testing.T) {
		svc := openServices(t, bs)
		tok, _ := createToken(t, svc, plantstore.TokenRequest{Owner: "alice"})
		got, err := svc.Tokens.FindOwnerToken(t.Context(), "alice", tok.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tok, got, equateTime); diff != "" {
			t.Fatalf("FindOwnerToken (-want +got):\n%s", diff)
		}
		_, err = svc.Tokens.FindOwnerToken(t.Context(), "bob", tok.ID)
		checkCode(t, "FindOwnerToken of another owner's token", err, plantstore.CodeTokenNotFound)
		_, err = svc.Tokens.FindOwnerToken(t.Context(), "alice", "tok_0000000000000000")
		checkCode(t, "FindOwnerToken of an unknown id", err, plantstore.CodeTokenNotFound)
	})

	// Revoking through the service takes effect in this process at once,
	// whatever the token cache holds.
	t.Run("RevokeOwnerToken", func(t *testing.T) {
		c := newClock(fixedNow)
		_, svc := open(t, bs, service.Config{Now: c.Now, TokenCacheTTL: time.Hour})
		tok, secret := createToken(t, svc, plantstore.TokenRequest{Owner: "alice"})
		other, otherSecret := createToken(t, svc, plantstore.TokenRequest{Owner: "alice"})
		authenticate(t, svc, secret, tok) // cached now
		authenticate(t, svc, otherSecret, other)

		_, err := svc.Tokens.RevokeOwnerToken(t.Context(), "bob", tok.ID)
		checkCode(t, "RevokeOwnerToken by another owner", err, plantstore.CodeTokenNotFound)
		authenticate(t, svc, secret, tok)

		at := c.Add(time.Second)
		got, err := svc.Tokens.RevokeOwnerToken(t.Context(), "alice", tok.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := *tok
		want.RevokedAt = &at
		if diff := cmp.Diff(&want, got, equateTime); diff != "" {
			t.Fatalf("RevokeOwnerToken returned (-want +got):\n%s", diff)
		}
		refused(t, svc, "the revoked token, cached before", secret)
		authenticate(t, svc, otherSecret, other)

		// Again, later: the first time stays.
		c.Add(time.Hour)
		got, err = svc.Tokens.RevokeOwnerToken(t.Context(), "alice", tok.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(&want, got, equateTime); diff != "" {
			t.Fatalf("second revoke returned (-want +got):\n%s", diff)
		}
		_, err = svc.Tokens.RevokeOwnerToken(t.Context(), "alice", "tok_0000000000000000")
		checkCode(t, "RevokeOwnerToken of an unknown id", err, plantstore.CodeTokenNotFound)
	})
}
