package http_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/plantstore/plantstore"
)

type webhookBody struct {
	ID          string  `json:"id"`
	URL         string  `json:"url"`
	Description *string `json:"description"`
	CreatedAt   string  `json:"created_at"`
	Enabled     bool    `json:"enabled"`
	Secret      *string `json:"secret"`
}

func decodeWebhook(t *testing.T, resp *Response, status int) webhookBody {
	t.Helper()
	if resp.Status != status {
		t.Fatalf("status = %d, want %d (body %s)", resp.Status, status, resp.Body)
	}
	var w webhookBody
	if err := json.Unmarshal(resp.Body, &w); err != nil {
		t.Fatalf("body %s: %v", resp.Body, err)
	}
	return w
}

func TestWebhooksAPI(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t)
	tok := ts.Token(t, "alice", plantstore.ScopeWebhooksManage)
	other := ts.Token(t, "bob", plantstore.ScopeWebhooksManage)
	post := func(tok, body string) *Response {
		return ts.Do(t, Request{Method: "POST", Path: "/webhooks", Token: tok, Body: body})
	}

	created := decodeWebhook(t, post(tok, `{"url":"http://127.0.0.1:9/hook","description":"inventory"}`), 201)
	if !strings.HasPrefix(created.ID, "whk_") || created.Secret == nil || !strings.HasPrefix(*created.Secret, "whsec_") ||
		created.URL != "http://127.0.0.1:9/hook" || !created.Enabled || created.Description == nil || *created.Description != "inventory" {
		t.Fatalf("created = %+v", created)
	}
	t.Run("GetHidesSecret", func(t *testing.T) {
		got := decodeWebhook(t, ts.Get(t, tok, "/webhooks/"+created.ID), 200)
		if got.Secret != nil || got.ID != created.ID {
			t.Fatalf("got %+v", got)
		}
	})
	t.Run("List", func(t *testing.T) {
		resp := ts.Get(t, tok, "/webhooks")
		var list []webhookBody
		if err := json.Unmarshal(resp.Body, &list); err != nil || resp.Status != 200 || len(list) != 1 || list[0].Secret != nil {
			t.Fatalf("%d %s", resp.Status, resp.Body)
		}
		if got := string(ts.Get(t, other, "/webhooks").Body); got != "[]" {
			t.Fatalf("bob sees %s", got)
		}
	})
	t.Run("OtherOwner404", func(t *testing.T) {
		for _, r := range []Request{
			{Method: "GET", Path: "/webhooks/" + created.ID},
			{Method: "DELETE", Path: "/webhooks/" + created.ID},
			{Method: "POST", Path: "/webhooks/" + created.ID + "/rotate-secret"},
			{Method: "GET", Path: "/webhooks/" + created.ID + "/deliveries"},
		} {
			r.Token = other
			mustError(t, ts.Do(t, r), 404, plantstore.CodeWebhookNotFound)
		}
	})
	t.Run("Rotate", func(t *testing.T) {
		got := decodeWebhook(t, ts.Do(t, Request{Method: "POST", Path: "/webhooks/" + created.ID + "/rotate-secret", Token: tok}), 200)
		if got.Secret == nil || *got.Secret == *created.Secret || !strings.HasPrefix(*got.Secret, "whsec_") {
			t.Fatalf("rotated = %+v", got)
		}
	})
	t.Run("DeliveriesEmpty", func(t *testing.T) {
		if resp := ts.Get(t, tok, "/webhooks/"+created.ID+"/deliveries"); resp.Status != 200 || string(resp.Body) != "[]" {
			t.Fatalf("%d %s", resp.Status, resp.Body)
		}
	})
	for name, body := range map[string]string{
		"Relative":        `{"url":"/hook"}`,
		"FTP":             `{"url":"ftp://127.0.0.1/x"}`,
		"NoHost":          `{"url":"http:///x"}`,
		"UserInfo":        `{"url":"http://u:p@127.0.0.1:9/x"}`,
		"Missing":         `{"description":"x"}`,
		"Null":            `{"url":null}`,
		"Number":          `{"url":5}`,
		"Empty":           `{"url":""}`,
		"TooLong":         `{"url":"http://127.0.0.1:9/` + strings.Repeat("a", 2100) + `"}`,
		"LongDescription": `{"url":"http://127.0.0.1:9/","description":"` + strings.Repeat("d", 257) + `"}`,
	} {
		t.Run("ErrInvalid/"+name, func(t *testing.T) {
			mustError(t, post(tok, body), 400, plantstore.CodeInvalidBody)
		})
	}
	t.Run("ErrBadID", func(t *testing.T) {
		mustError(t, ts.Get(t, tok, "/webhooks/nope"), 400, plantstore.CodeInvalidPath)
	})
	t.Run("ErrScope", func(t *testing.T) {
		plants := ts.Token(t, "alice")
		mustError(t, ts.Get(t, plants, "/webhooks"), 403, plantstore.CodeInsufficientScope)
		mustError(t, post(plants, `{"url":"http://127.0.0.1:9/x"}`), 403, plantstore.CodeInsufficientScope)
	})
	t.Run("Delete", func(t *testing.T) {
		if resp := ts.Do(t, Request{Method: "DELETE", Path: "/webhooks/" + created.ID, Token: tok}); resp.Status != 204 {
			t.Fatalf("status %d", resp.Status)
		}
		mustError(t, ts.Get(t, tok, "/webhooks/"+created.ID), 404, plantstore.CodeWebhookNotFound)
	})
}
