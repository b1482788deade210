package http_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/sender"
)

// TestWebhookHostileHostsRefusedAtCreate: every form of a loopback or
// private address the client would dial as one (IDNA-mapped full-width
// letters and digits and ideographic full stops, IPv4 shorthands), and
// hosts that are neither an address nor a name, are refused by POST
// /webhooks with 400 40002, before anything is stored. The URL check makes
// no lookup and no connection: the webhook client here fails the test if
// it is used at all. With private addresses allowed (serve's
// --webhook-allow-private: the sender checks hosts only), loopback is
// accepted and the hosts that do not normalise are still refused.
func TestWebhookHostileHostsRefusedAtCreate(t *testing.T) {
	t.Parallel()
	unused := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		t.Errorf("the webhook client was used: %s %s", r.Method, r.URL.Host)
		return nil, errors.New("no network in this test")
	})}
	serve := func(allowPrivate bool) (*TestServer, string) {
		ts := MustOpenServer(t, func(ts *TestServer) {
			ts.Service.Sender = sender.New(sender.Options{AllowPrivate: allowPrivate, Client: unused})
		})
		return ts, ts.Token(t, "alice", plantstore.ScopeWebhooksManage)
	}
	loopback := []string{
		"http://ｌｏｃａｌｈｏｓｔ:9901/hook",
		"http://%EF%BD%8C%EF%BD%8F%EF%BD%83%EF%BD%81%EF%BD%8C%EF%BD%88%EF%BD%8F%EF%BD%93%EF%BD%94/hook",
		"http://ⓛⓞⓒⓐⓛⓗⓞⓢⓣ/hook",
		"http://app.ＬＯＣＡＬＨＯＳＴ。/hook",
		"http://127。0。0。1:9901/hook",
		"http://１２７．０．０．１/hook",
		"http://①②⑦.0.0.1/hook",
		"http://０ｘ７ｆ.1/hook",
		"http://0x7f.1/hook",
		"http://0177.0.0.1/hook",
		"http://2130706433/hook",
		"http://２１３０７０６４３３/hook",
		"http://１０。０。０。１/hook",
		"http://[::ffff:7f00:1]/hook",
	}
	invalid := []string{
		"http://4294967296/hook",
		"http://0x100000000/hook",
		"http://1.2.3.4.5/hook",
		"http://256.0.0.1/hook",
		"http://a!b/hook",
	}
	guarded, tok := serve(false)
	for _, u := range append(loopback, invalid...) {
		resp := guarded.Do(t, Request{Method: "POST", Path: "/webhooks", Token: tok, Body: `{"url":"` + u + `"}`})
		mustError(t, resp, 400, plantstore.CodeInvalidBody)
		if msg := message(t, resp); !strings.HasPrefix(msg, "invalid NewWebhook: url: ") ||
			!strings.Contains(msg, "is not globally reachable") && !strings.Contains(msg, "a loopback name") && !strings.Contains(msg, "invalid host") {
			t.Errorf("POST %s: %q, want the reason", u, msg)
		}
	}
	if resp := guarded.Get(t, tok, "/webhooks"); strings.TrimSpace(string(resp.Body)) != "[]" {
		t.Fatalf("GET /webhooks after refusals: %s, want none stored", resp.Body)
	}

	open, tok := serve(true)
	for _, u := range loopback {
		decodeWebhook(t, open.Do(t, Request{Method: "POST", Path: "/webhooks", Token: tok, Body: `{"url":"` + u + `"}`}), 201)
	}
	for _, u := range invalid {
		resp := open.Do(t, Request{Method: "POST", Path: "/webhooks", Token: tok, Body: `{"url":"` + u + `"}`})
		mustError(t, resp, 400, plantstore.CodeInvalidBody)
		if msg := message(t, resp); !strings.HasPrefix(msg, "invalid NewWebhook: url: invalid host ") {
			t.Errorf("POST %s with private addresses allowed: %q, want invalid host", u, msg)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
