package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
)

func newToken(t *testing.T, owner string, scopes []string, ttl time.Duration, now time.Time) (*plantstore.Token, string) {
	t.Helper()
	tok, secret, err := plantstore.NewToken(owner, scopes, ttl, now)
	if err != nil {
		t.Fatal(err)
	}
	return tok, secret
}

func mustCreateToken(t *testing.T, s plantstore.Store, tok *plantstore.Token) {
	t.Helper()
	if err := s.CreateToken(t.Context(), tok); err != nil {
		t.Fatal(err)
	}
}

func findToken(t *testing.T, s plantstore.Store, hash []byte) *plantstore.Token {
	t.Helper()
	got, err := s.FindTokenByHash(t.Context(), hash)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func countTokens(t *testing.T, s plantstore.Store) int {
	t.Helper()
	n, err := s.CountTokens(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func testCreateToken(t *testing.T, open func(t *testing.T) plantstore.Store) {
	for _, tt := range []struct {
		name   string
		scopes []string
		ttl    time.Duration
	}{
		{"OK", []string{plantstore.ScopePlantsRead}, time.Hour},
		{"DefaultScopesNoExpiry", nil, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			tok, secret := newToken(t, "alice", tt.scopes, tt.ttl, fixedNow)
			want := *tok
			mustCreateToken(t, s, tok)
			got := findToken(t, s, plantstore.HashToken(secret))
			if diff := cmp.Diff(&want, got, equateTime); diff != "" {
				t.Fatalf("stored token (-want +got):\n%s", diff)
			}
		})
	}

	// A token without CreatedAt gets the time of the call.
	t.Run("CreatedAtFromNow", func(t *testing.T) {
		s := open(t)
		tok, _ := newToken(t, "alice", nil, 0, fixedNow)
		tok.CreatedAt = time.Time{}
		before := time.Now()
		mustCreateToken(t, s, tok)
		after := time.Now()
		got := findToken(t, s, tok.Hash)
		checkTimeBetween(t, "CreatedAt", got.CreatedAt, before, after)
	})

	t.Run("ErrDuplicateHash", func(t *testing.T) {
		s := open(t)
		tok, _ := newToken(t, "alice", nil, 0, fixedNow)
		mustCreateToken(t, s, tok)
		other, _ := newToken(t, "bob", nil, 0, fixedNow)
		other.Hash = tok.Hash
		if err := s.CreateToken(t.Context(), other); err == nil {
			t.Fatal("a second token with the same hash was stored")
		}
		if got, want := findToken(t, s, tok.Hash).ID, tok.ID; got != want {
			t.Fatalf("the hash finds token %s, want the first one, %s", got, want)
		}
		if got, want := countTokens(t, s), 1; got != want {
			t.Fatalf("CountTokens = %d, want %d", got, want)
		}
	})
}

func testFindTokenByHash(t *testing.T, open func(t *testing.T) plantstore.Store) {
	s := open(t)
	tok, _ := newToken(t, "alice", nil, 0, fixedNow)
	mustCreateToken(t, s, tok)

	t.Run("ErrUnknownHash", func(t *testing.T) {
		got, err := s.FindTokenByHash(t.Context(), plantstore.HashToken("not-a-token-that-exists-anywhere"))
		if got, want := plantstore.ErrorCode(err), plantstore.CodeTokenInvalid; got != want {
			t.Fatalf("ErrorCode(%v) = %d, want %d", err, got, want)
		}
		if got != nil {
			t.Fatalf("got token %+v with an error", got)
		}
	})

	t.Run("ErrEmptyHash", func(t *testing.T) {
		_, err := s.FindTokenByHash(t.Context(), nil)
		if got, want := plantstore.ErrorCode(err), plantstore.CodeTokenInvalid; got != want {
			t.Fatalf("ErrorCode(%v) = %d, want %d", err, got, want)
		}
	})

	// The store returns revoked and expired tokens as they are; the HTTP
	// layer decides what they are worth.
	t.Run("RevokedAndExpiredFound", func(t *testing.T) {
		expired, _ := newToken(t, "bob", nil, time.Minute, fixedNow.Add(-time.Hour))
		revoked, _ := newToken(t, "carol", nil, 0, fixedNow)
		for _, tok := range []*plantstore.Token{expired, revoked} {
			mustCreateToken(t, s, tok)
		}
		if err := s.RevokeToken(t.Context(), revoked.ID); err != nil {
			t.Fatal(err)
		}

		got := findToken(t, s, expired.Hash)
		if diff := cmp.Diff(expired, got, equateTime); diff != "" {
			t.Fatalf("expired token (-want +got):\n%s", diff)
		}
		if got, want := got.Status(fixedNow), "expired"; got != want {
			t.Fatalf("expired token: Status = %q, want %q", got, want)
		}

		got = findToken(t, s, revoked.Hash)
		if got.RevokedAt == nil {
			t.Fatal("revoked token: RevokedAt = nil")
		}
		want := *revoked
		want.RevokedAt = got.RevokedAt
		if diff := cmp.Diff(&want, got, equateTime); diff != "" {
			t.Fatalf("revoked token (-want +got):\n%s", diff)
		}
		if got, want := got.Status(fixedNow), "revoked"; got != want {
			t.Fatalf("revoked token: Status = %q, want %q", got, want)
		}
	})
}

func testFindTokens(t *testing.T, open func(t *testing.T) plantstore.Store) {
	t.Run("Empty", func(t *testing.T) {
		s := open(t)
		tokens, err := s.FindTokens(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if got, want := len(tokens), 0; got != want {
			t.Fatalf("%d tokens, want %d", got, want)
		}
	})

	t.Run("OldestFirst", func(t *testing.T) {
		s := open(t)
		var want []*plantstore.Token
		// Inserted newest first; listed oldest first. One is revoked and
		// one expired: all are listed.
		for i, owner := range []string{"dave", "carol", "bob", "alice"} {
			created := fixedNow.Add(-time.Duration(i) * time.Minute)
			ttl := time.Duration(0)
			if owner == "bob" {
				ttl = time.Second
			}
			tok, _ := newToken(t, owner, nil, ttl, created)
			mustCreateToken(t, s, tok)
			want = append([]*plantstore.Token{tok}, want...)
		}
		if err := s.RevokeToken(t.Context(), want[0].ID); err != nil {
			t.Fatal(err)
		}
		got, err := s.FindTokens(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(got) > 0 && got[0].RevokedAt != nil {
			want[0].RevokedAt = got[0].RevokedAt
		}
		if diff := cmp.Diff(want, got, equateTime); diff != "" {
			t.Fatalf("tokens (-want +got):\n%s", diff)
		}
		if got[0].RevokedAt == nil {
			t.Fatal("revoked token listed with RevokedAt = nil")
		}
	})
}

func testRevokeToken(t *testing.T, open func(t *testing.T) plantstore.Store) {
	t.Run("OK", func(t *testing.T) {
		s := open(t)
		tok, _ := newToken(t, "alice", nil, 0, fixedNow)
		other, _ := newToken(t, "bob", nil, 0, fixedNow)
		mustCreateToken(t, s, tok)
		mustCreateToken(t, s, other)

		before := time.Now()
		if err := s.RevokeToken(t.Context(), tok.ID); err != nil {
			t.Fatal(err)
		}
		after := time.Now()
		got := findToken(t, s, tok.Hash)
		if got.RevokedAt == nil {
			t.Fatal("RevokedAt = nil after RevokeToken")
		}
		first := *got.RevokedAt
		checkTimeBetween(t, "RevokedAt", first, before, after)
		if got, want := got.Active(after), false; got != want {
			t.Fatalf("Active = %v, want %v", got, want)
		}

		// A second revoke, at a later time, succeeds and keeps the first time.
		waitPast(first)
		if err := s.RevokeToken(t.Context(), tok.ID); err != nil {
			t.Fatalf("second revoke: %v", err)
		}
		got = findToken(t, s, tok.Hash)
		if got.RevokedAt == nil {
			t.Fatal("RevokedAt = nil after the second RevokeToken")
		}
		if got, want := *got.RevokedAt, first; !got.Equal(want) {
			t.Fatalf("RevokedAt after second revoke = %v, want %v", got, want)
		}

		// The other token is untouched.
		if got := findToken(t, s, other.Hash); got.RevokedAt != nil {
			t.Fatalf("other token RevokedAt = %v, want nil", got.RevokedAt)
		}
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		s := open(t)
		err := s.RevokeToken(t.Context(), "tok_0000000000000000")
		if got, want := plantstore.ErrorCode(err), plantstore.CodeNotFound; got != want {
			t.Fatalf("ErrorCode(%v) = %d, want %d", err, got, want)
		}
	})
}

func testCountTokens(t *testing.T, open func(t *testing.T) plantstore.Store) {
	s := open(t)
	for i := range 4 {
		if got, want := countTokens(t, s), i; got != want {
			t.Fatalf("CountTokens = %d, want %d", got, want)
		}
		tok, _ := newToken(t, "alice", nil, time.Minute, fixedNow)
		mustCreateToken(t, s, tok)
		if i == 1 {
			if err := s.RevokeToken(t.Context(), tok.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Revoked and expired ones count.
	if got, want := countTokens(t, s), 4; got != want {
		t.Fatalf("CountTokens = %d, want %d", got, want)
	}
}

func testCreateFirstToken(t *testing.T, open func(t *testing.T) plantstore.Store) {
	t.Run("OK", func(t *testing.T) {
		s := open(t)
		first, _ := newToken(t, "admin", nil, 0, fixedNow)
		want := *first
		created, err := s.CreateFirstToken(t.Context(), first)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := created, true; got != want {
			t.Fatalf("created = %v, want %v", got, want)
		}
		if diff := cmp.Diff(&want, findToken(t, s, first.Hash), equateTime); diff != "" {
			t.Fatalf("stored token (-want +got):\n%s", diff)
		}

		// Afterwards it stores nothing.
		second, _ := newToken(t, "admin", nil, 0, fixedNow)
		created, err = s.CreateFirstToken(t.Context(), second)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := created, false; got != want {
			t.Fatalf("second call: created = %v, want %v", got, want)
		}
		if got, want := countTokens(t, s), 1; got != want {
			t.Fatalf("CountTokens = %d, want %d", got, want)
		}
		_, err = s.FindTokenByHash(t.Context(), second.Hash)
		if got, want := plantstore.ErrorCode(err), plantstore.CodeTokenInvalid; got != want {
			t.Fatalf("second token lookup: ErrorCode(%v) = %d, want %d", err, got, want)
		}
	})

	// Any token, revoked ones included, means the first one exists.
	t.Run("NotWhenRevokedTokenExists", func(t *testing.T) {
		s := open(t)
		tok, _ := newToken(t, "alice", nil, 0, fixedNow)
		mustCreateToken(t, s, tok)
		if err := s.RevokeToken(t.Context(), tok.ID); err != nil {
			t.Fatal(err)
		}
		admin, _ := newToken(t, "admin", nil, 0, fixedNow)
		created, err := s.CreateFirstToken(t.Context(), admin)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := created, false; got != want {
			t.Fatalf("created = %v, want %v", got, want)
		}
		if got, want := countTokens(t, s), 1; got != want {
			t.Fatalf("CountTokens = %d, want %d", got, want)
		}
	})

	// Replicas starting at once each try to create the first token: exactly
	// one does.
	t.Run("Concurrent", func(t *testing.T) {
		const n = 8
		s := open(t)
		tokens := make([]*plantstore.Token, n)
		for i := range n {
			tokens[i], _ = newToken(t, fmt.Sprintf("admin%d", i), nil, 0, fixedNow)
		}
		created := make([]bool, n)
		errs := make([]error, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				created[i], errs[i] = s.CreateFirstToken(t.Context(), tokens[i])
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
		if got, want := countTokens(t, s), 1; got != want {
			t.Fatalf("CountTokens = %d, want %d", got, want)
		}
		all, err := s.FindTokens(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if got, want := all[0].ID, tokens[winner].ID; got != want {
			t.Fatalf("stored token %s, want the winner's %s", got, want)
		}
	})
}
