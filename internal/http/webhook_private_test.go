package http_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/sender"
	"github.com/plantstore/plantstore/internal/service"
	"github.com/plantstore/plantstore/internal/testkit/dnstest"
)

// TestWebhookPrivateURLRefused: with the services' sender wired as serve
// wires it without --webhook-allow-private (its CheckURL), POST and
// PATCH /webhooks refuse a URL whose host is an address deliveries may not
// reach, or localhost, with 400 40002 naming the flag, and store nothing.
// The addresses are judged, never dialled. Without the check (the flag on)
// they are accepted.
func TestWebhookPrivateURLRefused(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t, func(ts *TestServer) { ts.Service.Sender = sender.New(sender.Options{}) })
	tok := ts.Token(t, "alice", plantstore.ScopeWebhooksManage)
	refused := map[string]string{
		"http://127.0.0.1:9901/hook":         "127.0.0.1 is not globally reachable: Loopback (127.0.0.0/8, RFC 1122, Section 3.2.1.3)",
		"http://localhost:9901/hook":         "localhost is a loopback name (RFC 6761)",
		"http://[::1]/hook":                  "::1 is not globally reachable: Loopback Address (::1/128, RFC 4291)",
		"http://10.0.0.1/hook":               "10.0.0.1 is not globally reachable: Private-Use (10.0.0.0/8, RFC 1918)",
		"http://169.254.169.254/latest/meta": "169.254.169.254 is not globally reachable: Link Local (169.254.0.0/16, RFC 3927)",
		"http://2130706433/hook":             "2130706433 is 127.0.0.1, which is not globally reachable: Loopback (127.0.0.0/8, RFC 1122, Section 3.2.1.3)",
	}
	for u, why := range refused {
		resp := ts.Do(t, Request{Method: "POST", Path: "/webhooks", Token: tok, Body: `{"url":"` + u + `"}`})
		mustError(t, resp, 400, plantstore.CodeInvalidBody)
		want := "invalid NewWebhook: url: " + why + ": deliveries there are refused unless the server runs with --webhook-allow-private"
		if got := message(t, resp); got != want {
			t.Errorf("POST %s: message %q, want %q", u, got, want)
		}
	}
	if resp := ts.Get(t, tok, "/webhooks"); strings.TrimSpace(string(resp.Body)) != "[]" {
		t.Fatalf("GET /webhooks after refusals: %s, want none stored", resp.Body)
	}

	// A name is accepted: it is checked once resolved, at connect time.
	// (No plant is created: nothing is delivered, the name never resolved.)
	created := decodeWebhook(t, ts.Do(t, Request{Method: "POST", Path: "/webhooks", Token: tok, Body: `{"url":"https://receiver.invalid/hook"}`}), 201)
	for u, why := range refused {
		resp := ts.Do(t, Request{Method: "PATCH", Path: "/webhooks/" + created.ID, Token: tok, Body: `{"url":"` + u + `"}`})
		mustError(t, resp, 400, plantstore.CodeInvalidBody)
		if got, want := message(t, resp), "invalid WebhookPatch: url: "+why; !strings.HasPrefix(got, want) || !strings.Contains(got, "--webhook-allow-private") {
			t.Errorf("PATCH %s: message %q, want %q and the flag", u, got, want)
		}
	}
	if got := decodeWebhook(t, ts.Get(t, tok, "/webhooks/"+created.ID), 200); got.URL != "https://receiver.invalid/hook" {
		t.Fatalf("url after refused PATCHes = %q", got.URL)
	}

	// --webhook-allow-private: no check.
	open := MustOpenServer(t)
	tok = open.Token(t, "alice", plantstore.ScopeWebhooksManage)
	decodeWebhook(t, open.Do(t, Request{Method: "POST", Path: "/webhooks", Token: tok, Body: `{"url":"http://127.0.0.1:9901/hook"}`}), 201)
}

