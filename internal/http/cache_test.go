package http_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/api"
	plantstorehttp "github.com/plantstore/plantstore/internal/http"
)

// TestCacheControl: an answer that carries a secret says no-store, every
// other answer to a request whose token was accepted (errors after
// authentication included) says private or no-store, and the public
// answers keep their own caching.
func TestCacheControl(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t)
	admin := ts.Token(t, "alice", plantstore.ScopePlantsRead, plantstore.ScopePlantsWrite,
		plantstore.ScopeWebhooksManage, plantstore.ScopeTokensManage)
	reader := ts.Token(t, "alice", plantstore.ScopePlantsRead)
	if resp := ts.Post(t, admin, `{"id":1,"name":"Fern"}`); resp.Status != 200 {
		t.Fatalf("create plant: %d %s", resp.Status, resp.Body)
	}
	hook := ts.Do(t, Request{Method: "POST", Path: "/webhooks", Token: admin, Body: `{"url":"http://127.0.0.1:9/hook"}`})
	var created struct{ ID string }
	if err := json.Unmarshal(hook.Body, &created); err != nil || hook.Status != 201 {
		t.Fatalf("create webhook: %d %s", hook.Status, hook.Body)
	}
	whk := "/webhooks/" + created.ID
	for _, tt := range []struct {
		name   string
		req    Request
		status int
		want   string
	}{
		// A secret in the answer.
		{"CreateToken", Request{Method: "POST", Path: "/tokens", Token: admin, Body: `{"scopes":["plants:read"]}`}, 201, "no-store"},
		{"CreateWebhook", Request{Method: "POST", Path: "/webhooks", Token: admin, Body: `{"url":"http://127.0.0.1:9/other"}`}, 201, "no-store"},
		{"RotateSecret", Request{Method: "POST", Path: whk + "/rotate-secret", Token: admin}, 200, "no-store"},
		{"CreateTokenRefused", Request{Method: "POST", Path: "/tokens", Token: admin, Body: `{"scopes":["nope"]}`}, 400, "no-store"},
		// Other authenticated answers.
		{"ListPlants", Request{Method: "GET", Path: "/plants", Token: admin}, 200, "private"},
		{"HeadPlants", Request{Method: "HEAD", Path: "/plants", Token: admin}, 200, "private"},
		{"GetPlant", Request{Method: "GET", Path: "/plants/1", Token: admin}, 200, "private"},
		{"AddPlant", Request{Method: "POST", Path: "/plants", Token: admin, Body: `{"id":2,"name":"Moss"}`}, 200, "private"},
		{"PlantNotFound", Request{Method: "GET", Path: "/plants/99", Token: admin}, 404, "private"},
		{"InvalidBody", Request{Method: "POST", Path: "/plants", Token: admin, Body: `{"id":"x"}`}, 400, "private"},
		{"InsufficientScope", Request{Method: "POST", Path: "/plants", Token: reader, Body: `{"id":3,"name":"Ivy"}`}, 403, "private"},
		{"ListTokens", Request{Method: "GET", Path: "/tokens", Token: admin}, 200, "private"},
		{"Me", Request{Method: "GET", Path: "/me", Token: admin}, 200, "private"},
		{"ListWebhooks", Request{Method: "GET", Path: "/webhooks", Token: admin}, 200, "private"},
		{"GetWebhook", Request{Method: "GET", Path: whk, Token: admin}, 200, "private"},
		{"Deliveries", Request{Method: "GET", Path: whk + "/deliveries", Token: admin}, 200, "private"},
		{"ListEvents", Request{Method: "GET", Path: "/events", Token: admin}, 200, "private"},
		{"HeadEventStream", Request{Method: "HEAD", Path: "/events/stream", Token: admin}, 200, "no-store"}, // its own
		// Public answers and refusals before authentication: as they were.
		{"NoToken", Request{Method: "GET", Path: "/plants"}, 401, ""},
		{"OpenAPI", Request{Method: "GET", Path: "/openapi.json"}, 200, ""},
		{"Docs", Request{Method: "GET", Path: "/docs"}, 200, "public, max-age=3600"},
		{"Healthz", Request{Method: "GET", Path: "/healthz"}, 200, "no-store"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp := ts.Do(t, tt.req)
			if resp.Status != tt.status {
				t.Fatalf("status = %d, want %d (body %s)", resp.Status, tt.status, resp.Body)
			}
			if got := strings.Join(resp.Header.Values("Cache-Control"), ", "); got != tt.want {
				t.Fatalf("Cache-Control = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestCacheControl_SecretOperations: the operations whose answers say
// no-store are those of the contract with an answer whose schema has a
// secret member.
func TestCacheControl_SecretOperations(t *testing.T) {
	t.Parallel()
	doc := loadDocument(t, api.JSON)
	var hasSecret func(schema any, depth int) bool
	hasSecret = func(schema any, depth int) bool {
		s := doc.resolve(schema)
		if s == nil || depth > 8 {
			return false
		}
		if props, ok := s["properties"].(map[string]any); ok {
			if _, ok := props["secret"]; ok {
				return true
			}
		}
		for _, sub := range asSlice(s["allOf"]) {
			if hasSecret(sub, depth+1) {
				return true
			}
		}
		return s["items"] != nil && hasSecret(s["items"], depth+1)
	}
	want := map[string]bool{}
	for _, item := range doc.get("paths").(map[string]any) {
		for _, o := range item.(map[string]any) {
			op, ok := o.(map[string]any)
			if !ok || op["operationId"] == nil {
				continue
			}
			responses, _ := op["responses"].(map[string]any)
			for _, r := range responses {
				content, _ := doc.resolve(r)["content"].(map[string]any)
				for _, media := range content {
					if m, ok := media.(map[string]any); ok && hasSecret(m["schema"], 0) {
						want[strings.ToLower(op["operationId"].(string))] = true
					}
				}
			}
		}
	}
	got := map[string]bool{}
	for op := range plantstorehttp.SecretOperations {
		got[strings.ToLower(op)] = true
	}
	if len(want) == 0 {
		t.Fatal("the contract has no answer with a secret member: the check is broken")
	}
	for op := range want {
		if !got[op] {
			t.Errorf("operation %s answers a secret but does not say x-cache-control: no-store", op)
		}
	}
	for op := range got {
		if !want[op] {
			t.Errorf("%s says x-cache-control: no-store, but its answers carry no secret", op)
		}
	}
}
