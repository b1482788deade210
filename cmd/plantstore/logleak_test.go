package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/plantstore/plantstore"
)

// TestBootstrapTokenNotLogged: the generated bootstrap token appears on
// stderr exactly once, on its own line, however it is then used (valid,
// altered, in the wrong scheme) with debug logging on; a supplied one
// (--bootstrap-token) never appears.
func TestBootstrapTokenNotLogged(t *testing.T) {
	t.Parallel()
	use := func(t *testing.T, s *server, secret string) {
		for _, tok := range []string{secret, secret + "x", secret[:len(secret)-1] + "0", strings.TrimPrefix(secret, plantstore.TokenPrefix)} {
			do(t, testClient, "POST", s.url+"/plants", tok, `{"id":1,"name":"Fern"}`)
			do(t, testClient, "GET", s.url+"/plants/1", tok, "")
			do(t, testClient, "GET", s.url+"/nope", tok, "")
		}
		if err := s.stop(t); err != nil {
			t.Fatalf("stop: %v", err)
		}
	}
	t.Run("Generated", func(t *testing.T) {
		s := startServer(t, tempDBPath(t), "--log-level", "debug")
		secret := bootstrapSecret(t, s.stderr.String())
		if secret == "" {
			t.Fatalf("no bootstrap token on stderr:\n%s", s.stderr)
		}
		use(t, s, secret)
		stderr := s.stderr.String()
		if !strings.Contains(stderr, `"msg":"request"`) {
			t.Fatalf("no request log lines:\n%s", stderr)
		}
		body := strings.TrimPrefix(secret, plantstore.TokenPrefix)
		for _, part := range []string{secret, body, body[:16], body[len(body)-24 : len(body)-8]} {
			if n := strings.Count(stderr, part); n != 1 {
				t.Errorf("stderr shows %q %d times, want once (the bootstrap line):\n%s", part, n, stderr)
			}
		}
		if !regexp.MustCompile(`(?m)^\s*` + secret + `\s*$`).MatchString(stderr) {
			t.Errorf("the token is not on a line of its own:\n%s", stderr)
		}
	})
	t.Run("Supplied", func(t *testing.T) {
		const secret = "supplied-bootstrap-secret-0123456789abcdef"
		s := startServer(t, tempDBPath(t), "--log-level", "debug", "--bootstrap-token", secret)
		use(t, s, secret)
		if stderr := s.stderr.String(); strings.Contains(stderr, secret) || strings.Contains(stderr, secret[:16]) {
			t.Errorf("stderr shows the supplied token:\n%s", stderr)
		}
	})
}
