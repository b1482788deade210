package http_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
)

// TestErrorMessages: a body the generated decoder refuses is explained with
// the operation's own schema and the field at fault, read from the
// contract; parameters and content types get their own messages.
func TestErrorMessages(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t)
	tok := ts.Token(t, "alice", plantstore.KnownScopes...)
	const int64Range = "must be an integer from -9223372036854775808 to 9223372036854775807 (int64)"
	for _, tt := range []struct {
		name   string
		req    Request
		status int
		code   int32
		msg    string
	}{
		{"WebhookURLNumber", Request{Method: "POST", Path: "/webhooks", Body: `{"url":5}`}, 400, 40002, "invalid NewWebhook: url: must be a string"},
		{"WebhookURLMissing", Request{Method: "POST", Path: "/webhooks", Body: `{}`}, 400, 40002, "invalid NewWebhook: url: required"},
		{"WebhookDescriptionNumber", Request{Method: "POST", Path: "/webhooks", Body: `{"url":"http://127.0.0.1:9/h","description":7}`},
			400, 40002, "invalid NewWebhook: description: must be a string (leave it out for no description)"},
		{"WebhookNotObject", Request{Method: "POST", Path: "/webhooks", Body: `[]`}, 400, 40002, "invalid NewWebhook: the body must be a JSON object"},
		{"WebhookURLNotHTTP", Request{Method: "POST", Path: "/webhooks", Body: `{"url":"ftp://127.0.0.1/h"}`}, 400, 40002, "invalid NewWebhook: url: must be an absolute http:// or https:// URL"},
		{"PlantIDString", Request{Method: "POST", Path: "/plants", Body: `{"id":"1","name":"Fern"}`}, 400, 40002, "invalid NewPlant: id: " + int64Range},
		{"PlantIDFraction", Request{Method: "POST", Path: "/plants", Body: `{"id":1.0,"name":"Fern"}`}, 400, 40002, "invalid NewPlant: id: " + int64Range},
		{"PlantTagNull", Request{Method: "POST", Path: "/plants", Body: `{"id":1,"name":"Fern","tag":null}`}, 400, 40002, "invalid NewPlant: tag: must be a string (leave it out for no tag)"},
		{"PlantNameMissing", Request{Method: "POST", Path: "/plants", Body: `{"id":1}`}, 400, 40002, "invalid NewPlant: name: required"},
		{"PlantNameNumber", Request{Method: "POST", Path: "/plants", Body: `{"id":1,"name":5}`}, 400, 40002, "invalid NewPlant: name: must be a string"},
		{"PlantNameEmpty", Request{Method: "POST", Path: "/plants", Body: `{"id":1,"name":""}`}, 400, 40002, "invalid NewPlant: name: must have at least 1 character"},
		{"PlantNull", Request{Method: "POST", Path: "/plants", Body: `null`}, 400, 40002, "invalid NewPlant: the body must be a JSON object"},
		{"WebhookPathID", Request{Method: "GET", Path: "/webhooks/whk_x"}, 400, 40004, `invalid path parameter "id": must be a webhook id: whk_ and 16 lower-case hex digits`},
		{"PlantPathID", Request{Method: "GET", Path: "/plants/x"}, 400, 40004, `invalid path parameter "id": ` + int64Range},
		{"Limit", Request{Method: "GET", Path: "/plants?limit=0"}, 400, 40003, `invalid query parameter "limit": must be an integer from 1 to 1000`},
		{"BadContentType", Request{Method: "POST", Path: "/plants", Body: `{"id":1,"name":"Fern"}`, Header: map[string]string{"Content-Type": "application/json;;;="}},
			415, 41501, "Content-Type is not valid: send application/json"},
		{"TextPlain", Request{Method: "POST", Path: "/webhooks", Body: `{}`, Header: map[string]string{"Content-Type": "text/plain"}},
			415, 41501, `Content-Type "text/plain" is not supported: send application/json`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.Token = tok
			resp := ts.Do(t, tt.req)
			mustError(t, resp, tt.status, tt.code)
			var e struct{ Message string }
			if err := json.Unmarshal(resp.Body, &e); err != nil {
				t.Fatal(err)
			}
			if e.Message != tt.msg {
				t.Fatalf("message = %q, want %q", e.Message, tt.msg)
			}
		})
	}
	if subs, _, err := ts.Services.Webhooks.FindSubscriptions(context.Background(), plantstore.SubscriptionFilter{Owner: "alice"}); err != nil || len(subs) != 0 {
		t.Fatalf("refused requests stored subscriptions: %v, %v", subs, err)
	}
}

