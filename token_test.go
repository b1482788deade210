package plantstore_test

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
)

var tokenRE = regexp.MustCompile(`^pst_[0-9a-f]{72}$`)

var now = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func TestNewToken(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		tok, secret, err := plantstore.NewToken("alice", nil, 0, now)
		if err != nil {
			t.Fatal(err)
		}
		if !tokenRE.MatchString(secret) {
			t.Fatalf("secret %q does not match %s", secret, tokenRE)
		}
		if got, want := len(secret), 76; got != want {
			t.Fatalf("len(secret) = %d, want %d", got, want)
		}
		if got, want := strings.HasPrefix(secret, plantstore.TokenPrefix), true; got != want {
			t.Fatalf("prefix: got %v, want %v", got, want)
		}
		if got, want := tok.Owner, "alice"; got != want {
			t.Fatalf("Owner = %q, want %q", got, want)
		}
		if diff := cmp.Diff([]string{"plants:read", "plants:write"}, tok.Scopes); diff != "" {
			t.Fatalf("default scopes (-want +got):\n%s", diff)
		}
		if got, want := tok.Hash, plantstore.HashToken(secret); !bytes.Equal(got, want) {
			t.Fatalf("Hash = %x, want %x", got, want)
		}
		if !regexp.MustCompile(`^tok_[0-9a-f]{16}$`).MatchString(tok.ID) {
			t.Fatalf("ID = %q, want tok_ and 16 hex digits", tok.ID)
		}
		if got, want := tok.CreatedAt, now; !got.Equal(want) {
			t.Fatalf("CreatedAt = %v, want %v", got, want)
		}
		if tok.ExpiresAt != nil || tok.RevokedAt != nil {
			t.Fatalf("ExpiresAt = %v, RevokedAt = %v, want nil, nil", tok.ExpiresAt, tok.RevokedAt)
		}
		if strings.Contains(tok.ID, secret[len(plantstore.TokenPrefix):len(plantstore.TokenPrefix)+16]) {
			t.Fatalf("ID %q reveals part of the secret", tok.ID)
		}
	})

	t.Run("Unique", func(t *testing.T) {
		secrets := map[string]bool{}
		ids := map[string]bool{}
		for range 200 {
			tok, secret, err := plantstore.NewToken("alice", nil, 0, now)
			if err != nil {
				t.Fatal(err)
			}
			if secrets[secret] || ids[tok.ID] {
				t.Fatalf("duplicate secret %q or id %q", secret, tok.ID)
			}
			secrets[secret], ids[tok.ID] = true, true
		}
	})

	t.Run("Scopes", func(t *testing.T) {
		for _, tt := range []struct {
			name   string
			scopes []string
			want   []string
		}{
			{"Read", []string{"plants:read"}, []string{"plants:read"}},
			{"Write", []string{"plants:write"}, []string{"plants:write"}},
			{"SortedAndDeduplicated", []string{"plants:write", "plants:read", "plants:write"}, []string{"plants:read", "plants:write"}},
			{"Empty", []string{}, []string{"plants:read", "plants:write"}},
		} {
			t.Run(tt.name, func(t *testing.T) {
				tok, _, err := plantstore.NewToken("alice", tt.scopes, 0, now)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tt.want, tok.Scopes); diff != "" {
					t.Fatalf("Scopes (-want +got):\n%s", diff)
				}
			})
		}
	})

	t.Run("DefaultScopesNotAliased", func(t *testing.T) {
		tok, _, err := plantstore.NewToken("alice", nil, 0, now)
		if err != nil {
			t.Fatal(err)
		}
		tok.Scopes[0] = "changed"
		if diff := cmp.Diff([]string{"plants:read", "plants:write"}, plantstore.DefaultScopes); diff != "" {
			t.Fatalf("DefaultScopes changed through a token (-want +got):\n%s", diff)
		}
	})

	t.Run("TTL", func(t *testing.T) {
		tok, _, err := plantstore.NewToken("alice", nil, 90*time.Minute, now)
		if err != nil {
			t.Fatal(err)
		}
		if tok.ExpiresAt == nil {
			t.Fatal("ExpiresAt = nil, want a time")
		}
		if got, want := *tok.ExpiresAt, now.Add(90*time.Minute); !got.Equal(want) {
			t.Fatalf("ExpiresAt = %v, want %v", got, want)
		}
	})

	// Owner names are 1-256 bytes of printable characters: any script,
	// spaces inside, punctuation and symbols.
	t.Run("OwnerPrintable", func(t *testing.T) {
		for _, owner := range []string{"a", "alice@example.com", "team plants", "jwt:https://idp.example#user|42",
			"Zoë", "植物", "🌱", strings.Repeat("a", plantstore.MaxOwnerLength), strings.Repeat("é", plantstore.MaxOwnerLength/2)} {
			tok, _, err := plantstore.NewToken(owner, nil, 0, now)
			if err != nil {
				t.Fatalf("%q: %v", owner, err)
			}
			if got, want := tok.Owner, owner; got != want {
				t.Fatalf("Owner = %q, want %q", got, want)
			}
		}
	})

	t.Run("OwnerTrimmed", func(t *testing.T) {
		tok, _, err := plantstore.NewToken("  bob ", nil, 0, now)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := tok.Owner, "bob"; got != want {
			t.Fatalf("Owner = %q, want %q", got, want)
		}
	})

	for _, tt := range []struct {
		name   string
		owner  string
		scopes []string
		ttl    time.Duration
	}{
		{"ErrEmptyOwner", "", nil, 0},
		{"ErrBlankOwner", " \t", nil, 0},
		{"ErrOwnerTab", "ali\tce", nil, 0},
		{"ErrOwnerNewline", "alice\ntok_0000000000000000  mallory", nil, 0},
		{"ErrOwnerNUL", "ali\x00ce", nil, 0},
		{"ErrOwnerDEL", "alice\x7f", nil, 0},
		{"ErrOwnerC1", "ali\u0085ce", nil, 0},
		{"ErrOwnerBidiOverride", "alice\u202eecila", nil, 0},
		{"ErrOwnerZeroWidth", "ali\u200bce", nil, 0},
		{"ErrOwnerNotUTF8", "alice\xff", nil, 0},
		{"ErrOwner257Bytes", strings.Repeat("a", 257), nil, 0},
		{"ErrOwner100kB", strings.Repeat("a", 100_000), nil, 0},
		{"ErrOwner129TwoByte", strings.Repeat("é", 129), nil, 0},
		{"ErrUnknownScope", "alice", []string{"plants:admin"}, 0},
		{"ErrUnknownScopeAmongKnown", "alice", []string{"plants:read", "plants:delete"}, 0},
		{"ErrNegativeTTL", "alice", nil, -time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tok, secret, err := plantstore.NewToken(tt.owner, tt.scopes, tt.ttl, now)
			if got, want := plantstore.ErrorCode(err), plantstore.CodeInvalidBody; got != want {
				t.Fatalf("ErrorCode(%v) = %d, want %d", err, got, want)
			}
			if tok != nil || secret != "" {
				t.Fatalf("got token %v and secret %q with an error", tok, secret)
			}
		})
	}
}

