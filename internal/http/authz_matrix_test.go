package http_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/api"
	plantstorehttp "github.com/plantstore/plantstore/internal/http"
)

// ownerState renders everything owner has in the store: plants,
// subscriptions (with their secrets), delivery attempts and tokens.
func ownerState(t *testing.T, ts *TestServer, owner string) string {
	t.Helper()
	ctx := context.Background()
	plants, _, err := ts.Services.Plants.FindPlants(ctx, plantstore.PlantFilter{Owner: owner, Limit: plantstore.MaxPageSize})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	line := func(kind string, v any) {
		data, err := json.Marshal(v) // follows pointers, unlike %v
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %s\n", kind, data)
	}
	for _, p := range plants {
		line("plant", p)
	}
	subs, _, err := ts.Services.Webhooks.FindSubscriptions(ctx, plantstore.SubscriptionFilter{Owner: owner, Limit: plantstore.MaxPageSize})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range subs {
		line("subscription", s)
		attempts, _, err := ts.Services.Webhooks.FindAttempts(ctx, plantstore.AttemptFilter{Owner: owner, SubscriptionID: s.ID})
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range attempts {
			line("attempt", a)
		}
	}
	tokens, _, err := ts.Services.Tokens.FindOwnerTokens(ctx, plantstore.TokenFilter{Owner: owner, Limit: plantstore.MaxPageSize})
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range tokens {
		line("token", tok)
	}
	return b.String()
}

// contractOperations returns the operationId of every path operation of
// api/openapi.yaml (callbacks are not operations a client calls).
func contractOperations(t *testing.T) []string {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(api.JSON, &doc); err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, item := range doc.Paths {
		for _, raw := range item {
			var op struct {
				OperationID string `json:"operationId"`
			}
			if json.Unmarshal(raw, &op) == nil && op.OperationID != "" {
				ops = append(ops, op.OperationID)
			}
		}
	}
	slices.Sort(ops)
	return ops
}

