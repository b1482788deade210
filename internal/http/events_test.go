package http_test

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/eventjson"
)

// eventItem is one item of GET /events.
type eventItem struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Seq       int64           `json:"seq"`
	CreatedAt string          `json:"created_at"`
	Data      json.RawMessage `json:"data"`
}

// plantTimes matches the plant's times at the end of an event's data.
var plantTimes = regexp.MustCompile(`,"created_at":"([^"]+)","updated_at":"([^"]+)"}$`)

// splitTimes returns an event's data without the plant's times, and the
// times, created and updated ("" when absent).
func splitTimes(data json.RawMessage) (rest, created, updated string) {
	m := plantTimes.FindSubmatch(data)
	if m == nil {
		return string(data), "", ""
	}
	return string(data[:len(data)-len(m[0])]) + "}", string(m[1]), string(m[2])
}

// dataOnly is an event's data without the plant's times.
func dataOnly(data json.RawMessage) string {
	rest, _, _ := splitTimes(data)
	return rest
}

// sameTime reports whether a plant time (six fraction digits) and an
// event's time (as many as needed) are the same instant.
func sameTime(plant, event string) bool {
	a, err1 := time.Parse(time.RFC3339Nano, plant)
	b, err2 := time.Parse(time.RFC3339Nano, event)
	return err1 == nil && err2 == nil && a.Equal(b)
}

func mustEvents(tb testing.TB, resp *Response) []eventItem {
	tb.Helper()
	if resp.Status != 200 {
		tb.Fatalf("status = %d, want 200 (body %s)", resp.Status, resp.Body)
	}
	var out []eventItem
	if err := json.Unmarshal(resp.Body, &out); err != nil || out == nil {
		tb.Fatalf("body %s is not an array of events: %v", resp.Body, err)
	}
	return out
}

// seedEvents makes five events of alice: creates of 1, 2 and 3, an update
// of 2 and a delete of 1.
func seedEvents(t *testing.T, ts *TestServer, tok string) {
	t.Helper()
	for _, r := range []Request{
		{Method: "POST", Path: "/plants", Body: `{"id":1,"name":"Fern","tag":"green"}`},
		{Method: "POST", Path: "/plants", Body: `{"id":2,"name":"Ivy"}`},
		{Method: "POST", Path: "/plants", Body: `{"id":3,"name":"Moss"}`},
		{Method: "PATCH", Path: "/plants/2", Body: `{"tag":"climbing"}`},
		{Method: "DELETE", Path: "/plants/1"},
	} {
		r.Token = tok
		if resp := ts.Do(t, r); resp.Status/100 != 2 {
			t.Fatalf("%s %s: %d %s", r.Method, r.Path, resp.Status, resp.Body)
		}
	}
}

