package oidc_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/oidc"
	"github.com/plantstore/plantstore/internal/testkit/oidctest"
)

// The verifier's behaviour behind a bearer header (owners, scopes, refusals,
// key rotation, the 401s) is tested through the server in internal/http/jwt_test.go;
// these tests cover what needs no server: the configuration's checks and the
// shape of Verify's answers, which the transport relies on.

// TestVerify: a valid JWT is the token the transport expects (IsJWT, the
// owner in the issuer's namespace, ExpiresAt its exp plus the leeway); a
// refusal is an error whose text is the detail and which wraps the 401's
// CodeTokenInvalid error, whose message never holds the token.
func TestVerify(t *testing.T) {
	key := oidctest.NewECKey(t, "k1")
	iss := oidctest.NewIssuer(t, key)
	v, err := oidc.NewVerifier(context.Background(), oidc.Config{OIDCIssuer: iss.URL, Audience: "api"})
	if err != nil {
		t.Fatal(err)
	}
	exp := time.Now().Add(5 * time.Minute).Truncate(time.Second)
	claims := map[string]any{"iss": iss.URL, "sub": "carol", "aud": "api", "exp": exp.Unix(), "scope": "plants:read"}
	raw := key.Sign(t, claims)
	if !plantstore.LooksLikeJWT(raw) {
		t.Fatalf("LooksLikeJWT(a signed JWT) = false")
	}
	tok, err := v.Verify(context.Background(), raw)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tok.Owner, oidc.DefaultOwnerPrefix(iss.URL)+"carol"; got != want {
		t.Errorf("owner = %q, want %q", got, want)
	}
	if !tok.IsJWT() || tok.ID != plantstore.JWTTokenIDPrefix+iss.URL+"#carol" {
		t.Errorf("ID = %q, want a JWT token's", tok.ID)
	}
	if tok.ExpiresAt == nil || !tok.ExpiresAt.Equal(exp.Add(plantstore.JWTLeeway)) {
		t.Errorf("ExpiresAt = %v, want %v", tok.ExpiresAt, exp.Add(plantstore.JWTLeeway))
	}
	if got, want := strings.Join(tok.Scopes, " "), "plants:read"; got != want {
		t.Errorf("scopes = %q, want %q", got, want)
	}

	claims["aud"] = "other-api"
	raw = key.Sign(t, claims)
	_, err = v.Verify(context.Background(), raw)
	var pe *plantstore.Error
	if !errors.As(err, &pe) || pe.Code != plantstore.CodeTokenInvalid {
		t.Fatalf("err = %v, want one wrapping a CodeTokenInvalid error", err)
	}
	if want := "the bearer token is not valid: wrong audience"; pe.Message != want {
		t.Errorf("message = %q, want %q", pe.Message, want)
	}
	if err.Error() == pe.Error() || !strings.Contains(err.Error(), "audience") {
		t.Errorf("detail = %q, want go-oidc's refusal", err.Error())
	}
	if strings.Contains(err.Error(), raw) || strings.Contains(pe.Error(), raw) {
		t.Error("the refusal holds the token")
	}
}

func TestNewVerifier_Errors(t *testing.T) {
	key := oidctest.NewECKey(t, "k1")
	iss := oidctest.NewIssuer(t, key)
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	empty := filepath.Join(t.TempDir(), "empty.json")
	if err := os.WriteFile(empty, []byte(`{"keys":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cfg  oidc.Config
		want string
	}{
		{"Neither", oidc.Config{Audience: "a"}, "exactly one"},
		{"Both", oidc.Config{OIDCIssuer: iss.URL, JWKSFile: empty, Audience: "a"}, "exactly one"},
		{"NoAudience", oidc.Config{OIDCIssuer: iss.URL}, "audience"},
		{"FileNoIssuer", oidc.Config{JWKSFile: empty, Audience: "a"}, "issuer"},
		{"FileMissing", oidc.Config{JWKSFile: filepath.Join(t.TempDir(), "nope"), Issuer: "x", Audience: "a"}, "no such file"},
		{"FileNoKeys", oidc.Config{JWKSFile: empty, Issuer: "x", Audience: "a"}, "no usable signing key"},
		{"NotURL", oidc.Config{OIDCIssuer: "idp.example", Audience: "a"}, "not an absolute"},
		{"IssuerMismatch", oidc.Config{OIDCIssuer: iss.URL + "/", Audience: "a"}, "did not match"},
		{"Down", oidc.Config{OIDCIssuer: down.URL, Audience: "a"}, "discovery"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := oidc.NewVerifier(context.Background(), tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
	// The owner prefix is checked before any key is loaded.
	longIssuer := "https://idp.example.com/" + strings.Repeat("t", oidc.MaxOwnerPrefixBytes)
	for _, tt := range []struct {
		name string
		cfg  oidc.Config
		want string
	}{
		{"PrefixAndShared", oidc.Config{OIDCIssuer: iss.URL, Audience: "a", OwnerPrefix: "idp:", SharedOwners: true}, "exclude each other"},
		{"PrefixTooLong", oidc.Config{OIDCIssuer: iss.URL, Audience: "a", OwnerPrefix: strings.Repeat("p", oidc.MaxOwnerPrefixBytes+1)}, "more than 192"},
		{"PrefixNotPrintable", oidc.Config{OIDCIssuer: iss.URL, Audience: "a", OwnerPrefix: "idp\n"}, "not printable"},
		{"IssuerTooLongForDefaultPrefix", oidc.Config{JWKSFile: empty, Issuer: longIssuer, Audience: "a"}, "choose a shorter one"},
		{"OIDCIssuerTooLongForDefaultPrefix", oidc.Config{OIDCIssuer: down.URL + "/" + strings.Repeat("t", 200), Audience: "a"}, "choose a shorter one"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := oidc.NewVerifier(context.Background(), tt.cfg)
			if !errors.Is(err, oidc.ErrOwnerPrefix) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrOwnerPrefix containing %q", err, tt.want)
			}
		})
	}
	// A long issuer is fine with a short prefix, or with shared owners.
	for _, cfg := range []oidc.Config{
		{JWKSFile: empty, Issuer: longIssuer, Audience: "a", OwnerPrefix: "idp:"},
		{JWKSFile: empty, Issuer: longIssuer, Audience: "a", SharedOwners: true},
	} {
		if _, err := oidc.NewVerifier(context.Background(), cfg); errors.Is(err, oidc.ErrOwnerPrefix) {
			t.Errorf("%+v: %v", cfg, err)
		}
	}
	t.Run("Hanging", func(t *testing.T) {
		hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
		}))
		defer hang.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := oidc.NewVerifier(ctx, oidc.Config{OIDCIssuer: hang.URL, Audience: "a"})
		if err == nil || time.Since(start) > 5*time.Second {
			t.Fatalf("err = %v after %s, want a quick error", err, time.Since(start))
		}
	})
}
