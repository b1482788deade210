package http_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/sender"
	"github.com/plantstore/plantstore/internal/service"
	"github.com/plantstore/plantstore/webhook"
)

// receiver is a webhook receiver on 127.0.0.1 that records what it gets and
// answers the status and body it is set to.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	status int
	body   string
	got    []received
}

type received struct {
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{status: 500, body: "down"}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, received{req.Header.Clone(), body})
		status, answer := r.status, r.body
		r.mu.Unlock()
		w.WriteHeader(status)
		io.WriteString(w, answer)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) answer(status int, body string) {
	r.mu.Lock()
	r.status, r.body = status, body
	r.mu.Unlock()
}

// byID returns what the receiver got with webhook-id id.
func (r *receiver) byID(id string) []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []received
	for _, g := range r.got {
		if g.header.Get(webhook.HeaderID) == id {
			out = append(out, g)
		}
	}
	return out
}

// waitFor polls cond every 20 ms until it holds, failing after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type deliveryBody struct {
	WebhookID    string `json:"webhook_id"`
	PlantID      int64  `json:"plant_id"`
	Attempt      int    `json:"attempt"`
	StatusCode   int    `json:"status_code"`
	State        string `json:"state"`
	ResponseBody string `json:"response_body"`
}

// claimWatch is a dispatcher's queue that counts the deliveries claimed
// and notes when each claim that found nothing began: a test proves that
// nothing more is delivered by waiting for an empty claim that began after
// anything could have been due, not for a while.
type claimWatch struct {
	service.Queue
	mu      sync.Mutex
	claimed int
	empty   []time.Time // when each empty claim began
}

func (q *claimWatch) ClaimDeliveries(ctx context.Context, c plantstore.Claim) ([]*plantstore.Task, error) {
	began := time.Now()
	tasks, err := q.Queue.ClaimDeliveries(ctx, c)
	q.mu.Lock()
	defer q.mu.Unlock()
	q.claimed += len(tasks)
	if err == nil && len(tasks) == 0 {
		q.empty = append(q.empty, began)
	}
	return tasks, err
}

// Claimed returns how many deliveries were claimed so far.
func (q *claimWatch) Claimed() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.claimed
}

// waitEmptyClaim waits until a claim that began after since found nothing
// due: whatever was due at since has been claimed by then.
func (q *claimWatch) waitEmptyClaim(t *testing.T, since time.Time) {
	t.Helper()
	waitFor(t, "a claim finding nothing due", func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return len(q.empty) > 0 && q.empty[len(q.empty)-1].After(since)
	})
}

