package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/cli/cliexit"
)

// TestTokenCreate_ErrOwner: `token create --owner` takes 1-256 bytes of
// printable characters; anything else is refused with a message naming the
// flag, before a database is opened (the error is about the owner even where
// there is no database, and none is created), stores nothing, and prints
// nothing.
func TestTokenCreate_ErrOwner(t *testing.T) {
	t.Parallel()
	existing := tempDBPath(t)
	mustRun(t, "migrate", "--db", existing)
	for _, tt := range []struct {
		name, owner, want string
	}{
		{"Tab", "ali\tce", "printable characters only, not U+0009 (at byte 3)"},
		{"Newline", "alice\ntok_0123456789abcdef  mallory", "printable characters only, not U+000A (at byte 5)"},
		{"NUL", "ali\x00ce", "printable characters only, not U+0000"},
		{"BidiOverride", "alice\u202eecila", "printable characters only, not U+202E"},
		{"TooLong", strings.Repeat("a", 257), "at most 256 bytes, not 257"},
		{"100kB", strings.Repeat("a", 100_000), "at most 256 bytes, not 100000"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			none := filepath.Join(t.TempDir(), "none.db")
			for _, path := range []string{existing, none} {
				r := runCLI(t, nil, "token", "create", "--owner", tt.owner, "--db", path)
				if r.err == nil {
					t.Fatalf("--db %s: no error; stdout %q", path, r.stdout)
				}
				if msg := cliexit.Describe(r.err); !strings.HasPrefix(msg, "--owner: owner must") || !strings.Contains(msg, tt.want) {
					t.Fatalf("--db %s: error %q, want --owner: owner must ... %s", path, msg, tt.want)
				}
				if r.stdout != "" || secretRE.MatchString(r.stderr) {
					t.Fatalf("--db %s: printed: stdout %q, stderr %q", path, r.stdout, r.stderr)
				}
			}
			if _, err := os.Stat(none); !os.IsNotExist(err) {
				t.Fatalf("a database file was created for a refused owner: %v", err)
			}
		})
	}
	tokens, err := openStore(t, existing).ListTokens(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(tokens) != 0 {
		t.Fatalf("%d tokens stored for refused owners", len(tokens))
	}

	t.Run("OK256Bytes", func(t *testing.T) {
		path := tempDBPath(t)
		owner := strings.Repeat("é", 128)
		r := mustRun(t, "token", "create", "--owner", owner, "--db", path)
		if got := storedToken(t, path, strings.TrimSuffix(r.stdout, "\n")).Owner; got != owner {
			t.Fatalf("Owner = %q, want %q", got, owner)
		}
	})
}

// TestTokenList_QuotesBadOwner: an owner name stored before owners were
// checked is quoted in the table, so it cannot forge or hide rows.
func TestTokenList_QuotesBadOwner(t *testing.T) {
	t.Parallel()
	path := tempDBPath(t)
	mustRun(t, "token", "create", "--owner", "alice", "--db", path)
	forged := "eve\ntok_0000000000000000  admin  plants:read,plants:write"
	tok, _, err := plantstore.NewToken("eve", nil, 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	tok.Owner = forged // as an older version stored it
	if err := openStore(t, path).InsertToken(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, "token", "list", "--db", path).stdout
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if got, want := len(lines), 3; got != want {
		t.Fatalf("%d lines, want %d (header and two tokens):\n%s", got, want, out)
	}
	if !strings.Contains(out, `"eve\ntok_0000000000000000  admin  plants:read,plants:write"`) {
		t.Fatalf("the forged owner is not quoted:\n%s", out)
	}
}
