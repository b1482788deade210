package plantstore_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
)

// FuzzToken checks the token parser on any string: PlausibleToken never
// panics; a string it accepts is either the issued format (prefix, exact
// length, right checksum) or 32..256 visible ASCII without the prefix;
// NewTokenFromSecret accepts exactly those and stores HashToken, 32 bytes.
// It also builds an issued-format secret from the input and checks that it
// is accepted and that changing any one character after the prefix is not.
func FuzzToken(f *testing.F) {
	_, issued, err := plantstore.NewToken("fuzz", nil, 0, time.Now())
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		issued,
		strings.ToUpper(issued),
		issued[:len(issued)-1],
		issued + "0",
		"pst_" + strings.Repeat("0", 72),
		strings.Repeat("x", 31),
		strings.Repeat("x", 32),
		strings.Repeat("~", 256),
		strings.Repeat("x", 257),
		"fuzz secret with a space in it 0123",
		"pst_",
		"",
		"\x00\xff" + strings.Repeat("a", 40),
	} {
		f.Add(s, uint(5), byte('f'))
	}
	issuedLen := len(issued)
	f.Fuzz(func(t *testing.T, s string, pos uint, b byte) {
		ok := plantstore.PlausibleToken(s)
		if ok {
			if rest, found := strings.CutPrefix(s, plantstore.TokenPrefix); found {
				if len(s) != issuedLen {
					t.Fatalf("accepted %q: length %d, issued tokens have %d", s, len(s), issuedLen)
				}
				random, sum := rest[:len(rest)-8], rest[len(rest)-8:]
				if want := fmt.Sprintf("%08x", crc32.ChecksumIEEE([]byte(random))); sum != want {
					t.Fatalf("accepted %q: checksum %q, want %q", s, sum, want)
				}
			} else {
				if len(s) < plantstore.MinSuppliedTokenLen || len(s) > plantstore.MaxSuppliedTokenLen {
					t.Fatalf("accepted %q of length %d", s, len(s))
				}
				for _, c := range []byte(s) {
					if c <= ' ' || c > '~' {
						t.Fatalf("accepted %q with byte %#x", s, c)
					}
				}
			}
		}
		h := plantstore.HashToken(s)
		if sum := sha256.Sum256([]byte(s)); len(h) != 32 || !bytes.Equal(h, sum[:]) {
			t.Fatalf("HashToken(%q) = %x", s, h)
		}
		tok, err := plantstore.NewTokenFromSecret(s, "owner", nil, time.Now())
		if (err == nil) != ok {
			t.Fatalf("NewTokenFromSecret(%q): err %v, but PlausibleToken %v", s, err, ok)
		}
		if err == nil && !bytes.Equal(tok.Hash, h) {
			t.Fatalf("NewTokenFromSecret(%q) stores hash %x, want %x", s, tok.Hash, h)
		}

		// An issued-format secret made from s, and every one-character change.
		sum := sha256.Sum256([]byte(s))
		random := hex.EncodeToString(sum[:])
		secret := plantstore.TokenPrefix + random + fmt.Sprintf("%08x", crc32.ChecksumIEEE([]byte(random)))
		if len(secret) != issuedLen || !plantstore.PlausibleToken(secret) {
			t.Fatalf("issued-format %q refused", secret)
		}
		i := len(plantstore.TokenPrefix) + int(pos%uint(len(secret)-len(plantstore.TokenPrefix)))
		if secret[i] != b {
			changed := secret[:i] + string([]byte{b}) + secret[i+1:]
			if plantstore.PlausibleToken(changed) {
				t.Fatalf("%q (one byte changed from %q) accepted", changed, secret)
			}
		}
	})
}
