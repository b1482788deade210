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
		{"PlantNameEmpty", Request{Method: "POST", Path: "/plants", Body: `{"id":1,"name":""}`}, 400, 40002, "invalid NewPlant: name: must have at least 1 characters"},
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

// TestStorageUnavailable: on a real SQLite file whose write lock another
// process holds past the timeout, a create answers 503 50301 with
// Retry-After within about the timeout, reads still work (WAL readers do
// not need the lock), and writes work again once the lock is released.
func TestStorageUnavailable(t *testing.T) {
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