func TestPlausibleToken(t *testing.T) {
	_, secret, err := plantstore.NewToken("alice", nil, 0, now)
	if err != nil {
		t.Fatal(err)
	}
	prefix := len(plantstore.TokenPrefix)

	t.Run("Generated", func(t *testing.T) {
		for range 50 {
			_, s, err := plantstore.NewToken("alice", nil, 0, now)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := plantstore.PlausibleToken(s), true; got != want {
				t.Fatalf("PlausibleToken(%q) = %v, want %v", s, got, want)
			}
		}
	})

	// Every change of one hex digit after the prefix, in the random part or
	// the checksum, is caught by the CRC-32.
	t.Run("ErrOneCharChanged", func(t *testing.T) {
		const digits = "0123456789abcdef"
		for i := prefix; i < len(secret); i++ {
			for _, c := range []byte(digits) {
				if c == secret[i] {
					continue
				}
				s := secret[:i] + string(c) + secret[i+1:]
				if got, want := plantstore.PlausibleToken(s), false; got != want {
					t.Fatalf("PlausibleToken(%q) (position %d changed) = %v, want %v", s, i, got, want)
				}
			}
		}
	})

	t.Run("ErrTruncated", func(t *testing.T) {
		for _, n := range []int{len(secret) - 1, len(secret) - 8, prefix + 64, prefix + 1, prefix} {
			if got, want := plantstore.PlausibleToken(secret[:n]), false; got != want {
				t.Fatalf("PlausibleToken(%q) = %v, want %v", secret[:n], got, want)
			}
		}
	})

	t.Run("ErrExtended", func(t *testing.T) {
		if got, want := plantstore.PlausibleToken(secret+"0"), false; got != want {
			t.Fatalf("PlausibleToken(secret+\"0\") = %v, want %v", got, want)
		}
	})

	t.Run("ErrWrongChecksum", func(t *testing.T) {
		s := secret[:len(secret)-8] + "00000000"
		if s == secret {
			s = secret[:len(secret)-8] + "00000001"
		}
		if got, want := plantstore.PlausibleToken(s), false; got != want {
			t.Fatalf("PlausibleToken(%q) = %v, want %v", s, got, want)
		}
	})

	t.Run("ErrChecksumNotHex", func(t *testing.T) {
		s := secret[:len(secret)-8] + "zzzzzzzz"
		if got, want := plantstore.PlausibleToken(s), false; got != want {
			t.Fatalf("PlausibleToken(%q) = %v, want %v", s, got, want)
		}
	})

	for _, tt := range []struct {
		name   string
		secret string
		want   bool
	}{
		{"Supplied32", strings.Repeat("a", 32), true},
		{"Supplied256", strings.Repeat("Z", 256), true},
		{"SuppliedAllVisible", visibleASCII(), true},
		{"ErrSupplied31", strings.Repeat("a", 31), false},
		{"ErrSupplied257", strings.Repeat("a", 257), false},
		{"ErrSuppliedSpace", strings.Repeat("a", 20) + " " + strings.Repeat("a", 20), false},
		{"ErrSuppliedTab", strings.Repeat("a", 20) + "\t" + strings.Repeat("a", 20), false},
		{"ErrSuppliedDEL", strings.Repeat("a", 40) + "\x7f", false},
		{"ErrSuppliedNonASCII", strings.Repeat("a", 40) + "é", false},
		{"ErrSuppliedNUL", strings.Repeat("a", 40) + "\x00", false},
		{"ErrEmpty", "", false},
		{"ErrPrefixedSupplied", "pst_" + strings.Repeat("a", 72), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got, want := plantstore.PlausibleToken(tt.secret), tt.want; got != want {
				t.Fatalf("PlausibleToken(%q) = %v, want %v", tt.secret, got, want)
			}
		})
	}
}

