package client_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/client"
)

// TestTokens: create (the secret once), use, get, list (pages and the
// iterator), revoke, and Me, over a real server.
func TestTokens(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	ctx := context.Background()
	adminID, adminSecret := ts.tokenWithID(t, "alice", plantstore.KnownScopes...)
	admin := ts.client(t, adminSecret)

	created, err := admin.CreateToken(ctx, client.NewToken{Scopes: []string{plantstore.ScopePlantsRead}, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(created.ID, "tok_") || !strings.HasPrefix(created.Secret, plantstore.TokenPrefix) {
		t.Fatalf("created %+v: want a tok_ id and a pst_ secret", created)
	}
	want := client.Token{ID: created.ID, Scopes: []string{plantstore.ScopePlantsRead}, CreatedAt: created.CreatedAt,
		ExpiresAt: ptr(created.CreatedAt.Add(time.Hour)), Last4: ptr(created.Secret[len(created.Secret)-4:]), Status: "active"}
	if diff := cmp.Diff(want, *created, cmpopts.IgnoreFields(client.Token{}, "Secret")); diff != "" {
		t.Fatalf("created (-want +got):\n%s", diff)
	}

	// The new token works, and knows who it is.
	minted := ts.client(t, created.Secret)
	if _, err := minted.ListPlants(ctx, client.ListPlantsOptions{}); err != nil {
		t.Fatalf("list plants with the new token: %v", err)
	}
	me, err := minted.Me(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantMe := client.Me{Owner: "alice", Kind: "token", TokenID: created.ID, Scopes: []string{plantstore.ScopePlantsRead}, ExpiresAt: want.ExpiresAt}
	if diff := cmp.Diff(wantMe, *me); diff != "" {
		t.Fatalf("Me (-want +got):\n%s", diff)
	}
	if me, err := admin.Me(ctx); err != nil || me.ExpiresAt != nil || me.TokenID != adminID {
		t.Fatalf("Me of the admin token: %+v, %v; want its id and no expiry", me, err)
	}
	if _, err := minted.HeadMe(ctx); err != nil {
		t.Fatal(err)
	}

	got, err := admin.GetToken(ctx, created.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, *got); diff != "" {
		t.Fatalf("GetToken (-want +got), no secret:\n%s", diff)
	}
	if _, err := admin.HeadToken(ctx, created.ID); err != nil {
		t.Fatal(err)
	}

	// Pages of two, oldest first: the admin token, the created one, then
	// three more.
	ids := []string{adminID, created.ID}
	for range 3 {
		tok, err := admin.CreateToken(ctx, client.NewToken{Scopes: []string{plantstore.ScopePlantsWrite}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tok.ID)
	}
	var listed []string
	for tok, err := range admin.Tokens(ctx, client.ListTokensOptions{Limit: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		if tok.Secret != "" {
			t.Fatalf("a listed token has its secret: %+v", tok)
		}
		listed = append(listed, tok.ID)
	}
	if !slices.Equal(listed, ids) {
		t.Fatalf("Tokens = %v, want %v", listed, ids)
	}
	page, err := admin.ListTokens(ctx, client.ListTokensOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Tokens) != 2 || page.Next == nil || page.Next.After != ids[1] || page.Next.Limit != 2 {
		t.Fatalf("first page %+v, next %+v; want 2 tokens, next after %s", page.Tokens, page.Next, ids[1])
	}
	h, err := admin.HeadTokens(ctx, client.ListTokensOptions{Limit: 2})
	if err != nil || !strings.Contains(h.Link, "after="+ids[1]) {
		t.Fatalf("HeadTokens: %+v, %v; want the next page's Link", h, err)
	}

	// Revoke: the token stops working; again, the same answer.
	revoked, err := admin.RevokeToken(ctx, created.ID)
	if err != nil {
		t.Fatal(err)
	}
	if revoked.Status != "revoked" || revoked.RevokedAt == nil {
		t.Fatalf("revoked %+v", revoked)
	}
	again, err := admin.RevokeToken(ctx, created.ID)
	if err != nil || !again.RevokedAt.Equal(*revoked.RevokedAt) {
		t.Fatalf("second revoke: %+v, %v; want revoked_at %v", again, err, revoked.RevokedAt)
	}
	_, err = minted.ListPlants(ctx, client.ListPlantsOptions{})
	if e := apiError(t, err); e.Status != http.StatusUnauthorized || e.Code != plantstore.CodeTokenInvalid {
		t.Fatalf("the revoked token: %v, want 401 40102", err)
	}
}

// TestTokenErrors: the typed errors of the token operations.
func TestTokenErrors(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	ctx := context.Background()
	reader := ts.client(t, ts.token(t, "alice", plantstore.ScopePlantsRead, plantstore.ScopeTokensManage))
	noManage := ts.client(t, ts.token(t, "alice", plantstore.ScopePlantsRead))
	bobID, _ := ts.tokenWithID(t, "bob", plantstore.ScopePlantsRead)

	for _, tt := range []struct {
		name   string
		call   func() error
		status int
		code   int32
	}{
		{"ScopeNotHeld", func() error {
			_, err := reader.CreateToken(ctx, client.NewToken{Scopes: []string{plantstore.ScopePlantsWrite}})
			return err
		}, 403, plantstore.CodeInsufficientScope},
		{"UnknownScope", func() error {
			_, err := reader.CreateToken(ctx, client.NewToken{Scopes: []string{"plants:eat"}})
			return err
		}, 400, plantstore.CodeInvalidBody},
		{"PastHundredYears", func() error {
			_, err := reader.CreateToken(ctx, client.NewToken{Scopes: []string{plantstore.ScopePlantsRead}, TTL: plantstore.MaxTokenTTL + time.Second})
			return err
		}, 400, plantstore.CodeInvalidBody},
		{"NoTokensManage", func() error {
			_, err := noManage.ListTokens(ctx, client.ListTokensOptions{})
			return err
		}, 403, plantstore.CodeInsufficientScope},
		{"AnotherOwnersToken", func() error {
			_, err := reader.GetToken(ctx, bobID)
			return err
		}, 404, plantstore.CodeTokenNotFound},
		{"RevokeAnotherOwnersToken", func() error {
			_, err := reader.RevokeToken(ctx, bobID)
			return err
		}, 404, plantstore.CodeTokenNotFound},
		{"AfterAnotherOwnersToken", func() error {
			_, err := reader.ListTokens(ctx, client.ListTokensOptions{After: bobID})
			return err
		}, 400, plantstore.CodeInvalidQuery},
		{"MalformedID", func() error {
			_, err := reader.GetToken(ctx, "tok_nope")
			return err
		}, 400, plantstore.CodeInvalidPath},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := apiError(t, tt.call())
			if e.Status != tt.status || e.Code != tt.code {
				t.Fatalf("%v: want HTTP %d, error %d", e, tt.status, tt.code)
			}
		})
	}

	t.Run("HeadTokenNotFound", func(t *testing.T) {
		_, err := reader.HeadToken(ctx, bobID)
		if e := apiError(t, err); e.Status != http.StatusNotFound {
			t.Fatalf("%v, want status 404", err)
		}
	})
	t.Run("TTLNotWholeSeconds", func(t *testing.T) {
		_, err := reader.CreateToken(ctx, client.NewToken{Scopes: []string{plantstore.ScopePlantsRead}, TTL: 1500 * time.Millisecond})
		var e *client.Error
		if err == nil || errors.As(err, &e) {
			t.Fatalf("%v, want a client-side error (nothing sent)", err)
		}
	})
	t.Run("MeWithoutToken", func(t *testing.T) {
		_, err := ts.client(t, "pst_unknown").Me(ctx)
		if e := apiError(t, err); e.Status != http.StatusUnauthorized || e.Code != plantstore.CodeTokenInvalid {
			t.Fatalf("%v, want 401 40102", err)
		}
	})
}
