package main

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore/internal/eventjson"
	"github.com/plantstore/plantstore/internal/testkit/pgtest"
	"github.com/plantstore/plantstore/webhook"
)

// TestWebhookTypedEvents: over real HTTP, on both backends, an untyped
// subscription gets each create's plant byte-for-byte as before typed
// subscriptions existed and nothing for updates or deletes; a typed one gets
// a signed PlantEvent envelope for each change of the types it names, the
// same events GET /events lists.
func TestWebhookTypedEvents(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"SQLite", "PostgreSQL"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			db := tempDBPath(t)
			if backend == "PostgreSQL" {
				db = pgtest.NewDatabase(t)
			}
			s := startServer(t, db, "--no-bootstrap-admin", "--webhook-allow-private", "--rate-limit", "0")
			tok := webhookToken(t, db, "alice")
			untyped, all, deletes := newReceiver(t), newReceiver(t), newReceiver(t)
			subscribe(t, s, tok, untyped.URL+"/hook")
			allSecret := subscribeTyped(t, s, tok, all.URL+"/hook", `["plant.deleted","plant.created","plant.updated"]`,
				[]string{"plant.created", "plant.updated", "plant.deleted"})
			deletesSecret := subscribeTyped(t, s, tok, deletes.URL+"/hook", `["plant.deleted"]`, []string{"plant.deleted"})

			for _, step := range []struct{ method, path, body string }{
				{"POST", "/plants", `{"id":7,"name":"Fern","tag":"green"}`},
				{"PATCH", "/plants/7", `{"name":"Boston fern","tag":null}`},
				{"DELETE", "/plants/7", ""},
				{"POST", "/plants", `{"id":8,"name":"Ivy"}`},
			} {
				if status, _, body := do(t, testClient, step.method, s.url+step.path, tok, step.body); status/100 != 2 {
					t.Fatalf("%s %s: %d %s", step.method, step.path, status, body)
				}
			}
			waitFor(t, 20*time.Second, "every delivery", func() bool {
				return len(untyped.got()) >= 2 && len(all.got()) >= 4 && len(deletes.got()) >= 1
			})
			waitNothingPending(t, db) // then no stray extra delivery can still come

			// Untyped: today's bodies, creates only (in any order: deliveries
			// are unordered, even per subscription, as below).
			var bodies []string
			for _, d := range untyped.got() {
				bodies = append(bodies, d.body)
			}
			slices.Sort(bodies)
			if diff := cmp.Diff([]string{`{"id":7,"name":"Fern","tag":"green"}`, `{"id":8,"name":"Ivy"}`}, bodies); diff != "" {
				t.Fatalf("untyped bodies (-want +got):\n%s", diff)
			}

			// Typed: the envelopes, in order, signed; the same bytes as the
			// items of GET /events.
			status, _, listed := do(t, testClient, "GET", s.url+"/events", tok, "")
			if status != 200 {
				t.Fatalf("GET /events: %d %s", status, listed)
			}
			var items []json.RawMessage
			if err := json.Unmarshal(listed, &items); err != nil {
				t.Fatal(err)
			}
			type envelope struct {
				Type      string          `json:"type"`
				ID        string          `json:"id"`
				Seq       int64           `json:"seq"`
				CreatedAt time.Time       `json:"created_at"`
				Data      json.RawMessage `json:"data"`
			}
			check := func(name string, r *receiver, secret string, want []int) {
				t.Helper()
				got := r.got()
				if len(got) != len(want) {
					t.Fatalf("%s: %d deliveries, want %d: %+v", name, len(got), len(want), got)
				}
				// Deliveries are unordered, even per subscription: match each
				// to the GET /events item it is, byte for byte.
				var matched []int
				for i, d := range got {
					if err := webhook.Verify(secret, d.headers, []byte(d.body)); err != nil {
						t.Fatalf("%s delivery %d: webhook.Verify: %v", name, i, err)
					}
					j := slices.IndexFunc(items, func(item json.RawMessage) bool { return string(item) == d.body })
					if j < 0 {
						t.Fatalf("%s delivery %d body\n%s\nis no GET /events item:\n%s", name, i, d.body, listed)
					}
					matched = append(matched, j)
				}
				slices.Sort(matched)
				if diff := cmp.Diff(want, matched); diff != "" {
					t.Fatalf("%s: deliveries of GET /events items (-want +got):\n%s", name, diff)
				}
			}
			if len(items) != 4 {
				t.Fatalf("GET /events lists %d events: %s", len(items), listed)
			}
			want := []struct{ typ, data string }{
				{"plant.created", `{"id":7,"name":"Fern","tag":"green"}`},
				{"plant.updated", `{"id":7,"name":"Boston fern"}`},
				{"plant.deleted", `{"id":7,"name":"Boston fern"}`},
				{"plant.created", `{"id":8,"name":"Ivy"}`},
			}
			// The data's plant times, as each change left them: a create's
			// are its event's time, an update moves updated_at to its own,
			// a delete shows them as they were.
			type times struct{ created, updated time.Time }
			var plant []times
			for i, raw := range items {
				var e envelope
				if err := json.Unmarshal(raw, &e); err != nil {
					t.Fatal(err)
				}
				m := plantTimes.FindSubmatch(e.Data)
				if m == nil {
					t.Fatalf("event %d = %s: no plant times at the end of its data", i, raw)
				}
				data := string(e.Data[:len(e.Data)-len(m[0])]) + "}"
				if e.Type != want[i].typ || e.Seq != int64(i+1) || data != want[i].data || len(e.ID) != len("evt_")+24 || e.CreatedAt.IsZero() {
					t.Fatalf("event %d = %s, want type %s, seq %d, data %s", i, raw, want[i].typ, i+1, want[i].data)
				}
				var tm times
				for j, dst := range []*time.Time{&tm.created, &tm.updated} {
					var err error
					if *dst, err = time.Parse(eventjson.PlantTimeFormat, string(m[j+1])); err != nil {
						t.Fatalf("event %d: %v", i, err)
					}
				}
				plant = append(plant, tm)
				wantTm := times{e.CreatedAt, e.CreatedAt} // a create
				switch e.Type {
				case "plant.updated":
					wantTm = times{plant[0].created, e.CreatedAt}
				case "plant.deleted":
					wantTm = plant[1]
				}
				if !tm.created.Equal(wantTm.created) || !tm.updated.Equal(wantTm.updated) {
					t.Errorf("event %d (%s at %v): plant times %+v, want %+v", i, e.Type, e.CreatedAt, tm, wantTm)
				}
			}
			check("all types", all, allSecret, []int{0, 1, 2, 3})
			check("deletes", deletes, deletesSecret, []int{2})
		})
	}
}