// visibleASCII returns every visible ASCII character, '!' to '~' (94 bytes).
func visibleASCII() string {
	var b strings.Builder
	for c := byte('!'); c <= '~'; c++ {
		b.WriteByte(c)
	}
	return b.String()
}

func TestNewTokenFromSecret(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		secret := strings.Repeat("s3cr3t-", 7) // 49 visible characters
		tok, err := plantstore.NewTokenFromSecret(secret, "admin", nil, now)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := tok.Hash, plantstore.HashToken(secret); !bytes.Equal(got, want) {
			t.Fatalf("Hash = %x, want %x", got, want)
		}
		if got, want := tok.Owner, "admin"; got != want {
			t.Fatalf("Owner = %q, want %q", got, want)
		}
		if diff := cmp.Diff([]string{"plants:read", "plants:write"}, tok.Scopes); diff != "" {
			t.Fatalf("Scopes (-want +got):\n%s", diff)
		}
		if tok.ExpiresAt != nil {
			t.Fatalf("ExpiresAt = %v, want nil", tok.ExpiresAt)
		}
	})

	t.Run("Generated", func(t *testing.T) {
		_, secret, err := plantstore.NewToken("x", nil, 0, now)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := plantstore.NewTokenFromSecret(secret, "admin", []string{"plants:read"}, now)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := tok.Hash, plantstore.HashToken(secret); !bytes.Equal(got, want) {
			t.Fatalf("Hash = %x, want %x", got, want)
		}
		if diff := cmp.Diff([]string{"plants:read"}, tok.Scopes); diff != "" {
			t.Fatalf("Scopes (-want +got):\n%s", diff)
		}
	})

	_, generated, err := plantstore.NewToken("x", nil, 0, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, secret, owner string
		scopes              []string
	}{
		{"ErrTooShort", strings.Repeat("a", 31), "admin", nil},
		{"ErrTooLong", strings.Repeat("a", 257), "admin", nil},
		{"ErrNotVisible", strings.Repeat("a", 31) + " b", "admin", nil},
		{"ErrPrefixedNotGenerated", "pst_" + strings.Repeat("0", 72), "admin", nil},
		{"ErrPrefixedTruncated", generated[:len(generated)-1], "admin", nil},
		{"ErrEmptyOwner", strings.Repeat("a", 40), "", nil},
		{"ErrUnknownScope", strings.Repeat("a", 40), "admin", []string{"root"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tok, err := plantstore.NewTokenFromSecret(tt.secret, tt.owner, tt.scopes, now)
			if got, want := plantstore.ErrorCode(err), plantstore.CodeInvalidBody; got != want {
				t.Fatalf("ErrorCode(%v) = %d, want %d", err, got, want)
			}
			if tok != nil {
				t.Fatalf("got token %+v with an error", tok)
			}
		})
	}
}