// TestSchemaErrors: every body (and parameter) the contract's schema refuses
// is answered 400 with a message that names the operation's schema, the
// member at fault (its path, "types[1]") and the rule it breaks (type,
// format, enum, length, range, item count, required, unknown member): never
// the bare "does not match the schema" nor "is not valid". Nothing is
// stored. The bodies are refused before the handler runs, so the ids need
// not exist.
func TestSchemaErrors(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t)
	tok := ts.Token(t, "alice", plantstore.KnownScopes...)
	const (
		whk       = "/webhooks/whk_0123456789abcdef"
		eventType = "must be one of plant.created, plant.updated, plant.deleted"
	)
	for _, tt := range []struct {
		name         string
		method, path string
		body         string
		header       map[string]string
		status       int
		code         int32
		msg          string
	}{
		// NewPlant (POST /plants)
		{"PlantEmpty", "POST", "/plants", `{}`, nil, 400, 40002, "invalid NewPlant: id: required; name: required"},
		{"PlantTwoFaults", "POST", "/plants", `{"id":"x","name":""}`, nil, 400, 40002,
			"invalid NewPlant: id: must be an integer from -9223372036854775808 to 9223372036854775807 (int64); name: must have at least 1 character"},
		{"PlantNameLong", "POST", "/plants", `{"id":1,"name":"` + strings.Repeat("é", 257) + `"}`, nil, 400, 40002, "invalid NewPlant: name: must have at most 256 characters"},
		{"PlantTagLong", "POST", "/plants", `{"id":1,"name":"Fern","tag":"` + strings.Repeat("t", 65) + `"}`, nil, 400, 40002, "invalid NewPlant: tag: must have at most 64 characters"},
		{"PlantTagArray", "POST", "/plants", `{"id":1,"name":"Fern","tag":["a"]}`, nil, 400, 40002, "invalid NewPlant: tag: must be a string (leave it out for no tag)"},
		{"PlantIDBool", "POST", "/plants", `{"id":true,"name":"Fern"}`, nil, 400, 40002,
			"invalid NewPlant: id: must be an integer from -9223372036854775808 to 9223372036854775807 (int64)"},
		// PlantPatch (PATCH /plants/{id})
		{"PlantPatchName", "PATCH", "/plants/1", `{"name":7}`, nil, 400, 40002, "invalid PlantPatch: name: must be a string (leave it out to keep the name)"},
		{"PlantPatchUnknown", "PATCH", "/plants/1", `{"nmae":"Fern"}`, nil, 400, 40002, "invalid PlantPatch: nmae: unknown member: send only name and tag"},
		// NewWebhook (POST /webhooks)
		{"WebhookURLEmpty", "POST", "/webhooks", `{"url":""}`, nil, 400, 40002, "invalid NewWebhook: url: must have at least 1 character"},
		{"WebhookURLNotURI", "POST", "/webhooks", `{"url":"not a uri"}`, nil, 400, 40002, "invalid NewWebhook: url: must be a URI, such as https://example.com/hook"},
		{"WebhookTypesString", "POST", "/webhooks", `{"url":"http://127.0.0.1:9/h","types":"plant.created"}`, nil, 400, 40002,
			"invalid NewWebhook: types: must be an array of at most 3 strings, each one of plant.created, plant.updated, plant.deleted"},
		{"WebhookTypeUnknown", "POST", "/webhooks", `{"url":"http://127.0.0.1:9/h","types":["plant.created","plant.eaten"]}`, nil, 400, 40002,
			"invalid NewWebhook: types[1]: " + eventType},
		{"WebhookTypeNumber", "POST", "/webhooks", `{"url":"http://127.0.0.1:9/h","types":[1]}`, nil, 400, 40002, "invalid NewWebhook: types[0]: " + eventType},
		{"WebhookTypesTooMany", "POST", "/webhooks", `{"url":"http://127.0.0.1:9/h","types":["plant.created","plant.updated","plant.deleted","plant.created"]}`, nil, 400, 40002,
			"invalid NewWebhook: types: must have at most 3 items"},
		{"WebhookDescriptionLong", "POST", "/webhooks", `{"url":"http://127.0.0.1:9/h","description":"` + strings.Repeat("d", 257) + `"}`, nil, 400, 40002,
			"invalid NewWebhook: description: must have at most 256 characters"},
		{"WebhookManyFaults", "POST", "/webhooks", `{"types":[1,2,3,4,5,6]}`, nil, 400, 40002,
			"invalid NewWebhook: types[0]: " + eventType + "; types[1]: " + eventType + "; types[2]: " + eventType + "; types[3]: " + eventType + "; types[4]: " + eventType + "; and 3 more"},
		// WebhookPatch (PATCH /webhooks/{id})
		{"WebhookPatchEnabledString", "PATCH", whk, `{"enabled":"yes"}`, nil, 400, 40002, "invalid WebhookPatch: enabled: must be true or false"},
		{"WebhookPatchEnabledNull", "PATCH", whk, `{"enabled":null}`, nil, 400, 40002, "invalid WebhookPatch: enabled: must be true or false (leave it out to keep its value)"},
		{"WebhookPatchType", "PATCH", whk, `{"types":["x"]}`, nil, 400, 40002, "invalid WebhookPatch: types[0]: " + eventType},
		{"WebhookPatchURLNull", "PATCH", whk, `{"url":null}`, nil, 400, 40002, "invalid WebhookPatch: url: must be a string (leave it out to keep the url)"},
		{"WebhookPatchUnknown", "PATCH", whk, `{"secret":"x"}`, nil, 400, 40002, "invalid WebhookPatch: secret: unknown member: send only description, enabled, types and url"},
		// RotateSecret (POST /webhooks/{id}/rotate-secret)
		{"RotateNegative", "POST", whk + "/rotate-secret", `{"old_secret_expires_in":-1}`, nil, 400, 40002, "invalid RotateSecret: old_secret_expires_in: must be an integer from 0 to 604800"},
		{"RotateTooLong", "POST", whk + "/rotate-secret", `{"old_secret_expires_in":604801}`, nil, 400, 40002, "invalid RotateSecret: old_secret_expires_in: must be an integer from 0 to 604800"},
		{"RotateString", "POST", whk + "/rotate-secret", `{"old_secret_expires_in":"1h"}`, nil, 400, 40002, "invalid RotateSecret: old_secret_expires_in: must be an integer from 0 to 604800"},
		{"RotateNull", "POST", whk + "/rotate-secret", `{"old_secret_expires_in":null}`, nil, 400, 40002,
			"invalid RotateSecret: old_secret_expires_in: must be an integer from 0 to 604800 (leave it out for the default)"},
		// RecoverRequest (POST /webhooks/{id}/recover)
		{"RecoverMissing", "POST", whk + "/recover", `{}`, nil, 400, 40002, "invalid RecoverRequest: since: required"},
		{"RecoverUnknown", "POST", whk + "/recover", `{"since":"2026-01-02T15:04:05Z","until":"x"}`, nil, 400, 40002, "invalid RecoverRequest: until: unknown member: send only since"},
		// Parameters
		{"EventsType", "GET", "/events?type=plant.eaten", "", nil, 400, 40003, `invalid query parameter "type": ` + eventType},
		{"EventsAfter", "GET", "/events?after=-1", "", nil, 400, 40003, `invalid query parameter "after": must be an integer from 0 to 9223372036854775807`},
		{"DeliveriesState", "GET", whk + "/deliveries?state=lost", "", nil, 400, 40003, `invalid query parameter "state": must be one of pending, succeeded, failed`},
		{"DeliveryID", "POST", whk + "/deliveries/msg_x/resend", "", nil, 400, 40004, `invalid path parameter "delivery_id": must be a delivery id: msg_ and 24 lower-case hex digits`},
		{"PingWebhookID", "POST", "/webhooks/whk_X/ping", "", nil, 400, 40004, `invalid path parameter "id": must be a webhook id: whk_ and 16 lower-case hex digits`},
		{"LastEventID", "GET", "/events/stream", "", map[string]string{"Last-Event-ID": "-1"}, 400, 40005,
			`invalid header parameter "Last-Event-ID": must be an integer from 0 to 9223372036854775807`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp := ts.Do(t, Request{Method: tt.method, Path: tt.path, Body: tt.body, Header: tt.header, Token: tok})
			mustErrorMessage(t, resp, tt.status, tt.code, tt.msg)
		})
	}
	if plants, _, err := ts.Services.Plants.FindPlants(context.Background(), plantstore.PlantFilter{Owner: "alice"}); err != nil || len(plants) != 0 {
		t.Fatalf("refused requests stored plants: %v, %v", plants, err)
	}
	if subs, _, err := ts.Services.Webhooks.FindSubscriptions(context.Background(), plantstore.SubscriptionFilter{Owner: "alice"}); err != nil || len(subs) != 0 {
		t.Fatalf("refused requests stored subscriptions: %v, %v", subs, err)
	}
}