// plantTimes matches the plant's times at the end of an event's data.
var plantTimes = regexp.MustCompile(`,"created_at":"([^"]+)","updated_at":"([^"]+)"}$`)

// subscribeTyped creates a subscription to url for the event types in
// typesJSON, checks the types it answers (in the contract's order) and
// returns its secret.
func subscribeTyped(t *testing.T, s *server, token, url, typesJSON string, wantTypes []string) string {
	t.Helper()
	status, _, body := do(t, testClient, "POST", s.url+"/webhooks", token, `{"url":"`+url+`","types":`+typesJSON+`}`)
	if status != 201 {
		t.Fatalf("POST /webhooks: %d %s", status, body)
	}
	var w struct {
		ID, Secret string
		Types      []string
	}
	if err := json.Unmarshal(body, &w); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantTypes, w.Types); diff != "" {
		t.Fatalf("types (-want +got):\n%s", diff)
	}
	status, _, body = do(t, testClient, "GET", s.url+"/webhooks/"+w.ID, token, "")
	var got struct{ Types []string }
	if err := json.Unmarshal(body, &got); status != 200 || err != nil {
		t.Fatalf("GET /webhooks/%s: %d %s", w.ID, status, body)
	}
	if diff := cmp.Diff(wantTypes, got.Types); diff != "" {
		t.Fatalf("GET types (-want +got):\n%s", diff)
	}
	return w.Secret
}

// TestEventRetention: events older than --event-retention are deleted in
// the background, and the next event keeps counting after them.
func TestEventRetention(t *testing.T) {
	t.Parallel()
	db := tempDBPath(t)
	s := startServer(t, db, "--no-bootstrap-admin", "--rate-limit", "0", "--event-retention", "2s")
	tok := webhookToken(t, db, "alice")
	if status, _, body := do(t, testClient, "POST", s.url+"/plants", tok, `{"id":1,"name":"Fern"}`); status != 200 {
		t.Fatalf("create: %d %s", status, body)
	}
	events := func() string {
		_, _, body := do(t, testClient, "GET", s.url+"/events", tok, "")
		return string(body)
	}
	if got := events(); !strings.Contains(got, `"seq":1`) {
		t.Fatalf("GET /events = %s, want the create", got)
	}
	waitFor(t, 20*time.Second, "the event to be pruned", func() bool { return events() == "[]" })
	if status, _, body := do(t, testClient, "POST", s.url+"/plants", tok, `{"id":2,"name":"Ivy"}`); status != 200 {
		t.Fatalf("create: %d %s", status, body)
	}
	if got := events(); !strings.Contains(got, `"seq":2`) {
		t.Fatalf("GET /events = %s, want seq 2 after the prune", got)
	}
}