func TestHashToken(t *testing.T) {
	a, b := plantstore.HashToken("secret-a"), plantstore.HashToken("secret-b")
	if got, want := len(a), 32; got != want {
		t.Fatalf("len(HashToken) = %d, want %d", got, want)
	}
	if bytes.Equal(a, b) {
		t.Fatalf("HashToken gave %x for two different secrets", a)
	}
	if got, want := plantstore.HashToken("secret-a"), a; !bytes.Equal(got, want) {
		t.Fatalf("HashToken not deterministic: %x then %x", want, got)
	}
}

func TestTokenStatus(t *testing.T) {
	past, future := now.Add(-time.Hour), now.Add(time.Hour)
	for _, tt := range []struct {
		name       string
		expires    *time.Time
		revoked    *time.Time
		wantStatus string
	}{
		{"Active", nil, nil, "active"},
		{"ActiveUntilFuture", &future, nil, "active"},
		{"Expired", &past, nil, "expired"},
		{"ExpiredExactlyNow", &now, nil, "expired"},
		{"Revoked", nil, &past, "revoked"},
		{"RevokedAndExpired", &past, &past, "revoked"},
		{"RevokedNotExpired", &future, &past, "revoked"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tok := &plantstore.Token{ExpiresAt: tt.expires, RevokedAt: tt.revoked}
			if got, want := tok.Status(now), tt.wantStatus; got != want {
				t.Fatalf("Status = %q, want %q", got, want)
			}
			if got, want := tok.Active(now), tt.wantStatus == "active"; got != want {
				t.Fatalf("Active = %v, want %v", got, want)
			}
		})
	}
}

func TestTokenHasScope(t *testing.T) {
	tok := &plantstore.Token{Scopes: []string{plantstore.ScopePlantsRead}}
	if got, want := tok.HasScope(plantstore.ScopePlantsRead), true; got != want {
		t.Fatalf("HasScope(read) = %v, want %v", got, want)
	}
	if got, want := tok.HasScope(plantstore.ScopePlantsWrite), false; got != want {
		t.Fatalf("HasScope(write) = %v, want %v", got, want)
	}
}
