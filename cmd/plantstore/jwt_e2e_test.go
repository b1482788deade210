package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/testkit/oidctest"
)

// jwtIssuer is an offline JWT issuer for `serve --jwt-jwks-file`.
type jwtIssuer struct {
	iss  string
	key  *oidctest.Key // Ed25519
	jwks string        // the path of its JWKS file
}

func newJWTIssuer(t *testing.T) *jwtIssuer {
	t.Helper()
	key := oidctest.NewEdKey(t, "e2e")
	return &jwtIssuer{iss: "https://idp.example.test/realms/main", key: key, jwks: oidctest.WriteJWKS(t, key.JWK())}
}

// flags are serve's flags that accept this issuer's JWTs.
func (i *jwtIssuer) flags(extra ...string) []string {
	return append([]string{"--jwt-jwks-file", i.jwks, "--jwt-issuer", i.iss, "--jwt-audience", "plantstore"}, extra...)
}

// sign makes a JWT for sub with every scope, valid for five minutes.
func (i *jwtIssuer) sign(t *testing.T, sub string) string {
	t.Helper()
	return i.signUntil(t, sub, time.Now().Add(5*time.Minute))
}

// signUntil makes a JWT for sub with every scope whose exp is exp (in whole
// seconds; the server allows JWTLeeway past it).
func (i *jwtIssuer) signUntil(t *testing.T, sub string, exp time.Time) string {
	t.Helper()
	return i.key.Sign(t, oidctest.Claims(i.iss, sub, map[string]any{
		"aud": "plantstore", "iat": exp.Add(-5 * time.Minute).Unix(), "exp": exp.Unix(),
		"scope": "plants:read plants:write webhooks:manage",
	}))
}

// TestJWTOwners runs the binary: by default a JWT whose sub is admin is not
// owner admin (it sees none of admin's plants and cannot rotate admin's
// webhook secret); with --jwt-shared-owners it is.
func TestJWTOwners(t *testing.T) {
	t.Parallel()
	iss := newJWTIssuer(t)
	for _, tt := range []struct {
		name   string
		flags  []string
		shared bool
	}{
		{"Default", nil, false},
		{"SharedOwners", []string{"--jwt-shared-owners"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			db := tempDBPath(t)
			runBinary(t, "migrate", "--db", db) // creates the database: serve need not
			// --webhook-allow-private: the subscription below is to loopback.
			args := append([]string{"--no-bootstrap-admin", "--rate-limit", "0", "--webhook-allow-private"}, iss.flags(tt.flags...)...)
			s := startServer(t, db, args...)
			admin := webhookToken(t, db, "admin")
			if status, _, body := do(t, testClient, "POST", s.url+"/plants", admin, `{"id":1,"name":"Admin's Fern"}`); status != http.StatusOK {
				t.Fatalf("admin's create: %d %s", status, body)
			}
			hookID, _ := subscribe(t, s, admin, "http://127.0.0.1:9/hook")
			jwt := iss.sign(t, "admin")

			_, _, list := do(t, testClient, "GET", s.url+"/plants", jwt, "")
			rotate, _, _ := do(t, testClient, "POST", s.url+"/webhooks/"+hookID+"/rotate-secret", jwt, "")
			get, _, _ := do(t, testClient, "GET", s.url+"/plants/1", jwt, "")
			if tt.shared {
				if !strings.Contains(string(list), "Admin's Fern") || rotate != http.StatusOK || get != http.StatusOK {
					t.Fatalf("shared owners: list %s, rotate %d, get %d; want admin's plant, 200, 200", list, rotate, get)
				}
				return
			}
			if string(list) != "[]" || rotate != http.StatusNotFound || get != http.StatusNotFound {
				t.Fatalf("namespaced owners: list %s, rotate %d, get %d; want [], 404, 404", list, rotate, get)
			}
		})
	}
}

// TestJWTOwnerFlags: the owner flags need JWTs on, exclude each other, and a
// prefix that leaves too little room for the claim stops the start.
func TestJWTOwnerFlags(t *testing.T) {
	t.Parallel()
	iss := newJWTIssuer(t)
	for _, tt := range []struct {
		name string
		env  map[string]string
		args []string
		want []string
	}{
		{"PrefixWithoutJWT", nil, []string{"--jwt-owner-prefix", "idp:"}, []string{"--jwt-owner-prefix", "PLANTSTORE_JWT_OWNER_PREFIX", "needs --oidc-issuer"}},
		{"SharedWithoutJWT", map[string]string{"PLANTSTORE_JWT_SHARED_OWNERS": "true"}, nil, []string{"--jwt-shared-owners", "PLANTSTORE_JWT_SHARED_OWNERS", "needs --oidc-issuer"}},
		{"PrefixAndShared", nil, iss.flags("--jwt-owner-prefix", "idp:", "--jwt-shared-owners"), []string{"--jwt-shared-owners", "exclude each other"}},
		{"PrefixTooLong", nil, iss.flags("--jwt-owner-prefix", strings.Repeat("p", 193)), []string{"--jwt-owner-prefix", "more than 192"}},
		{"IssuerTooLong", nil, []string{"--jwt-jwks-file", iss.jwks, "--jwt-issuer", "https://idp.example.test/" + strings.Repeat("t", 190), "--jwt-audience", "a"},
			[]string{"--jwt-owner-prefix", "choose a shorter one"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := tempDBPath(t)
			r := runCLI(t, tt.env, append([]string{"serve", "--addr", "127.0.0.1:0", "--db", path, "--no-bootstrap-admin"}, tt.args...)...)
			if r.err == nil {
				t.Fatal("no error")
			}
			msg := r.err.Error() + "\n" + r.stderr
			for _, want := range tt.want {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q lacks %q", msg, want)
				}
			}
		})
	}
}
