package http_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
)

// TestRecoverSince: POST /webhooks/{id}/recover takes since as an RFC 3339
// time or as a duration before now, answers the since it used (to the
// second), re-queues a failed delivery once whatever the since of a later
// recover, and refuses a since that is malformed, in the future or before
// 1970 with 400 40002 naming since and what it must be, re-queueing nothing.
func TestRecoverSince(t *testing.T) {
	t.Parallel()
	ts, queue := openDispatchingServer(t)
	rcv := newReceiver(t) // answers 500
	tok := ts.Token(t, "alice", plantstore.ScopeWebhooksManage, plantstore.ScopePlantsWrite)
	created := decodeWebhook(t, ts.Do(t, Request{Method: "POST", Path: "/webhooks", Token: tok, Body: `{"url":"` + rcv.URL + `/hook"}`}), 201)
	hook := "/webhooks/" + created.ID
	failedAttempts := func() int {
		resp := ts.Get(t, tok, hook+"/deliveries?state=failed")
		var list []deliveryBody
		if err := json.Unmarshal(resp.Body, &list); err != nil || resp.Status != 200 {
			t.Fatalf("GET deliveries: %d %s", resp.Status, resp.Body)
		}
		return len(list)
	}
	if resp := ts.Do(t, Request{Method: "POST", Path: "/plants", Token: tok, Body: `{"id":1,"name":"Fern"}`}); resp.Status != 200 {
		t.Fatalf("create plant: %d %s", resp.Status, resp.Body)
	}
	waitFor(t, "the failed delivery", func() bool { return failedAttempts() == 1 })

	recover := func(body string) (time.Time, int64) {
		t.Helper()
		resp := ts.Do(t, Request{Method: "POST", Path: hook + "/recover", Token: tok, Body: body})
		var r struct {
			Since    time.Time `json:"since"`
			Requeued int64     `json:"requeued"`
		}
		if err := json.Unmarshal(resp.Body, &r); err != nil || resp.Status != 202 {
			t.Fatalf("recover %s: %d %s", body, resp.Status, resp.Body)
		}
		return r.Since, r.Requeued
	}

	// A duration: that long before the server's now, cut to the second.
	before := time.Now()
	since, n := recover(`{"since":"24h"}`)
	if n != 1 {
		t.Fatalf(`recover {"since":"24h"} re-queued %d, want 1`, n)
	}
	if lo, hi := before.Add(-24*time.Hour).Truncate(time.Second), time.Now().Add(-24*time.Hour); since.Before(lo) || since.After(hi) || since.Nanosecond() != 0 {
		t.Fatalf(`recover {"since":"24h"} used since %v, want a whole second in [%v, %v]`, since, lo, hi)
	}
	waitFor(t, "the recovered delivery to fail again", func() bool { return failedAttempts() == 2 })

	// An RFC 3339 time, cut to the second; the delivery a recover re-queued
	// is not re-queued again, whatever since says.
	for _, body := range []string{`{"since":"2000-01-01T00:00:00.5Z"}`, `{"since":"24h"}`, `{"since":"1h"}`} {
		since, n := recover(body)
		if n != 0 {
			t.Fatalf("recover %s after a recover re-queued the delivery: %d, want 0", body, n)
		}
		if body == `{"since":"2000-01-01T00:00:00.5Z"}` && !since.Equal(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)) {
			t.Fatalf("recover %s used since %v, want 2000-01-01T00:00:00Z", body, since)
		}
	}

	const form = "invalid RecoverRequest: since: must be an RFC 3339 time (2026-01-02T15:04:05Z) or a duration before now (24h, 90m)"
	for _, tt := range []struct{ body, msg string }{
		{`{"since":"yesterday"}`, form},
		{`{"since":""}`, form},
		{`{"since":"-24h"}`, form},
		{`{"since":"2026-13-01T00:00:00Z"}`, form},
		{`{"since":"1969-12-31T23:59:59Z"}`, "invalid RecoverRequest: since: must not be before 1970-01-01T00:00:00Z, not 1969-12-31T23:59:59Z"},
		{`{"since":"1000000h"}`, "invalid RecoverRequest: since: must not be before 1970-01-01T00:00:00Z, not "},
		{`{"since":"9999-12-31T00:00:00Z"}`, "invalid RecoverRequest: since: must not be in the future (now is "},
		{`{"since":"` + time.Now().Add(time.Hour).UTC().Format(time.RFC3339) + `"}`, "invalid RecoverRequest: since: must not be in the future (now is "},
		{`{"since":5}`, "since"},
	} {
		resp := ts.Do(t, Request{Method: "POST", Path: hook + "/recover", Token: tok, Body: tt.body})
		mustError(t, resp, 400, plantstore.CodeInvalidBody)
		var e apiError
		if err := json.Unmarshal(resp.Body, &e); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(*e.Message, tt.msg) && !(tt.msg == "since" && strings.Contains(*e.Message, "since")) {
			t.Errorf("recover %s: message %q, want %q", tt.body, *e.Message, tt.msg)
		}
	}
	// Anything the recovers re-queued was due at once: a claim that began
	// after them and found nothing shows nothing was re-queued.
	queue.waitEmptyClaim(t, time.Now())
	rcv.mu.Lock()
	sent := len(rcv.got)
	rcv.mu.Unlock()
	if claimed, got := queue.Claimed(), failedAttempts(); claimed != 2 || sent != 2 || got != 2 {
		t.Fatalf("after the refused recovers: %d deliveries claimed, the receiver got %d attempts, %d failed; want 2, 2 and 2", claimed, sent, got)
	}
}