// TestStorageUnavailable: on a real SQLite file whose write lock another
// process holds past the timeout, a create answers 503 50301 with
// Retry-After within about the timeout, reads still work (WAL readers do
// not need the lock), and writes work again once the lock is released.
func TestStorageUnavailable(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t, func(s *TestServer) { s.OpTimeout = 500 * time.Millisecond })
	tok := ts.Token(t, "alice")
	if resp := ts.Post(t, tok, `{"id":1,"name":"Fern"}`); resp.Status != 200 {
		t.Fatalf("create: status %d", resp.Status)
	}
	raw, err := sql.Open("sqlite3", "file:"+ts.DB.Path+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	lock, err := raw.Begin() // BEGIN IMMEDIATE: holds the write lock
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	resp := ts.Post(t, tok, `{"id":2,"name":"Moss"}`)
	took := time.Since(start)
	mustError(t, resp, 503, plantstore.CodeStorageUnavailable)
	if got := resp.Header.Get("Retry-After"); got != "1" {
		t.Fatalf("Retry-After = %q, want 1", got)
	}
	if took > 3*time.Second {
		t.Fatalf("the 503 took %v, want about the 500ms timeout", took)
	}
	if !strings.Contains(string(resp.Body), "storage is not available") {
		t.Fatalf("body = %s", resp.Body)
	}
	if got := mustPlants(t, ts.Get(t, tok, "/plants")); len(got) != 1 {
		t.Fatalf("read while locked: %d plants, want 1", len(got))
	}
	if err := lock.Rollback(); err != nil {
		t.Fatal(err)
	}
	if resp := ts.Post(t, tok, `{"id":2,"name":"Moss"}`); resp.Status != 200 {
		t.Fatalf("create after the lock is released: status %d (%s)", resp.Status, resp.Body)
	}
	if !strings.Contains(ts.logs.String(), `"msg":"storage error"`) {
		t.Fatalf("the 503's cause is not logged:\n%s", ts.logs)
	}
}