// TestListEvents: GET /events pages the owner's events by seq with Link,
// filters by type, refuses a bad query with 40003 and shows another owner
// nothing; its items are the events' envelopes byte for byte.
func TestListEvents(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t)
	tok := ts.Token(t, "alice", plantstore.ScopePlantsRead, plantstore.ScopePlantsWrite)
	seedEvents(t, ts, tok)

	t.Run("Paging", func(t *testing.T) {
		var got []eventItem
		var links []string
		path := "/events?limit=2"
		for path != "" {
			resp := ts.Get(t, tok, path)
			got = append(got, mustEvents(t, resp)...)
			link := resp.Header.Get("Link")
			links = append(links, link)
			path = ""
			if link != "" {
				path = strings.TrimSuffix(strings.TrimPrefix(link, "<"), `>; rel="next"`)
			}
		}
		wantLinks := []string{`</events?after=2&limit=2>; rel="next"`, `</events?after=4&limit=2>; rel="next"`, ""}
		if diff := cmp.Diff(wantLinks, links); diff != "" {
			t.Errorf("links (-want +got):\n%s", diff)
		}
		type ev struct {
			Seq        int64
			Type, Data string
		}
		var evs []ev
		type times struct{ created, updated string }
		at := map[int64]times{}
		for _, e := range got {
			data, created, updated := splitTimes(e.Data)
			evs = append(evs, ev{e.Seq, e.Type, data})
			at[e.Seq] = times{created, updated}
			if !strings.HasPrefix(e.ID, "evt_") || len(e.ID) != 28 {
				t.Errorf("event %d id %q", e.Seq, e.ID)
			}
			if _, err := time.Parse(eventjson.PlantTimeFormat, created); err != nil || len(created) != len("2006-01-02T15:04:05.000000Z") {
				t.Errorf("event %d: plant created_at %q: %v", e.Seq, created, err)
			}
		}
		// The plant's times as each change left them: a create's are its
		// event's time, an update moves updated_at to its own, a delete
		// shows them as they were.
		for seq, e := range got {
			tm, ev := at[e.Seq], e.CreatedAt
			ok := true
			switch seq + 1 {
			case 1, 2, 3:
				ok = sameTime(tm.created, ev) && sameTime(tm.updated, ev)
			case 4:
				ok = tm.created == at[2].created && sameTime(tm.updated, ev)
			case 5:
				ok = tm == at[1]
			}
			if !ok {
				t.Errorf("event %d (%s at %s): plant times %+v", e.Seq, e.Type, e.CreatedAt, tm)
			}
		}
		want := []ev{
			{1, plantstore.EventPlantCreated, `{"id":1,"name":"Fern","tag":"green"}`},
			{2, plantstore.EventPlantCreated, `{"id":2,"name":"Ivy"}`},
			{3, plantstore.EventPlantCreated, `{"id":3,"name":"Moss"}`},
			{4, plantstore.EventPlantUpdated, `{"id":2,"name":"Ivy","tag":"climbing"}`},
			{5, plantstore.EventPlantDeleted, `{"id":1,"name":"Fern","tag":"green"}`},
		}
		if diff := cmp.Diff(want, evs); diff != "" {
			t.Fatalf("events (-want +got):\n%s", diff)
		}
		// HEAD answers the same Link, no body.
		resp := ts.Do(t, Request{Method: "HEAD", Path: "/events?limit=2&after=1", Token: tok})
		if got, want := resp.Header.Get("Link"), `</events?after=3&limit=2>; rel="next"`; resp.Status != 200 || got != want || len(resp.Body) != 0 {
			t.Fatalf("HEAD: %d Link %q body %q, want 200 %q", resp.Status, got, resp.Body, want)
		}
	})

	t.Run("SameAsEnvelope", func(t *testing.T) {
		events, _, err := ts.Services.Events.FindEvents(context.Background(), plantstore.EventFilter{Owner: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		parts := make([]string, len(events))
		for i, e := range events {
			parts[i] = string(eventjson.AppendEnvelope(nil, e))
		}
		if got, want := string(ts.Get(t, tok, "/events").Body), "["+strings.Join(parts, ",")+"]"; got != want {
			t.Fatalf("GET /events\n%s\nwant the envelopes\n%s", got, want)
		}
	})

	t.Run("Type", func(t *testing.T) {
		resp := ts.Get(t, tok, "/events?type=plant.created&limit=1&after=1")
		got := mustEvents(t, resp)
		if len(got) != 1 || got[0].Seq != 2 || got[0].Type != plantstore.EventPlantCreated {
			t.Fatalf("events %+v, want seq 2 only", got)
		}
		if link, want := resp.Header.Get("Link"), `</events?after=2&limit=1&type=plant.created>; rel="next"`; link != want {
			t.Fatalf("Link %q, want %q", link, want)
		}
		got = mustEvents(t, ts.Get(t, tok, "/events?type=plant.deleted"))
		if len(got) != 1 || got[0].Seq != 5 || dataOnly(got[0].Data) != `{"id":1,"name":"Fern","tag":"green"}` {
			t.Fatalf("deleted events %+v, want seq 5 with the plant as it was", got)
		}
	})

	t.Run("BadQuery", func(t *testing.T) {
		for _, q := range []string{"type=plant.eaten", "type=", "limit=0", "limit=1001", "after=-1", "after=x"} {
			t.Run(q, func(t *testing.T) {
				mustError(t, ts.Get(t, tok, "/events?"+q), 400, plantstore.CodeInvalidQuery)
			})
		}
	})

	t.Run("OtherOwner", func(t *testing.T) {
		bob := ts.Token(t, "bob", plantstore.KnownScopes...)
		if got := mustEvents(t, ts.Get(t, bob, "/events")); len(got) != 0 {
			t.Fatalf("bob sees %d of alice's events", len(got))
		}
		// Bob's own events start at seq 1: the sequence is per owner.
		if resp := ts.Post(t, bob, `{"id":1,"name":"Cactus"}`); resp.Status != 200 {
			t.Fatalf("create: %d %s", resp.Status, resp.Body)
		}
		if got := mustEvents(t, ts.Get(t, bob, "/events")); len(got) != 1 || got[0].Seq != 1 {
			t.Fatalf("bob's events %+v, want one with seq 1", got)
		}
	})

	t.Run("Metric", func(t *testing.T) {
		// alice's five and bob's one (OtherOwner), counted after commit.
		body := string(ts.Metrics(t).Body)
		for _, want := range []string{
			`plantstore_events_written_total{type="plant.created"} 4`,
			`plantstore_events_written_total{type="plant.updated"} 1`,
			`plantstore_events_written_total{type="plant.deleted"} 1`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
	})

	t.Run("Scope", func(t *testing.T) {
		w := ts.Token(t, "alice", plantstore.ScopePlantsWrite)
		mustError(t, ts.Get(t, w, "/events"), 403, plantstore.CodeInsufficientScope)
	})
}

// TestWebhookTypes: POST /webhooks takes types (any order, repeats
// collapse) and answers them in the contract's order; an unknown type is
// 400 40002; without types the subscription shows none.
func TestWebhookTypes(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t)
	tok := ts.Token(t, "alice", plantstore.ScopeWebhooksManage)
	create := func(body string) *Response {
		return ts.Do(t, Request{Method: "POST", Path: "/webhooks", Token: tok, Body: body})
	}
	types := func(resp *Response) []string {
		t.Helper()
		var w struct {
			Types []string `json:"types"`
		}
		if resp.Status != 201 || json.Unmarshal(resp.Body, &w) != nil {
			t.Fatalf("%d %s, want 201 and a Webhook", resp.Status, resp.Body)
		}
		return w.Types
	}
	got := types(create(`{"url":"http://127.0.0.1:9/a","types":["plant.deleted","plant.created","plant.deleted"]}`))
	if diff := cmp.Diff([]string{plantstore.EventPlantCreated, plantstore.EventPlantDeleted}, got); diff != "" {
		t.Errorf("types (-want +got):\n%s", diff)
	}
	resp := create(`{"url":"http://127.0.0.1:9/b"}`)
	if got := types(resp); got != nil || strings.Contains(string(resp.Body), `"types"`) {
		t.Errorf("untyped subscription answers %s", resp.Body)
	}
	mustError(t, create(`{"url":"http://127.0.0.1:9/c","types":["plant.eaten"]}`), 400, plantstore.CodeInvalidBody)
}