// message returns an Error body's message.
func message(t *testing.T, resp *Response) string {
	t.Helper()
	var e struct{ Message string }
	if err := json.Unmarshal(resp.Body, &e); err != nil {
		t.Fatal(err)
	}
	return e.Message
}

// TestWebhookForbiddenAtDelivery: a subscription to a name that resolves
// to a forbidden address at delivery time (a test resolver maps
// receiver.test to 127.0.0.1: no DNS query leaves the process) gets one
// attempt, recorded as failed with that reason, and no retry, although the
// dispatcher's schedule has retries; the receiver sees no request. The
// attempt counts toward the failing streak like any failed one (the
// subscription is not disabled at once).
func TestWebhookForbiddenAtDelivery(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t)
	rcv.answer(200, "ok")
	resolver := dnstest.New(map[string]netip.Addr{"receiver.test": netip.MustParseAddr("127.0.0.1")})
	ts := MustOpenServer(t, func(ts *TestServer) {
		ts.Service.Sender = sender.New(sender.Options{
			Client: sender.NewClient(sender.ClientOptions{Resolver: resolver.Resolver, Timeout: 5 * time.Second}),
		})
		ts.Service.Delivery = service.DeliveryConfig{
			PollInterval: 20 * time.Millisecond,
			Schedule:     []time.Duration{time.Millisecond, time.Millisecond, time.Millisecond},
			Jitter:       func(d time.Duration) time.Duration { return d },
		}
	})
	queue := runDispatcher(t, ts)

	tok := ts.Token(t, "alice", plantstore.ScopeWebhooksManage, plantstore.ScopePlantsWrite)
	url := fmt.Sprintf("http://receiver.test:%d/hook", rcv.Listener.Addr().(*net.TCPAddr).Port)
	created := decodeWebhook(t, ts.Do(t, Request{Method: "POST", Path: "/webhooks", Token: tok, Body: `{"url":"` + url + `"}`}), 201)
	if resp := ts.Post(t, tok, `{"id":1,"name":"Fern"}`); resp.Status != 200 {
		t.Fatalf("create: %d %s", resp.Status, resp.Body)
	}
	type attempt struct {
		Attempt int
		State   string
		Error   string
	}
	attempts := func() []attempt {
		resp := ts.Get(t, tok, "/webhooks/"+created.ID+"/deliveries")
		var list []attempt
		if resp.Status != 200 || json.Unmarshal(resp.Body, &list) != nil {
			t.Fatalf("GET deliveries: %d %s", resp.Status, resp.Body)
		}
		return list
	}
	waitFor(t, "the attempt", func() bool { return len(attempts()) > 0 })
	// A retry would be due 1 ms after the attempt was recorded: a claim
	// that began later and found nothing shows none was scheduled.
	queue.waitEmptyClaim(t, time.Now().Add(time.Millisecond))
	list := attempts()
	// The attempt names the kind of failure, not the address the name
	// resolved to (that is in the server's log).
	if want := "forbidden address: deliveries there are refused unless the server runs with --webhook-allow-private"; len(list) != 1 ||
		list[0].Attempt != 1 || list[0].State != "failed" || list[0].Error != want {
		t.Fatalf("attempts = %+v, want one, failed, with error %q", list, want)
	}
	rcv.mu.Lock()
	n := len(rcv.got)
	rcv.mu.Unlock()
	if n != 0 {
		t.Fatalf("the receiver got %d requests, want none", n)
	}
	if got := queue.Claimed(); got != 1 {
		t.Fatalf("%d deliveries claimed, want 1 (no retry)", got)
	}
	if resolver.Queries() == 0 {
		t.Fatal("receiver.test was not resolved by the test resolver")
	}
	if got := decodeWebhook(t, ts.Get(t, tok, "/webhooks/"+created.ID), 200); !got.Enabled {
		t.Fatalf("subscription after one refused attempt: enabled %v, want still enabled", got.Enabled)
	}
}
