package sqlite_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
)

// The TokenService contract is tested by the conformance suite
// (storetest_test.go); this file keeps what is SQLite's own.

func newToken(t *testing.T, owner string, scopes []string, ttl time.Duration, now time.Time) (*plantstore.Token, string) {
	t.Helper()
	tok, secret, err := plantstore.NewToken(owner, scopes, ttl, now)
	if err != nil {
		t.Fatal(err)
	}
	return tok, secret
}

// TestTokenSecretNotStored checks that a dump of the database files does
// not reveal a usable token.
func TestTokenSecretNotStored(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := openDBAt(t, filepath.Join(dir, "plantstore.db"))
	var secrets []string
	for range 5 {
		tok, secret := newToken(t, "alice", nil, 0, fixedNow)
		if err := db.InsertToken(ctx, tok); err != nil {
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
}

// TestTokenTimesToTheNanosecond checks that token times are stored as given,
// to the nanosecond, and that a second revoke keeps the first time.
func TestTokenTimesToTheNanosecond(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	tok, _ := newToken(t, "alice", nil, time.Hour, fixedNow)
	if err := db.InsertToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	got, err := db.FindTokenByHash(ctx, tok.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := got.CreatedAt, fixedNow; !got.Equal(want) {
		t.Fatalf("CreatedAt = %v, want %v", got, want)
	}
	if got, want := *got.ExpiresAt, fixedNow.Add(time.Hour); !got.Equal(want) {
		t.Fatalf("ExpiresAt = %v, want %v", got, want)
	}
	first := fixedNow.Add(time.Minute)
	if err := db.RevokeToken(ctx, tok.ID, first); err != nil {
		t.Fatal(err)
	}
	if err := db.RevokeToken(ctx, tok.ID, first.Add(time.Hour)); err != nil {
		t.Fatalf("second revoke: %v", err)
	}
	if got, err = db.FindTokenByHash(ctx, tok.Hash); err != nil {
		t.Fatal(err)
	}
	if got.RevokedAt == nil {
		t.Fatal("RevokedAt = nil after RevokeToken")
	}
	if got, want := *got.RevokedAt, first; !got.Equal(want) {
		t.Fatalf("RevokedAt = %v, want %v (the first revoke's)", got, want)
	}
}