// runDispatcher runs the dispatcher of ts's outbox until the test ends;
// the returned queue watches its claims.
func runDispatcher(t *testing.T, ts *TestServer) *claimWatch {
	t.Helper()
	q := &claimWatch{Queue: ts.Services.Outbox}
	d, err := ts.Services.NewDispatcher(q)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.Run(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return q
}

// openDispatchingServer starts a server whose dispatcher delivers to
// loopback addresses, one attempt a delivery (no retries).
func openDispatchingServer(t *testing.T) (*TestServer, *claimWatch) {
	// As serve wires them: the services with their sender, then the
	// dispatcher of their outbox.
	ts := MustOpenServer(t, func(ts *TestServer) {
		ts.Service.Sender = sender.New(sender.Options{AllowPrivate: true})
		ts.Service.Delivery = service.DeliveryConfig{
			PollInterval: 20 * time.Millisecond,
			Schedule:     []time.Duration{},
		}
	})
	return ts, runDispatcher(t, ts)
}

func TestWebhookOperations(t *testing.T) {
	t.Parallel()
	ts, _ := openDispatchingServer(t)
	rcv := newReceiver(t)
	tok := ts.Token(t, "alice", plantstore.ScopeWebhooksManage, plantstore.ScopePlantsWrite)
	bob := ts.Token(t, "bob", plantstore.ScopeWebhooksManage)
	created := decodeWebhook(t, ts.Do(t, Request{Method: "POST", Path: "/webhooks", Token: tok, Body: `{"url":"` + rcv.URL + `/hook"}`}), 201)
	hook := "/webhooks/" + created.ID
	deliveries := func(query string) ([]deliveryBody, *Response) {
		t.Helper()
		resp := ts.Get(t, tok, hook+"/deliveries"+query)
		if resp.Status != 200 {
			t.Fatalf("GET deliveries%s: %d %s", query, resp.Status, resp.Body)
		}
		var list []deliveryBody
		if err := json.Unmarshal(resp.Body, &list); err != nil {
			t.Fatal(err)
		}
		return list, resp
	}
	for id := 1; id <= 3; id++ {
		if resp := ts.Do(t, Request{Method: "POST", Path: "/plants", Token: tok, Body: fmt.Sprintf(`{"id":%d,"name":"Fern"}`, id)}); resp.Status != 200 {
			t.Fatalf("create plant: %d %s", resp.Status, resp.Body)
		}
	}
	var failed []deliveryBody
	waitFor(t, "3 failed deliveries", func() bool { failed, _ = deliveries("?state=failed"); return len(failed) == 3 })
	byPlant := map[int64]deliveryBody{}
	for _, d := range failed {
		if d.StatusCode != 500 || d.ResponseBody != "down" || d.Attempt != 1 {
			t.Fatalf("failed attempt %+v, want status 500 and body down", d)
		}
		byPlant[d.PlantID] = d
	}

	t.Run("Paged", func(t *testing.T) {
		page, resp := deliveries("?limit=2")
		link := resp.Header.Get("Link")
		if len(page) != 2 || !strings.HasPrefix(link, "</webhooks/"+created.ID+"/deliveries?") || !strings.HasSuffix(link, `>; rel="next"`) {
			t.Fatalf("first page: %d attempts, Link %q", len(page), link)
		}
		next, resp := deliveries(strings.TrimPrefix(link[1:strings.Index(link, ">")], "/webhooks/"+created.ID+"/deliveries"))
		if len(next) != 1 || resp.Header.Get("Link") != "" || next[0].WebhookID == page[0].WebhookID || next[0].WebhookID == page[1].WebhookID {
			t.Fatalf("second page: %+v, Link %q", next, resp.Header.Get("Link"))
		}
		mustError(t, ts.Get(t, tok, hook+"/deliveries?after=nope"), 400, plantstore.CodeInvalidQuery)
	})

	t.Run("Resend", func(t *testing.T) {
		rcv.answer(200, "ok")
		msg := byPlant[1].WebhookID
		resp := ts.Do(t, Request{Method: "POST", Path: hook + "/deliveries/" + msg + "/resend", Token: tok})
		var q struct {
			WebhookID string `json:"webhook_id"`
			State     string `json:"state"`
			Attempts  int    `json:"attempts"`
		}
		if err := json.Unmarshal(resp.Body, &q); err != nil || resp.Status != 202 || q.WebhookID != msg || q.State != "pending" || q.Attempts != 1 {
			t.Fatalf("resend: %d %s", resp.Status, resp.Body)
		}
		waitFor(t, "the resent delivery", func() bool { return len(rcv.byID(msg)) == 2 })
		got := rcv.byID(msg)
		if string(got[0].body) != string(got[1].body) {
			t.Fatalf("resent body %s, first %s", got[1].body, got[0].body)
		}
		if err := webhook.Verify(*created.Secret, got[1].header, got[1].body); err != nil {
			t.Fatal(err)
		}
		mustError(t, ts.Do(t, Request{Method: "POST", Path: hook + "/deliveries/msg_000000000000000000000000/resend", Token: tok}), 404, plantstore.CodeDeliveryNotFound)
		mustError(t, ts.Do(t, Request{Method: "POST", Path: hook + "/deliveries/" + msg + "/resend", Token: bob}), 404, plantstore.CodeWebhookNotFound)
	})

	t.Run("RecoverOnce", func(t *testing.T) {
		waitFor(t, "the resend's attempt in the log", func() bool { s, _ := deliveries("?state=succeeded"); return len(s) == 1 })
		recover := func() int64 {
			resp := ts.Do(t, Request{Method: "POST", Path: hook + "/recover", Token: tok, Body: `{"since":"2000-01-01T00:00:00Z"}`})
			var r struct {
				Requeued int64 `json:"requeued"`
			}
			if err := json.Unmarshal(resp.Body, &r); err != nil || resp.Status != 202 {
				t.Fatalf("recover: %d %s", resp.Status, resp.Body)
			}
			return r.Requeued
		}
		if got := recover(); got != 2 {
			t.Fatalf("recover re-queued %d, want 2 (plants 2 and 3; plant 1 succeeded)", got)
		}
		if got := recover(); got != 0 {
			t.Fatalf("second recover re-queued %d, want 0", got)
		}
		for _, id := range []int64{2, 3} {
			msg := byPlant[id].WebhookID
			waitFor(t, "the recovered delivery", func() bool { return len(rcv.byID(msg)) == 2 })
		}
		if got := len(rcv.byID(byPlant[1].WebhookID)); got != 2 {
			t.Fatalf("plant 1 sent %d times, want 2 (no recover of a success)", got)
		}
		mustError(t, ts.Do(t, Request{Method: "POST", Path: hook + "/recover", Token: tok, Body: `{}`}), 400, plantstore.CodeInvalidBody)
	})

	t.Run("Ping", func(t *testing.T) {
		// The recovered deliveries reached the receiver; their attempts must
		// also be recorded (leases released), or the ping would find the
		// subscription busy (429) on a slow machine.
		waitFor(t, "the recovered deliveries recorded", func() bool { s, _ := deliveries("?state=succeeded"); return len(s) == 3 })
		rcv.answer(202, "pong \xff")
		resp := ts.Do(t, Request{Method: "POST", Path: hook + "/ping", Token: tok})
		var p struct {
			WebhookID    string `json:"webhook_id"`
			Succeeded    bool   `json:"succeeded"`
			StatusCode   int    `json:"status_code"`
			ResponseBody string `json:"response_body"`
		}
		if err := json.Unmarshal(resp.Body, &p); err != nil || resp.Status != 200 || !p.Succeeded || p.StatusCode != 202 || p.ResponseBody != `pong \xff` {
			t.Fatalf("ping: %d %s", resp.Status, resp.Body)
		}
		got := rcv.byID(p.WebhookID)
		if len(got) != 1 {
			t.Fatalf("receiver got the ping %d times", len(got))
		}
		if err := webhook.Verify(*created.Secret, got[0].header, got[0].body); err != nil {
			t.Fatal(err)
		}
		var body struct {
			Type string `json:"type"`
			ID   string `json:"id"`
			Data struct {
				Webhook string `json:"webhook"`
			} `json:"data"`
		}
		if err := json.Unmarshal(got[0].body, &body); err != nil || body.Type != "ping" || body.ID != p.WebhookID || body.Data.Webhook != created.ID {
			t.Fatalf("ping body %s", got[0].body)
		}
	})

	t.Run("PatchDisableEnable", func(t *testing.T) {
		patch := func(body string) *Response {
			return ts.Do(t, Request{Method: "PATCH", Path: hook, Token: tok, Body: body, Header: map[string]string{"Content-Type": "application/merge-patch+json"}})
		}
		var w struct {
			Enabled        bool    `json:"enabled"`
			DisabledReason string  `json:"disabled_reason"`
			MissedSince    *string `json:"missed_since"`
			Description    *string `json:"description"`
		}
		resp := patch(`{"enabled":false,"description":"paused"}`)
		if err := json.Unmarshal(resp.Body, &w); err != nil || resp.Status != 200 || w.Enabled || w.DisabledReason != "manual" || w.Description == nil || *w.Description != "paused" {
			t.Fatalf("disable: %d %s", resp.Status, resp.Body)
		}
		mustError(t, ts.Do(t, Request{Method: "POST", Path: hook + "/deliveries/" + byPlant[1].WebhookID + "/resend", Token: tok}), 409, plantstore.CodeWebhookDisabled)
		w = struct {
			Enabled        bool    `json:"enabled"`
			DisabledReason string  `json:"disabled_reason"`
			MissedSince    *string `json:"missed_since"`
			Description    *string `json:"description"`
		}{}
		resp = patch(`{"enabled":true,"description":null}`)
		if err := json.Unmarshal(resp.Body, &w); err != nil || resp.Status != 200 || !w.Enabled || w.DisabledReason != "" || w.MissedSince == nil || w.Description != nil {
			t.Fatalf("enable: %d %s", resp.Status, resp.Body)
		}
		var typed struct {
			Types []string `json:"types"`
		}
		resp = patch(`{"types":["plant.deleted","plant.created"]}`)
		if err := json.Unmarshal(resp.Body, &typed); err != nil || resp.Status != 200 || strings.Join(typed.Types, " ") != "plant.created plant.deleted" {
			t.Fatalf("PATCH types: %d %s", resp.Status, resp.Body)
		}
		typed.Types = nil
		resp = patch(`{"types":[]}`)
		if err := json.Unmarshal(resp.Body, &typed); err != nil || resp.Status != 200 || typed.Types != nil {
			t.Fatalf("PATCH types []: %d %s", resp.Status, resp.Body)
		}
		mustError(t, patch(`{"url":"ftp://example.com"}`), 400, plantstore.CodeInvalidBody)
		mustError(t, patch(`{"secret":"x"}`), 400, plantstore.CodeInvalidBody)
		mustError(t, ts.Do(t, Request{Method: "PATCH", Path: hook, Token: bob, Body: `{}`}), 404, plantstore.CodeWebhookNotFound)
	})

	t.Run("RotateExpiresNow", func(t *testing.T) {
		resp := ts.Do(t, Request{Method: "POST", Path: hook + "/rotate-secret", Token: tok, Body: `{"old_secret_expires_in":0}`})
		rotated := decodeWebhook(t, resp, 200)
		ping := ts.Do(t, Request{Method: "POST", Path: hook + "/ping", Token: tok})
		var p struct {
			WebhookID string `json:"webhook_id"`
		}
		if err := json.Unmarshal(ping.Body, &p); err != nil {
			t.Fatal(err)
		}
		got := rcv.byID(p.WebhookID)
		if len(got) != 1 {
			t.Fatalf("receiver got the ping %d times", len(got))
		}
		if sigs := strings.Fields(got[0].header.Get(webhook.HeaderSignature)); len(sigs) != 1 {
			t.Fatalf("%d signatures after a rotation expiring now, want 1", len(sigs))
		}
		if err := webhook.Verify(*rotated.Secret, got[0].header, got[0].body); err != nil {
			t.Fatal(err)
		}
		if err := webhook.Verify(*created.Secret, got[0].header, got[0].body); err == nil {
			t.Fatal("the old secret still verifies after a rotation expiring now")
		}
		mustError(t, ts.Do(t, Request{Method: "POST", Path: hook + "/rotate-secret", Token: tok, Body: `{"old_secret_expires_in":604801}`}), 400, plantstore.CodeInvalidBody)
		// Without a body: the default grace, two signatures.
		decodeWebhook(t, ts.Do(t, Request{Method: "POST", Path: hook + "/rotate-secret", Token: tok}), 200)
	})

	t.Run("ResendMetric", func(t *testing.T) {
		resp := ts.Metrics(t)
		for _, want := range []string{`plantstore_webhook_resends_total{operation="resend"} 1`, `plantstore_webhook_resends_total{operation="recover"} 2`} {
			if !strings.Contains(string(resp.Body), want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
	})
}
