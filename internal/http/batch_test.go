package http_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	plantstorehttp "github.com/plantstore/plantstore/internal/http"
)

// postBatch sends body to POST /plants/batch.
func postBatch(tb testing.TB, ts *TestServer, token, body string) *Response {
	tb.Helper()
	return ts.Do(tb, Request{Method: "POST", Path: "/plants/batch", Token: token, Body: body})
}

// mustBatchError checks that resp is a BatchError with the status, code
// and index (-1: none), its message naming the item.
func mustBatchError(tb testing.TB, resp *Response, status int, code int32, index int) {
	tb.Helper()
	if resp.Status != status {
		tb.Fatalf("status = %d, want %d (body %s)", resp.Status, status, resp.Body)
	}
	var e struct {
		Error   int32  `json:"error"`
		Message string `json:"message"`
		Index   *int   `json:"index"`
	}
	dec := json.NewDecoder(bytes.NewReader(resp.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		tb.Fatalf("body %s is not a BatchError: %v", resp.Body, err)
	}
	if e.Error != code {
		tb.Fatalf("error = %d, want %d (body %s)", e.Error, code, resp.Body)
	}
	switch {
	case index < 0 && e.Index != nil:
		tb.Fatalf("index = %d, want none (body %s)", *e.Index, resp.Body)
	case index >= 0 && (e.Index == nil || *e.Index != index):
		tb.Fatalf("body %s, want index %d", resp.Body, index)
	case index >= 0 && !strings.HasPrefix(e.Message, fmt.Sprintf("plants[%d]: ", index)):
		tb.Fatalf("message %q does not name plants[%d]", e.Message, index)
	}
}

func TestAddPlants(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t, fixedClock)
	tok := ts.Token(t, "alice")
	if resp := ts.Post(t, tok, `{"id":1,"name":"Fern","tag":"green"}`); resp.Status != 200 {
		t.Fatalf("create: %d %s", resp.Status, resp.Body)
	}

	// The plants as stored, in the request's order: a replay of plant 1
	// among them answers the stored plant.
	resp := postBatch(t, ts, tok, `{"plants":[{"id":3,"name":"Moss"},{"id":1,"name":"Fern","tag":"green"},{"id":2,"name":"Ivy","tag":"climbing"}]}`)
	if resp.Status != 200 {
		t.Fatalf("status = %d, body %s", resp.Status, resp.Body)
	}
	want := `{"plants":[` + atFixedNow(`{"id":3,"name":"Moss"}`) + `,` + atFixedNow(`{"id":1,"name":"Fern","tag":"green"}`) + `,` +
		atFixedNow(`{"id":2,"name":"Ivy","tag":"climbing"}`) + `]}`
	if diff := cmp.Diff(want, string(resp.Body)); diff != "" {
		t.Fatalf("body (-want +got):\n%s", diff)
	}
	if got := mustPlants(t, ts.Get(t, tok, "/plants")); len(got) != 3 {
		t.Fatalf("%d plants listed, want 3", len(got))
	}
	// The same batch again is a replay of every item.
	if again := postBatch(t, ts, tok, `{"plants":[{"id":3,"name":"Moss"},{"id":1,"name":"Fern","tag":"green"},{"id":2,"name":"Ivy","tag":"climbing"}]}`); again.Status != 200 || string(again.Body) != want {
		t.Fatalf("replayed batch: %d %s, want 200 %s", again.Status, again.Body, want)
	}
	// Another owner's ids are its own.
	if other := postBatch(t, ts, ts.Token(t, "bob"), `{"plants":[{"id":1,"name":"Cactus"}]}`); other.Status != 200 {
		t.Fatalf("bob's batch: %d %s", other.Status, other.Body)
	}
}

