package sqlite_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
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

func TestCreateToken(t *testing.T) {
	ctx := context.Background()

	t.Run("OK", func(t *testing.T) {
		db := openDB(t)
		tok, secret := newToken(t, "alice", []string{"plants:read"}, time.Hour, fixedNow)
		if err := db.CreateToken(ctx, tok); err != nil {
			t.Fatal(err)
		}
		got, err := db.FindTokenByHash(ctx, plantstore.HashToken(secret))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tok, got); diff != "" {
			t.Fatalf("stored token (-want +got):\n%s", diff)
		}
	})

	t.Run("CreatedAtFromNow", func(t *testing.T) {
		db := openDB(t)
		tok, _ := newToken(t, "alice", nil, 0, fixedNow)
		tok.CreatedAt = time.Time{}
		if err := db.CreateToken(ctx, tok); err != nil {
			t.Fatal(err)
		}
		got, err := db.FindTokenByHash(ctx, tok.Hash)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := got.CreatedAt, fixedNow; !got.Equal(want) {
			t.Fatalf("CreatedAt = %v, want %v", got, want)
		}
	})

	t.Run("ErrDuplicateHash", func(t *testing.T) {
		db := openDB(t)
		tok, _ := newToken(t, "alice", nil, 0, fixedNow)
		if err := db.CreateToken(ctx, tok); err != nil {
			t.Fatal(err)
		}
		other, _ := newToken(t, "bob", nil, 0, fixedNow)
		other.Hash = tok.Hash
		if err := db.CreateToken(ctx, other); err == nil {
			t.Fatal("a second token with the same hash was stored")
		}
	})

	// A dump of the database files must not reveal a usable token.
	t.Run("SecretNotStored", func(t *testing.T) {
		dir := t.TempDir()
		db := openDBAt(t, filepath.Join(dir, "plantstore.db"))
		var secrets []string
		for range 5 {
			tok, secret := newToken(t, "alice", nil, 0, fixedNow)
			if err := db.CreateToken(ctx, tok); err != nil {
				t.Fatal(err)
			}
			secrets = append(secrets, secret)
		}
		files, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(dir, f.Name()))
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range secrets {
				// The whole secret, and its random part alone.
				for _, needle := range []string{s, s[len(plantstore.TokenPrefix) : len(s)-8]} {
					if bytes.Contains(b, []byte(needle)) {
						t.Fatalf("file %s contains a token secret", f.Name())
					}
				}
			}
		}
	})
}

