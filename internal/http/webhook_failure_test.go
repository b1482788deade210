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
	"github.com/plantstore/plantstore/internal/testkit/dnstest"
)

// TestWebhookPingNamesTheFailureOnly: a ping that gets no answer answers
// the kind of failure (connection refused, forbidden address, name did not
// resolve) and nothing of what the server learnt on the way: not the
// address a name resolved to, not the server's name servers (":53"). The
// whole error goes to the server's log with the subscription's id. All over
// loopback: the refused receiver is a listener closed before the ping, and
// names resolve through a test resolver (no DNS query leaves the process).
func TestWebhookPingNamesTheFailureOnly(t *testing.T) {
	t.Parallel()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := closed.Addr().(*net.TCPAddr).AddrPort().Port()
	closed.Close() // connecting to it is refused
	resolver := dnstest.New(map[string]netip.Addr{"receiver.test": netip.MustParseAddr("127.0.0.1")})

	// open serves as --webhook-allow-private does: the closed listener is
	// dialled and refuses; guarded as serve does by default.
	pinging := func(allowPrivate bool) *TestServer {
		return MustOpenServer(t, func(ts *TestServer) {
			ts.Service.Sender = sender.New(sender.Options{
				AllowPrivate: allowPrivate,
				Client:       sender.NewClient(sender.ClientOptions{AllowPrivate: allowPrivate, Resolver: resolver.Resolver, Timeout: 5 * time.Second}),
			})
			ts.Service.Delivery.Logger = ts.Logger
		})
	}
	open, guarded := pinging(true), pinging(false)

	for _, tt := range []struct {
		name string
		ts   *TestServer
		url  string
		want string
		log  string // in the server's log line of the ping
	}{
		{"refused", open, fmt.Sprintf("http://127.0.0.1:%d/hook", port), "connection refused", "connect: connection refused"},
		{"forbidden", guarded, fmt.Sprintf("http://receiver.test:%d/hook", port),
			"forbidden address: deliveries there are refused unless the server runs with --webhook-allow-private",
			"forbidden address: 127.0.0.1 is not globally reachable"},
		{"unknown name", guarded, fmt.Sprintf("http://nowhere.test:%d/hook", port), "name did not resolve", "lookup nowhere.test"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tok := tt.ts.Token(t, "alice", plantstore.ScopeWebhooksManage)
			created := decodeWebhook(t, tt.ts.Do(t, Request{Method: "POST", Path: "/webhooks", Token: tok, Body: `{"url":"` + tt.url + `"}`}), 201)
			resp := tt.ts.Do(t, Request{Method: "POST", Path: "/webhooks/" + created.ID + "/ping", Token: tok})
			var got struct {
				Succeeded  bool
				StatusCode int `json:"status_code"`
				Error      string
			}
			if resp.Status != 200 || json.Unmarshal(resp.Body, &got) != nil {
				t.Fatalf("ping: %d %s", resp.Status, resp.Body)
			}
			if got.Succeeded || got.StatusCode != 0 || got.Error != tt.want {
				t.Errorf("ping answered %s, want no answer and error %q", resp.Body, tt.want)
			}
			if body := string(resp.Body); strings.Contains(body, "127.0.0.1") || strings.Contains(body, ":53") {
				t.Errorf("ping answer %s names an address or a name server", body)
			}
			var line string
			for l := range strings.Lines(tt.ts.logs.String()) {
				if strings.Contains(l, `"msg":"webhook: ping failed"`) && strings.Contains(l, `"subscription_id":"`+created.ID+`"`) {
					line = l
				}
			}
			if !strings.Contains(line, tt.log) || strings.Contains(line, *created.Secret) {
				t.Errorf("log line of the ping = %q, want the cause %q (and no secret)", line, tt.log)
			}
		})
	}
}
