package storetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/service"
)

// The bounds on tokens: an owner's cap of live tokens (InsertOwnerToken,
// MintToken) and the retention of revoked and expired ones (PruneTokens).
// testTokenLimitStore calls the backend's TokenStore; testTokenLimits runs
// through the service, with an injected clock.

// tokenIDs returns the ids of tokens, in order.
func tokenIDs(tokens []*plantstore.Token) []string {
	ids := make([]string, len(tokens))
	for i, tok := range tokens {
		ids[i] = tok.ID
	}
	return ids
}

func testTokenLimitStore(t *testing.T, bs Backends) {
	// Only live tokens count: neither revoked nor expired at the new
	// token's creation time (one that expires then is expired); another
	// owner's do not.
	t.Run("InsertOwnerToken", func(t *testing.T) {
		const max = 3
		b := bs.Open(t)
		ctx := t.Context()
		now := fixedNow.Add(time.Hour)
		revoked := newToken(t, "alice", 0, fixedNow)
		revoked.RevokedAt = ptr(fixedNow.Add(time.Minute))
		expired := newToken(t, "alice", time.Hour, fixedNow) // expires at now
		insertToken(t, b, revoked)
		insertToken(t, b, expired)
		for range 5 {
			insertToken(t, b, newToken(t, "bob", 0, fixedNow))
		}
		var live []*plantstore.Token
		for i := range max {
			tok := newToken(t, "alice", 2*time.Hour, now.Add(time.Duration(i)*time.Millisecond))
			if err := b.InsertOwnerToken(ctx, tok, max); err != nil {
				t.Fatalf("InsertOwnerToken %d of %d: %v", i+1, max, err)
			}
			live = append(live, tok)
		}
		next := newToken(t, "alice", 0, now.Add(time.Second))
		checkIs(t, "InsertOwnerToken past the cap", b.InsertOwnerToken(ctx, next, max), plantstore.ErrLimit)
		if _, err := b.FindTokenByHash(ctx, next.Hash); !errors.Is(err, plantstore.ErrNotFound) {
			t.Fatalf("the refused token: %v, want ErrNotFound (not stored)", err)
		}
		// A live token that expires frees a place once it has expired.
		later := *live[0].ExpiresAt
		checkIs(t, "InsertOwnerToken just before a token expires", b.InsertOwnerToken(ctx, newToken(t, "alice", 0, later.Add(-time.Microsecond)), max), plantstore.ErrLimit)
		if err := b.InsertOwnerToken(ctx, newToken(t, "alice", 0, later), max); err != nil {
			t.Fatalf("InsertOwnerToken once a token expired: %v", err)
		}
		// A revocation frees one too.
		if err := b.RevokeToken(ctx, live[1].ID, now.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		if err := b.InsertOwnerToken(ctx, newToken(t, "alice", 0, later), max); err != nil {
			t.Fatalf("InsertOwnerToken after a revocation: %v", err)
		}
		if err := b.InsertOwnerToken(ctx, newToken(t, "bob", 0, now), 6); err != nil {
			t.Fatalf("bob's sixth token, cap 6: %v", err)
		}
		checkIs(t, "bob's seventh token, cap 6", b.InsertOwnerToken(ctx, newToken(t, "bob", 0, now), 6), plantstore.ErrLimit)
		dup := newToken(t, "carol", 0, now)
		dup.ID = live[2].ID
		checkIs(t, "InsertOwnerToken with a taken id", b.InsertOwnerToken(ctx, dup, max), plantstore.ErrExists)
	})

	// Concurrent inserts for one owner never pass the cap, whichever
	// connection (or, on PostgreSQL, replica) runs them.
	t.Run("InsertOwnerTokenConcurrent", func(t *testing.T) {
		const max, n = 5, 24
		b := bs.Open(t)
		toks := make([]*plantstore.Token, n)
		for i := range toks {
			toks[i] = newToken(t, "alice", 0, fixedNow)
		}
		insertRace(t, max, n, func(i int) error { return b.InsertOwnerToken(t.Context(), toks[i], max) })
		if got := len(listTokens(t, b)); got != max {
			t.Fatalf("%d tokens stored, want %d", got, max)
		}
	})

	// Tokens revoked or expired before the cut-off go, in batches of at
	// most limit; those revoked or expired at it or after, live ones, and
	// the newest token, whatever its state, stay.
	t.Run("PruneTokens", func(t *testing.T) {
		b := bs.Open(t)
		ctx := t.Context()
		before := fixedNow.Add(-30 * 24 * time.Hour)
		created := fixedNow.Add(-60 * 24 * time.Hour)
		n := 0
		token := func(owner string, ttl time.Duration, revoked *time.Time) *plantstore.Token {
			n++
			tok := newToken(t, owner, ttl, created.Add(time.Duration(n)*time.Millisecond))
			tok.RevokedAt = revoked
			insertToken(t, b, tok)
			return tok
		}
		oldRevoked := token("alice", 0, ptr(before.Add(-time.Hour)))
		oldExpired := token("bob", 29*24*time.Hour, nil) // expired a day before the cut-off
		revokedAtCutoff := token("alice", 0, ptr(before))
		expiredAtCutoff := token("alice", before.Sub(created.Add(time.Duration(n+1)*time.Millisecond)), nil)
		recentlyRevoked := token("alice", 0, ptr(before.Add(time.Hour)))
		recentlyExpired := token("bob", 31*24*time.Hour, nil)
		live := token("alice", 0, nil)
		expiring := token("alice", 100*24*time.Hour, nil)
		revokedLongAgoExpiring := token("carol", 100*24*time.Hour, ptr(before.Add(-time.Hour)))
		newest := newToken(t, "dave", time.Hour, created.Add(24*time.Hour)) // expired long ago
		insertToken(t, b, newest)
		if !expiredAtCutoff.ExpiresAt.Equal(before) {
			t.Fatalf("expires at %v, want the cut-off %v", expiredAtCutoff.ExpiresAt, before)
		}

		got, err := b.PruneTokens(ctx, before, 2)
		if err != nil || got != 2 {
			t.Fatalf("PruneTokens limit 2 = %d, %v; want 2", got, err)
		}
		got, err = b.PruneTokens(ctx, before, 100)
		if err != nil || got != 1 {
			t.Fatalf("PruneTokens limit 100 = %d, %v; want 1 (the rest)", got, err)
		}
		got, err = b.PruneTokens(ctx, before, 100)
		if err != nil || got != 0 {
			t.Fatalf("PruneTokens again = %d, %v; want 0", got, err)
		}
		want := tokenIDs([]*plantstore.Token{revokedAtCutoff, expiredAtCutoff, recentlyRevoked, recentlyExpired, live, expiring, newest})
		if diff := cmp.Diff(want, tokenIDs(listTokens(t, b))); diff != "" {
			t.Fatalf("tokens left (-want +got):\n%s", diff)
		}
		for _, gone := range []*plantstore.Token{oldRevoked, oldExpired, revokedLongAgoExpiring} {
			if _, err := b.FindTokenByHash(ctx, gone.Hash); !errors.Is(err, plantstore.ErrNotFound) {
				t.Fatalf("pruned token %s: %v, want ErrNotFound", gone.ID, err)
			}
		}

		// Much later, every token revoked or expired goes but the newest.
		got, err = b.PruneTokens(ctx, fixedNow.Add(1000*24*time.Hour), 100)
		if err != nil || got != len(want)-2 {
			t.Fatalf("PruneTokens much later = %d, %v; want %d", got, err, len(want)-2)
		}
		if diff := cmp.Diff(tokenIDs([]*plantstore.Token{live, newest}), tokenIDs(listTokens(t, b))); diff != "" {
			t.Fatalf("tokens left (-want +got):\n%s", diff)
		}
	})
}

func testTokenLimits(t *testing.T, bs Backends) {
	all := plantstore.KnownScopes

	// MintToken leaves an owner at most Config.MaxTokensPerOwner live
	// tokens, those CreateToken issued included; past it,
	// CodeTooManyTokens naming the cap. Tokens that expire or are
	// revoked make room; CreateToken, the operator's, is not bound.
	t.Run("MintToken", func(t *testing.T) {
		const max = 3
		c := newClock(fixedNow)
		_, svc := open(t, bs, service.Config{Now: c.Now, MaxTokensPerOwner: max})
		ctx := t.Context()
		parent := caller(t, svc, "alice", 0, all...)
		short, _, err := svc.Tokens.MintToken(ctx, parent, []string{plantstore.ScopePlantsRead}, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := svc.Tokens.MintToken(ctx, parent, []string{plantstore.ScopePlantsRead}, 0); err != nil {
			t.Fatal(err)
		}
		_, _, err = svc.Tokens.MintToken(ctx, parent, []string{plantstore.ScopePlantsRead}, 0)
		checkCode(t, "MintToken past the cap", err, plantstore.CodeTooManyTokens)
		var pe *plantstore.Error
		if !errors.As(err, &pe) || !strings.Contains(pe.Message, fmt.Sprintf("--max-tokens-per-owner allows (%d)", max)) ||
			!strings.Contains(pe.Message, `"alice"`) || pe.Status() != 409 {
			t.Fatalf("MintToken past the cap: %v, want a 409 naming the owner and the cap", err)
		}
		if got := len(ownerTokenList(t, svc, "alice")); got != max {
			t.Fatalf("alice has %d tokens, want %d", got, max)
		}
		// Another owner has a cap of its own.
		bob := caller(t, svc, "bob", 0, all...)
		if _, _, err := svc.Tokens.MintToken(ctx, bob, []string{plantstore.ScopePlantsRead}, 0); err != nil {
			t.Fatalf("bob's mint: %v", err)
		}
		// The operator's CreateToken is not bound, and its tokens count.
		operators, _ := createToken(t, svc, plantstore.TokenRequest{Owner: "alice"})
		// Once the short token has expired, one place is free... but the
		// operator's token took it.
		c.Set(*short.ExpiresAt)
		_, _, err = svc.Tokens.MintToken(ctx, parent, []string{plantstore.ScopePlantsRead}, 0)
		checkCode(t, "MintToken at the cap again", err, plantstore.CodeTooManyTokens)
		if _, err := svc.Tokens.RevokeOwnerToken(ctx, "alice", operators.ID); err != nil {
			t.Fatal(err)
		}
		if _, _, err := svc.Tokens.MintToken(ctx, parent, []string{plantstore.ScopePlantsRead}, 0); err != nil {
			t.Fatalf("MintToken after an expiry and a revocation: %v", err)
		}
	})

	// PruneTokens deletes what was revoked or expired more than the
	// retention ago by the service's clock; a pruned token's secret is
	// then unknown.
	t.Run("PruneTokens", func(t *testing.T) {
		const retention = 30 * 24 * time.Hour
		c := newClock(fixedNow)
		_, svc := open(t, bs, service.Config{Now: c.Now})
		ctx := t.Context()
		revoked, revokedSecret := createToken(t, svc, plantstore.TokenRequest{Owner: "alice"})
		createToken(t, svc, plantstore.TokenRequest{Owner: "alice", TTL: time.Hour})
		c.Add(time.Minute)
		live, liveSecret := createToken(t, svc, plantstore.TokenRequest{Owner: "alice"})
		if err := svc.Tokens.RevokeToken(ctx, revoked.ID); err != nil {
			t.Fatal(err)
		}
		c.Add(retention)
		if n, err := svc.Tokens.PruneTokens(ctx, retention, 100); err != nil || n != 0 {
			t.Fatalf("PruneTokens at the retention = %d, %v; want 0 (revoked and expired less than %v ago)", n, err, retention)
		}
		c.Add(time.Hour)
		if n, err := svc.Tokens.PruneTokens(ctx, retention, 100); err != nil || n != 2 {
			t.Fatalf("PruneTokens past the retention = %d, %v; want 2", n, err)
		}
		if diff := cmp.Diff([]string{live.ID}, tokenIDs(findTokens(t, svc))); diff != "" {
			t.Fatalf("tokens left (-want +got):\n%s", diff)
		}
		_, err := svc.Tokens.Authenticate(ctx, revokedSecret)
		checkCode(t, "a pruned token", err, plantstore.CodeTokenInvalid)
		authenticate(t, svc, liveSecret, live)
	})
}