// TestAuthorizationMatrix is the broken-object-level-authorization matrix:
// for every operation of the contract, (a) another owner's token with every
// scope cannot see or change the owner's objects (404, or a list of its own;
// a create lands in the other owner's own namespace), and (b) the owner's
// token lacking the operation's scope gets 403 40301 (an operation that
// needs no scope, GET /me, answers a token with one scope). Either way the
// owner's state in the store is unchanged afterwards.
func TestAuthorizationMatrix(t *testing.T) {
	t.Parallel()
	// Event streams send a heartbeat soon, after the events they have.
	ts := MustOpenServer(t, func(ts *TestServer) { ts.EventStreamHeartbeat = 20 * time.Millisecond })
	const owner = "alice"
	full := ts.Token(t, owner, plantstore.KnownScopes...)
	hook := decodeWebhook(t, ts.Do(t, Request{Method: "POST", Path: "/webhooks", Token: full,
		Body: `{"url":"http://127.0.0.1:9/hook","description":"alice's"}`}), 201)
	if resp := ts.Post(t, full, `{"id":1,"name":"Fern","tag":"green"}`); resp.Status != 200 {
		t.Fatalf("seed plant: %d %s", resp.Status, resp.Body)
	}
	wh := "/webhooks/" + hook.ID
	victim, _, err := ts.Services.Tokens.CreateToken(context.Background(), plantstore.TokenRequest{Owner: owner, Scopes: []string{plantstore.ScopePlantsRead}})
	if err != nil {
		t.Fatal(err)
	}
	tk := "/tokens/" + victim.ID

	// cross is what another owner (every scope) gets for the owner's objects.
	const (
		notFound  = "404"     // the object is hidden
		emptyList = "[]"      // the list is the other owner's own: empty
		ownSpace  = "created" // a create succeeds in the other owner's namespace
		// HEAD answers carry no body: only the status tells.
		headNotFound = "HEAD 404" // the object is hidden
		headOwnList  = "HEAD 200" // the list is the other owner's own: no Link
		ownStream    = "stream"   // the stream is the other owner's own: a heartbeat before any event
		ownTokens    = "tokens"   // the list is the other owner's own: none of the owner's tokens
		ownMe        = "me"       // the other owner's own identity
	)
	tests := []struct {
		op      string // operationId in api/openapi.yaml
		req     Request
		cross   string
		code    int32 // with notFound
		created int   // with ownSpace: the status of a create
	}{
		{"addPlant", Request{Method: "POST", Path: "/plants", Body: `{"id":1,"name":"Intruder"}`}, ownSpace, 0, 200},
		{"addPlants", Request{Method: "POST", Path: "/plants/batch", Body: `{"plants":[{"id":1,"name":"Intruder"}]}`}, ownSpace, 0, 200},
		{"listPlants", Request{Method: "GET", Path: "/plants?tag=green"}, emptyList, 0, 0},
		{"getPlant", Request{Method: "GET", Path: "/plants/1"}, notFound, plantstore.CodeNotFound, 0},
		{"deletePlant", Request{Method: "DELETE", Path: "/plants/1"}, notFound, plantstore.CodeNotFound, 0},
		{"updatePlant", Request{Method: "PATCH", Path: "/plants/1", Body: `{"name":"Intruder","tag":null}`}, notFound, plantstore.CodeNotFound, 0},
		{"headPlants", Request{Method: "HEAD", Path: "/plants?tag=green&limit=1"}, headOwnList, 0, 0},
		{"headPlant", Request{Method: "HEAD", Path: "/plants/1"}, headNotFound, 0, 0},
		{"createWebhook", Request{Method: "POST", Path: "/webhooks", Body: `{"url":"http://127.0.0.1:9/hook"}`}, ownSpace, 0, 201},
		{"listWebhooks", Request{Method: "GET", Path: "/webhooks"}, emptyList, 0, 0},
		{"getWebhook", Request{Method: "GET", Path: wh}, notFound, plantstore.CodeWebhookNotFound, 0},
		{"deleteWebhook", Request{Method: "DELETE", Path: wh}, notFound, plantstore.CodeWebhookNotFound, 0},
		{"rotateWebhookSecret", Request{Method: "POST", Path: wh + "/rotate-secret"}, notFound, plantstore.CodeWebhookNotFound, 0},
		{"listWebhookDeliveries", Request{Method: "GET", Path: wh + "/deliveries"}, notFound, plantstore.CodeWebhookNotFound, 0},
		{"headWebhooks", Request{Method: "HEAD", Path: "/webhooks?limit=1"}, headOwnList, 0, 0},
		{"headWebhook", Request{Method: "HEAD", Path: wh}, headNotFound, 0, 0},
		{"headWebhookDeliveries", Request{Method: "HEAD", Path: wh + "/deliveries"}, headNotFound, 0, 0},
		{"updateWebhook", Request{Method: "PATCH", Path: wh, Body: `{"url":"http://127.0.0.1:9/intruder","enabled":false}`}, notFound, plantstore.CodeWebhookNotFound, 0},
		{"resendWebhookDelivery", Request{Method: "POST", Path: wh + "/deliveries/msg_000000000000000000000000/resend"}, notFound, plantstore.CodeWebhookNotFound, 0},
		{"recoverWebhook", Request{Method: "POST", Path: wh + "/recover", Body: `{"since":"2000-01-01T00:00:00Z"}`}, notFound, plantstore.CodeWebhookNotFound, 0},
		{"pingWebhook", Request{Method: "POST", Path: wh + "/ping"}, notFound, plantstore.CodeWebhookNotFound, 0},
		{"listEvents", Request{Method: "GET", Path: "/events"}, emptyList, 0, 0},
		{"headEvents", Request{Method: "HEAD", Path: "/events?limit=1"}, headOwnList, 0, 0},
		{"streamEvents", Request{Method: "GET", Path: "/events/stream"}, ownStream, 0, 0},
		{"headEventsStream", Request{Method: "HEAD", Path: "/events/stream"}, headOwnList, 0, 0},
		{"listTokens", Request{Method: "GET", Path: "/tokens"}, ownTokens, 0, 0},
		{"headTokens", Request{Method: "HEAD", Path: "/tokens?limit=1"}, headOwnList, 0, 0},
		{"createToken", Request{Method: "POST", Path: "/tokens", Body: `{"scopes":["plants:read"],"ttl":60}`}, ownSpace, 0, 201},
		{"getToken", Request{Method: "GET", Path: tk}, notFound, plantstore.CodeTokenNotFound, 0},
		{"headToken", Request{Method: "HEAD", Path: tk}, headNotFound, 0, 0},
		{"revokeToken", Request{Method: "DELETE", Path: tk}, notFound, plantstore.CodeTokenNotFound, 0},
		{"getMe", Request{Method: "GET", Path: "/me"}, ownMe, 0, 0},
		{"headMe", Request{Method: "HEAD", Path: "/me"}, headOwnList, 0, 0},
	}

	t.Run("EveryOperationCovered", func(t *testing.T) {
		var covered []string
		for _, tt := range tests {
			covered = append(covered, tt.op)
		}
		slices.Sort(covered)
		if diff := cmp.Diff(contractOperations(t), covered); diff != "" {
			t.Errorf("operations of api/openapi.yaml vs this table (-contract +table):\n%s", diff)
		}
		for name := range plantstorehttp.OperationScopes {
			if !slices.ContainsFunc(covered, func(op string) bool { return strings.EqualFold(op, name) }) {
				t.Errorf("operation %s of the scope table has no row", name)
			}
		}
	})

	// The owner's tokens of the MissingScope rows, made before the state
	// every row must leave unchanged.
	lacking := map[string]string{}
	for _, tt := range tests {
		scopes := []string{plantstore.ScopePlantsRead} // an operation without scope: any token
		if scope := scopeOf(tt.op); scope != "" {
			scopes = slices.DeleteFunc(slices.Clone(plantstore.KnownScopes), func(s string) bool { return s == scope })
		}
		lacking[tt.op] = ts.Token(t, owner, scopes...)
	}

	before := ownerState(t, ts, owner)
	if !strings.Contains(before, "plant ") || !strings.Contains(before, "subscription ") || !strings.Contains(before, victim.ID) {
		t.Fatalf("seed state incomplete:\n%s", before)
	}
	unchanged := func(t *testing.T) {
		t.Helper()
		if diff := cmp.Diff(before, ownerState(t, ts, owner)); diff != "" {
			t.Fatalf("the owner's state changed (-before +after):\n%s", diff)
		}
	}

	for _, tt := range tests {
		scope, found := "", false
		for name, s := range plantstorehttp.OperationScopes {
			if strings.EqualFold(name, tt.op) {
				scope, found = s, true
			}
		}
		t.Run(tt.op+"/OtherOwner", func(t *testing.T) {
			// A fresh owner per row, so one row's create cannot make
			// another row's object exist in the intruder's namespace.
			r := tt.req
			r.Token = ts.Token(t, "mallory-"+tt.op, plantstore.KnownScopes...)
			intruderBefore := ownerState(t, ts, "mallory-"+tt.op)
			if tt.cross == ownStream {
				// The stream does not end: read up to its first heartbeat,
				// which comes after every event the intruder may see.
				resp, s := openStream(t, ts, r.Token, r.Path, nil)
				if s == nil {
					t.Fatalf("%d %s, want 200 and a stream", resp.Status, resp.Body)
				}
				if f := s.next(t); f.Comment != "heartbeat" {
					t.Fatalf("first frame %+v, want a heartbeat (the intruder has no event)", f)
				}
				unchanged(t)
				return
			}
			resp := ts.Do(t, r)
			switch tt.cross {
			case notFound:
				mustError(t, resp, 404, tt.code)
			case emptyList:
				if resp.Status != 200 || string(resp.Body) != "[]" {
					t.Fatalf("%d %s, want 200 []", resp.Status, resp.Body)
				}
			case ownTokens:
				var items []struct {
					ID string `json:"id"`
				}
				if resp.Status != 200 || json.Unmarshal(resp.Body, &items) != nil || len(items) != 1 {
					t.Fatalf("%d %s, want 200 and the intruder's one token", resp.Status, resp.Body)
				}
				if strings.Contains(before, items[0].ID) {
					t.Fatalf("the intruder's list has the owner's token %s", items[0].ID)
				}
			case ownMe:
				var me struct {
					Owner string `json:"owner"`
				}
				if resp.Status != 200 || json.Unmarshal(resp.Body, &me) != nil || me.Owner != "mallory-"+tt.op {
					t.Fatalf("%d %s, want 200 and the intruder's own owner", resp.Status, resp.Body)
				}
			case headNotFound:
				mustHead(t, resp, 404)
			case headOwnList:
				mustHead(t, resp, 200)
				if link := resp.Header.Get("Link"); link != "" {
					t.Fatalf("Link = %q: the intruder's list has a next page", link)
				}
			case ownSpace:
				if resp.Status != tt.created {
					t.Fatalf("%d %s, want %d", resp.Status, resp.Body, tt.created)
				}
				if got := ownerState(t, ts, "mallory-"+tt.op); got == intruderBefore {
					t.Fatal("the create stored nothing in the intruder's namespace")
				}
			}
			unchanged(t)
		})
		t.Run(tt.op+"/MissingScope", func(t *testing.T) {
			if !found {
				t.Fatalf("no scope for %s", tt.op)
			}
			r := tt.req
			r.Token = lacking[tt.op]
			resp := ts.Do(t, r)
			if scope == "" {
				// Any valid token, whatever its scopes.
				if resp.Status != 200 {
					t.Fatalf("%s with a token of one scope: %d %s, want 200", tt.op, resp.Status, resp.Body)
				}
				unchanged(t)
				return
			}
			if r.Method == "HEAD" {
				mustHead(t, resp, 403)
			} else {
				mustError(t, resp, 403, plantstore.CodeInsufficientScope)
			}
			if got := resp.Header.Get("WWW-Authenticate"); !strings.Contains(got, `scope="`+scope+`"`) {
				t.Fatalf("WWW-Authenticate = %q, want the %s scope", got, scope)
			}
			unchanged(t)
		})
	}

	t.Run("OwnerStillSeesEverything", func(t *testing.T) {
		got := ts.Get(t, full, "/plants/1")
		if want := `{"id":1,"name":"Fern","tag":"green"}`; withoutTimes(t, got.Body) != want {
			t.Fatalf("plant = %s, want %s with its times", got.Body, want)
		}
		decodeWebhook(t, ts.Get(t, full, wh), 200)
	})
}

// mustHead checks that resp, the answer to a HEAD, has status and no body.
func mustHead(tb testing.TB, resp *Response, status int) {
	tb.Helper()
	if resp.Status != status || len(resp.Body) != 0 {
		tb.Fatalf("HEAD: %d %q, want %d and no body", resp.Status, resp.Body, status)
	}
}