// TestAddPlants_Invalid: a batch refused answers why and which item, and
// stores nothing.
func TestAddPlants_Invalid(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t, func(s *TestServer) { s.BatchMax = 3 })
	tok := ts.Token(t, "alice")
	if resp := ts.Post(t, tok, `{"id":1,"name":"Fern"}`); resp.Status != 200 {
		t.Fatalf("create: %d %s", resp.Status, resp.Body)
	}
	for _, tt := range []struct {
		name   string
		body   string
		status int
		code   int32
		index  int // -1: none
	}{
		{"NameEmpty", `{"plants":[{"id":10,"name":"New"},{"id":11,"name":""}]}`, 400, plantstore.CodeInvalidBody, 1},
		{"SameIDTwice", `{"plants":[{"id":10,"name":"New"},{"id":11,"name":"B"},{"id":10,"name":"New"}]}`, 400, plantstore.CodeInvalidBody, 2},
		{"Conflict", `{"plants":[{"id":10,"name":"New"},{"id":1,"name":"Not Fern"}]}`, 409, plantstore.CodeConflict, 1},
		{"TooMany", `{"plants":[{"id":10,"name":"a"},{"id":11,"name":"b"},{"id":12,"name":"c"},{"id":13,"name":"d"}]}`, 413, plantstore.CodeBodyTooLarge, -1},
		{"Empty", `{"plants":[]}`, 400, plantstore.CodeInvalidBody, -1},
		{"NoPlants", `{}`, 400, plantstore.CodeInvalidBody, -1},
		{"NotAnObject", `[{"id":10,"name":"New"}]`, 400, plantstore.CodeInvalidBody, -1},
		{"ItemNotAnObject", `{"plants":[{"id":10,"name":"New"},7]}`, 400, plantstore.CodeInvalidBody, 1},
		{"ItemIDMissing", `{"plants":[{"id":10,"name":"New"},{"id":11,"name":"b"},{"name":"c"}]}`, 400, plantstore.CodeInvalidBody, 2},
		{"NotJSON", `{"plants":[`, 400, plantstore.CodeMalformedJSON, -1},
		{"BodyTooLarge", `{"plants":[{"id":10,"name":"New","pad":"` + strings.Repeat("x", plantstorehttp.BatchBodyBytes(3)) + `"}]}`, 413, plantstore.CodeBodyTooLarge, -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp := postBatch(t, ts, tok, tt.body)
			mustBatchError(t, resp, tt.status, tt.code, tt.index)
			if tt.name == "TooMany" && !strings.Contains(string(resp.Body), "at most 3 plants") {
				t.Fatalf("body %s does not say the limit", resp.Body)
			}
		})
	}
	if got := mustPlants(t, ts.Get(t, tok, "/plants")); len(got) != 1 {
		t.Fatalf("refused batches stored plants: %v", got)
	}
	// A body of a full batch's size is taken: the limit is the batch's,
	// not a single plant's 64 KiB.
	big := fmt.Sprintf(`{"plants":[{"id":20,"name":"a","pad":"%s"},{"id":21,"name":"b"}]}`, strings.Repeat("x", plantstore.MaxBodyBytes+10))
	if resp := postBatch(t, ts, tok, big); resp.Status != 200 {
		t.Fatalf("batch of %d bytes: %d %s", len(big), resp.Status, resp.Body)
	}
	// POST /plants keeps its own limit.
	mustError(t, ts.Post(t, tok, `{"id":30,"name":"a","pad":"`+strings.Repeat("x", plantstore.MaxBodyBytes)+`"}`), 413, plantstore.CodeBodyTooLarge)
	// plants:read cannot create.
	mustError(t, postBatch(t, ts, ts.Token(t, "alice", "plants:read"), `{"plants":[{"id":40,"name":"a"}]}`), 403, plantstore.CodeInsufficientScope)
}

// TestAddPlants_RateLimit: a batch spends a request per plant, all or
// none.
func TestAddPlants_RateLimit(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t, func(s *TestServer) {
		s.RateLimit, s.RateBurst = 0.01, 5 // one request back per 100 s: no refill during the test
	})
	tok := ts.Token(t, "alice")
	resp := postBatch(t, ts, tok, `{"plants":[{"id":1,"name":"a"},{"id":2,"name":"b"},{"id":3,"name":"c"}]}`)
	if resp.Status != 200 {
		t.Fatalf("first batch: %d %s", resp.Status, resp.Body)
	}
	if got, want := resp.Header.Get("RateLimit"), `"token";r=2;`; !strings.HasPrefix(got, want) {
		t.Fatalf("RateLimit = %q, want it to start %q", got, want)
	}
	// Three more plants than the two left: refused whole.
	resp = postBatch(t, ts, tok, `{"plants":[{"id":4,"name":"d"},{"id":5,"name":"e"},{"id":6,"name":"f"}]}`)
	mustError(t, resp, 429, plantstore.CodeRateLimited)
	if resp.Header.Get("Retry-After") == "" {
		t.Fatal("429 without Retry-After")
	}
	// More than the bucket holds: never, and the message says so.
	resp = postBatch(t, ts, ts.Token(t, "bob"), `{"plants":[{"id":1,"name":"a"},{"id":2,"name":"b"},{"id":3,"name":"c"},{"id":4,"name":"d"},{"id":5,"name":"e"},{"id":6,"name":"f"}]}`)
	mustError(t, resp, 429, plantstore.CodeRateLimited)
	if !strings.Contains(string(resp.Body), "smaller batches") {
		t.Fatalf("body %s does not say to send smaller batches", resp.Body)
	}
	// alice's refused batch stored nothing, and left her what it found:
	// the request itself (one) is spent, so one is left.
	resp = ts.Get(t, tok, "/plants")
	if got := mustPlants(t, resp); len(got) != 3 {
		t.Fatalf("%d plants, want the first batch's 3", len(got))
	}
}
