package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore/internal/testkit/pgtest"
)

// TestPatchNoChange: over real HTTP, on both backends, a PATCH that leaves
// name and tag as they are answers 200 with the plant and writes nothing,
// without If-Match as with it: the answer and the ETag are those of the
// plant as created (updated_at too), GET /events lists no plant.updated,
// and a subscription to plant.updated gets no delivery for it.
func TestPatchNoChange(t *testing.T) {
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
			rcv := newReceiver(t)
			subscribeTyped(t, s, tok, rcv.URL+"/hook", `["plant.updated"]`, []string{"plant.updated"})

			status, _, created := do(t, testClient, "POST", s.url+"/plants", tok, `{"id":7,"name":"Fern","tag":"green"}`)
			if status != 200 {
				t.Fatalf("POST /plants: %d %s", status, created)
			}
			var plant map[string]any
			if err := json.Unmarshal(created, &plant); err != nil {
				t.Fatalf("POST /plants body %q: %v", created, err)
			}
			if diff := cmp.Diff(map[string]any{"id": 7.0, "name": "Fern", "tag": "green"}, createdPlant(t, plant)); diff != "" {
				t.Fatalf("POST /plants (-want +got):\n%s", diff)
			}
			status, header, body := do(t, testClient, "GET", s.url+"/plants/7", tok, "")
			etag := header.Get("ETag")
			if status != 200 || etag == "" || string(body) != string(created) {
				t.Fatalf("GET /plants/7: %d %s, ETag %q; want 200 %s and an ETag", status, body, etag, created)
			}
			for _, tc := range []struct{ body, ifMatch string }{
				{`{"name":"Fern"}`, ""},
				{`{"tag":"green"}`, ""},
				{`{"name":"Fern","tag":"green"}`, ""},
				{`{}`, ""},
				{`{"name":"Fern","tag":"green"}`, etag},
				{`{"name":"Fern"}`, "*"},
			} {
				// The plant as created, updated_at too: nothing changed.
				status, header, body := patchIfMatch(t, s.url+"/plants/7", tok, tc.body, tc.ifMatch)
				if status != 200 || string(body) != string(created) || header.Get("ETag") != etag {
					t.Fatalf("PATCH %s (If-Match %q): %d %s, ETag %q; want 200 %s, %s", tc.body, tc.ifMatch, status, body, header.Get("ETag"), created, etag)
				}
			}
			events := func() []string {
				t.Helper()
				status, _, body := do(t, testClient, "GET", s.url+"/events", tok, "")
				var list []struct{ Type string }
				if err := json.Unmarshal(body, &list); status != 200 || err != nil {
					t.Fatalf("GET /events: %d %s (%v)", status, body, err)
				}
				var types []string
				for _, e := range list {
					types = append(types, e.Type)
				}
				return types
			}
			if got := events(); len(got) != 1 || got[0] != "plant.created" {
				t.Fatalf("GET /events after PATCHes that change nothing: %v; want the create alone", got)
			}

			// A change moves updated_at on, and so the ETag (the times
			// have one width: as strings, later is greater).
			status, header, body = do(t, testClient, "PATCH", s.url+"/plants/7", tok, `{"name":"Moss"}`)
			var changed map[string]any
			if err := json.Unmarshal(body, &changed); status != 200 || err != nil {
				t.Fatalf("PATCH a change: %d %s", status, body)
			}
			updated, _ := changed["updated_at"].(string)
			if changed["created_at"] != plant["created_at"] || !plantTimeRE.MatchString(updated) || updated <= plant["updated_at"].(string) || header.Get("ETag") == etag {
				t.Fatalf("PATCH a change: %s, ETag %s; want created_at %s kept, updated_at later, an ETag other than %s", body, header.Get("ETag"), plant["created_at"], etag)
			}
			// A change is an event and a delivery; the receiver then has
			// that one alone. A delivery is written with its event, in one
			// transaction: with the change's the only plant.updated event,
			// no other delivery can come: nothing to wait for.
			if got := events(); len(got) != 2 || got[1] != "plant.updated" {
				t.Fatalf("GET /events after a change: %v", got)
			}
			waitFor(t, 20*time.Second, "the change's delivery", func() bool { return len(rcv.got()) >= 1 })
			if got := rcv.got(); len(got) != 1 || !strings.Contains(got[0].body, `"Moss"`) {
				t.Fatalf("the receiver got %d deliveries, want the change's alone: %+v", len(got), got)
			}
		})
	}
}

// patchIfMatch sends PATCH url with body, and If-Match when ifMatch is not
// empty.
func patchIfMatch(t *testing.T, url, token, body, ifMatch string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest("PATCH", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/merge-patch+json")
	if ifMatch != "" {
		req.Header.Set("If-Match", ifMatch)
	}
	res, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, res.Header, b
}