func TestFindTokenByHash(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	tok, _ := newToken(t, "alice", nil, 0, fixedNow)
	if err := db.CreateToken(ctx, tok); err != nil {
		t.Fatal(err)
	}

	t.Run("ErrUnknownHash", func(t *testing.T) {
		got, err := db.FindTokenByHash(ctx, plantstore.HashToken("not-a-token-that-exists-anywhere"))
		if got, want := plantstore.ErrorCode(err), plantstore.CodeTokenInvalid; got != want {
			t.Fatalf("ErrorCode(%v) = %d, want %d", err, got, want)
		}
		if got != nil {
			t.Fatalf("got token %+v with an error", got)
		}
	})

	t.Run("ErrEmptyHash", func(t *testing.T) {
		_, err := db.FindTokenByHash(ctx, nil)
		if got, want := plantstore.ErrorCode(err), plantstore.CodeTokenInvalid; got != want {
			t.Fatalf("ErrorCode(%v) = %d, want %d", err, got, want)
		}
	})

	t.Run("RevokedAndExpiredFound", func(t *testing.T) {
		expired, _ := newToken(t, "bob", nil, time.Minute, fixedNow.Add(-time.Hour))
		revoked, _ := newToken(t, "carol", nil, 0, fixedNow)
		for _, tok := range []*plantstore.Token{expired, revoked} {
			if err := db.CreateToken(ctx, tok); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.RevokeToken(ctx, revoked.ID); err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct {
			tok    *plantstore.Token
			status string
		}{{expired, "expired"}, {revoked, "revoked"}} {
			got, err := db.FindTokenByHash(ctx, tt.tok.Hash)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := got.Status(fixedNow), tt.status; got != want {
				t.Fatalf("%s: Status = %q, want %q", tt.tok.Owner, got, want)
			}
		}
	})
}

func TestFindTokens(t *testing.T) {
	ctx := context.Background()

	t.Run("Empty", func(t *testing.T) {
		db := openDB(t)
		tokens, err := db.FindTokens(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := len(tokens), 0; got != want {
			t.Fatalf("%d tokens, want %d", got, want)
		}
	})

	t.Run("OldestFirst", func(t *testing.T) {
		db := openDB(t)
		var want []*plantstore.Token
		// Inserted newest first; listed oldest first.
		for i, owner := range []string{"dave", "carol", "bob", "alice"} {
			tok, _ := newToken(t, owner, nil, 0, fixedNow.Add(-time.Duration(i)*time.Minute))
			if err := db.CreateToken(ctx, tok); err != nil {
				t.Fatal(err)
			}
			want = append([]*plantstore.Token{tok}, want...)
		}
		got, err := db.FindTokens(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("tokens (-want +got):\n%s", diff)
		}
	})
}

func TestRevokeToken(t *testing.T) {
	ctx := context.Background()

	t.Run("OK", func(t *testing.T) {
		db := openDB(t)
		tok, _ := newToken(t, "alice", nil, 0, fixedNow)
		other, _ := newToken(t, "bob", nil, 0, fixedNow)
		for _, tk := range []*plantstore.Token{tok, other} {
			if err := db.CreateToken(ctx, tk); err != nil {
				t.Fatal(err)
			}
		}
		first := fixedNow.Add(time.Hour)
		db.Now = func() time.Time { return first }
		if err := db.RevokeToken(ctx, tok.ID); err != nil {
			t.Fatal(err)
		}
		got, err := db.FindTokenByHash(ctx, tok.Hash)
		if err != nil {
			t.Fatal(err)
		}
		if got.RevokedAt == nil {
			t.Fatal("RevokedAt = nil after RevokeToken")
		}
		if got, want := *got.RevokedAt, first; !got.Equal(want) {
			t.Fatalf("RevokedAt = %v, want %v", got, want)
		}
		if got, want := got.Active(first.Add(time.Second)), false; got != want {
			t.Fatalf("Active = %v, want %v", got, want)
		}

		// A second revoke succeeds and keeps the first time.
		db.Now = func() time.Time { return first.Add(time.Hour) }
		if err := db.RevokeToken(ctx, tok.ID); err != nil {
			t.Fatalf("second revoke: %v", err)
		}
		if got, err = db.FindTokenByHash(ctx, tok.Hash); err != nil {
			t.Fatal(err)
		}
		if got, want := *got.RevokedAt, first; !got.Equal(want) {
			t.Fatalf("RevokedAt after second revoke = %v, want %v", got, want)
		}

		// The other token is untouched.
		if got, err = db.FindTokenByHash(ctx, other.Hash); err != nil {
			t.Fatal(err)
		}
		if got.RevokedAt != nil {
			t.Fatalf("other token RevokedAt = %v, want nil", got.RevokedAt)
		}
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		db := openDB(t)
		err := db.RevokeToken(ctx, "tok_0000000000000000")
		if got, want := plantstore.ErrorCode(err), plantstore.CodeNotFound; got != want {
			t.Fatalf("ErrorCode(%v) = %d, want %d", err, got, want)
		}
	})
}

func TestCountTokens(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	for i := range 4 {
		n, err := db.CountTokens(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := n, i; got != want {
			t.Fatalf("CountTokens = %d, want %d", got, want)
		}
		tok, _ := newToken(t, "alice", nil, time.Minute, fixedNow)
		if err := db.CreateToken(ctx, tok); err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			if err := db.RevokeToken(ctx, tok.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Revoked and expired ones count.
	n, err := db.CountTokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := n, 4; got != want {
		t.Fatalf("CountTokens = %d, want %d", got, want)
	}
}
