package http_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
	plantstorehttp "github.com/plantstore/plantstore/internal/http"
)

// mustErrorMessage is mustError that also checks the message.
func mustErrorMessage(tb testing.TB, resp *Response, status int, code int32, msg string) {
	tb.Helper()
	mustError(tb, resp, status, code)
	var e apiError
	if err := json.Unmarshal(resp.Body, &e); err != nil {
		tb.Fatal(err)
	}
	if got := *e.Message; got != msg {
		tb.Fatalf("message = %q\n          want %q", got, msg)
	}
}

// TestAddPlant_UnstorableJSON: a body that is well-formed JSON but holds
// U+0000, a key twice in one object or a lone surrogate escape is refused
// with 400 40002 naming the schema, where and what, and stores nothing.
func TestAddPlant_UnstorableJSON(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t)
	tok := ts.Token(t, "alice")
	for _, tt := range []struct{ name, body, msg string }{
		{"NULName", `{"id":1,"name":"Fern\u0000"}`, `invalid NewPlant: name: must not contain U+0000 (\u0000)`},
		{"NULTag", `{"id":1,"name":"Fern","tag":"\u0000green"}`, `invalid NewPlant: tag: must not contain U+0000 (\u0000)`},
		{"NULUnknownField", `{"id":1,"name":"Fern","x":{"y":["\u0000"]}}`, `invalid NewPlant: x.y[0]: must not contain U+0000 (\u0000)`},
		{"NULKey", `{"id":1,"name":"Fern","\u0000":1}`, `invalid NewPlant: an object key must not contain U+0000 (\u0000)`},
		{"DuplicateName", `{"id":1,"name":"Fern","name":"Ivy"}`, `invalid NewPlant: duplicate key "name"`},
		{"DuplicateID", `{"id":1,"name":"Fern","id":2}`, `invalid NewPlant: duplicate key "id"`},
		{"DuplicateEscaped", `{"id":1,"name":"Fern","t\u0061g":"a","tag":"b"}`, `invalid NewPlant: duplicate key "tag"`},
		{"DuplicateNested", `{"id":1,"name":"Fern","x":[{},{"a":1,"a":1}]}`, `invalid NewPlant: x[1]: duplicate key "a"`},
		{"LoneHigh", `{"id":1,"name":"\ud800"}`, `invalid NewPlant: name: must not contain a lone surrogate (\ud800 not followed by a low surrogate \udc00-\udfff)`},
		{"LoneHighOther", `{"id":1,"name":"\udbff"}`, `invalid NewPlant: name: must not contain a lone surrogate (\udbff not followed by a low surrogate \udc00-\udfff)`},
		{"LoneLow", `{"id":1,"name":"Fern","tag":"x\uDC00"}`, `invalid NewPlant: tag: must not contain a lone surrogate (\udc00 not after a high surrogate \ud800-\udbff)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mustErrorMessage(t, ts.Post(t, tok, tt.body), http.StatusBadRequest, plantstore.CodeInvalidBody, tt.msg)
		})
	}
	if got := mustPlants(t, ts.Get(t, tok, "/plants")); len(got) != 0 {
		t.Fatalf("%d plants stored from refused bodies: %v", len(got), got)
	}

	// Refused after authentication only, as every body check: without a
	// token the answer is 401.
	resp := ts.Post(t, "", `{"id":1,"name":"a","name":"b"}`)
	mustError(t, resp, http.StatusUnauthorized, plantstore.CodeTokenMissing)

	// Escapes that make characters are taken, pairs of surrogates included.
	resp = ts.Post(t, tok, `{"id":1,"name":"\u00e9\ud83c\udf31\ufffd","tag":"\\u0000"}`)
	if resp.Status != http.StatusOK {
		t.Fatalf("status %d: %s", resp.Status, resp.Body)
	}
	var p struct{ Name, Tag string }
	if err := json.Unmarshal(resp.Body, &p); err != nil {
		t.Fatal(err)
	}
	if p.Name != "é🌱\ufffd" || p.Tag != `\u0000` {
		t.Fatalf("stored name %q, tag %q", p.Name, p.Tag)
	}
}

// TestAddPlant_LoneSurrogateIsNoReplay: a lone surrogate is not U+FFFD, so
// a create of U+FFFD followed by one of \ud800 is not an idempotent replay
// of it (before, both were stored as U+FFFD and the second answered 200).
func TestAddPlant_LoneSurrogateIsNoReplay(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t)
	tok := ts.Token(t, "alice")
	if resp := ts.Post(t, tok, `{"id":1,"name":"\ufffd"}`); resp.Status != http.StatusOK {
		t.Fatalf("status %d: %s", resp.Status, resp.Body)
	}
	for _, body := range []string{`{"id":1,"name":"\ud800"}`, `{"id":1,"name":"\udfff"}`} {
		mustError(t, ts.Post(t, tok, body), http.StatusBadRequest, plantstore.CodeInvalidBody)
	}
}

// TestCreateWebhook_DuplicateKey: the checks hold for every body, named by
// its schema.
func TestCreateWebhook_DuplicateKey(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t)
	tok := ts.Token(t, "alice", plantstore.ScopeWebhooksManage)
	resp := ts.Do(t, Request{Method: "POST", Path: "/webhooks", Token: tok,
		Body: `{"url":"http://127.0.0.1:1/a","url":"http://127.0.0.1:1/b"}`})
	mustErrorMessage(t, resp, http.StatusBadRequest, plantstore.CodeInvalidBody, `invalid NewWebhook: duplicate key "url"`)
	resp = ts.Do(t, Request{Method: "POST", Path: "/webhooks", Token: tok, Body: `{"url":"http://127.0.0.1:1/\u0000"}`})
	mustErrorMessage(t, resp, http.StatusBadRequest, plantstore.CodeInvalidBody, `invalid NewWebhook: url: must not contain U+0000 (\u0000)`)
}

// TestListPlants_ErrTag: a tag filter no tag can match, with U+0000 or not
// UTF-8, is 400 40002, the code of those string faults in bodies too
// (PostgreSQL failed on it with a 500; storetest runs the same on both
// backends).
func TestListPlants_ErrTag(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t)
	tok := ts.Token(t, "alice")
	if resp := ts.Post(t, tok, `{"id":1,"name":"Fern","tag":"green"}`); resp.Status != http.StatusOK {
		t.Fatalf("status %d: %s", resp.Status, resp.Body)
	}
	for _, tt := range []struct{ query, msg string }{
		{"tag=%00", `invalid query parameter "tag": must not contain U+0000`},
		{"tag=green%00", `invalid query parameter "tag": must not contain U+0000`},
		{"limit=5&tag=%00green", `invalid query parameter "tag": must not contain U+0000`},
		{"tag=%FF", `invalid query parameter "tag": must be valid UTF-8`},
	} {
		t.Run(tt.query, func(t *testing.T) {
			mustErrorMessage(t, ts.Get(t, tok, "/plants?"+tt.query), http.StatusBadRequest, plantstore.CodeInvalidBody, tt.msg)
		})
	}
	if got := mustPlants(t, ts.Get(t, tok, "/plants?tag=green")); len(got) != 1 {
		t.Fatalf("tag=green: %d plants, want 1", len(got))
	}
}

// TestList_ErrRepeatedParam: a query parameter given twice is 400 40002,
// as a duplicate key in a body is (the generated decoder took the first
// value, a proxy or cache may take the last); names compare decoded.
func TestList_ErrRepeatedParam(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t)
	tok := ts.Token(t, "alice", plantstore.ScopePlantsRead, plantstore.ScopeWebhooksManage)
	for _, tt := range []struct{ path, name string }{
		{"/plants?limit=1&limit=1000", "limit"},
		{"/plants?q=a&limit=5&q=b", "q"},
		{"/plants?after=1&%61fter=2", "after"},
		{"/plants?sort=id&sort=-id", "sort"},
		{"/plants?created_after=2026-01-01T00:00:00Z&created_after=2026-01-01T00:00:00Z", "created_after"},
		{"/webhooks?limit=1&limit=2", "limit"},
	} {
		t.Run(tt.path, func(t *testing.T) {
			mustErrorMessage(t, ts.Get(t, tok, tt.path), http.StatusBadRequest, plantstore.CodeInvalidBody,
				fmt.Sprintf("invalid query parameter %q: given more than once: send it once", tt.name))
		})
	}
	// tag is a list: given once per value.
	for _, path := range []string{"/plants?limit=1&after=2&tag=a", "/plants?tag=a&limit=5&tag=b", "/plants?tag=&tag=", "/plants?limit=1&", "/webhooks?limit=1&after=whk_0000000000000001"} {
		if resp := ts.Get(t, tok, path); resp.Status != http.StatusOK {
			t.Fatalf("%s: status %d: %s", path, resp.Status, resp.Body)
		}
	}
}

// doHeaders sends a request with the header values as given, several of a
// name included.
func doHeaders(t *testing.T, ts *TestServer, method, path, body string, h http.Header) *Response {
	t.Helper()
	req, err := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: data}
}

// TestAuthorization_Twice: a request with more than one Authorization header
// is 400 40005 on every API route, before authentication (whichever header
// is valid, and without spending the client's failed-auth budget); the ops
// endpoints, which authenticate nobody, ignore it.
func TestAuthorization_Twice(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t, func(s *TestServer) { s.AuthFailureLimit, s.AuthFailureBurst = 1, 1 })
	alice, bob := "Bearer "+ts.Token(t, "alice"), "Bearer "+ts.Token(t, "bob")
	const msg = "more than one Authorization header: send one"
	for _, tt := range []struct {
		name         string
		method, path string
		auth         []string
	}{
		{"TwoOwners", "GET", "/plants", []string{alice, bob}},
		{"SameTwice", "GET", "/plants", []string{alice, alice}},
		{"ValidSecond", "GET", "/plants/1", []string{"Bearer nope", alice}},
		{"ValidFirst", "DELETE", "/plants/1", []string{alice, "Bearer nope"}},
		{"EmptySecond", "GET", "/plants", []string{alice, ""}},
		{"BothInvalid", "GET", "/plants", []string{"Bearer a", "Bearer b"}}, // not 401, and no 429 after it
		{"Post", "POST", "/plants", []string{alice, bob}},
		{"Webhooks", "GET", "/webhooks", []string{alice, bob}},
		{"UnknownPath", "GET", "/nope", []string{alice, bob}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{"Authorization": tt.auth, "Content-Type": {"application/json"}}
			resp := doHeaders(t, ts, tt.method, tt.path, `{"id":1,"name":"Fern"}`, h)
			mustErrorMessage(t, resp, http.StatusBadRequest, plantstore.CodeInvalidHeader, msg)
		})
	}
	if got := mustPlants(t, ts.Get(t, strings.TrimPrefix(alice, "Bearer "), "/plants")); len(got) != 0 {
		t.Fatalf("%d plants stored by a refused request", len(got))
	}
	// The failed-auth budget (a burst of 1) is unspent: one bad token is a
	// 401, not a 429.
	mustError(t, ts.Get(t, "nope", "/plants"), http.StatusUnauthorized, plantstore.CodeTokenInvalid)

	for _, path := range []string{"/healthz", "/readyz", "/openapi.json"} {
		resp := doHeaders(t, ts, "GET", path, "", http.Header{"Authorization": {alice, bob}})
		if resp.Status != http.StatusOK {
			t.Fatalf("%s with two Authorization headers: status %d: %s", path, resp.Status, resp.Body)
		}
	}
}

// TestLastEventID_Twice: a request with more than one Last-Event-ID header
// is 400 40005 as one with two Authorization headers is (the stream would
// otherwise resume after the first value), before authentication.
func TestLastEventID_Twice(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t)
	auth := "Bearer " + ts.Token(t, "alice", plantstore.ScopePlantsRead)
	const msg = "more than one Last-Event-ID header: send one"
	for _, tt := range []struct {
		name   string
		method string
		h      http.Header
	}{
		{"Different", "GET", http.Header{"Authorization": {auth}, "Last-Event-Id": {"1", "2"}}},
		{"SameTwice", "GET", http.Header{"Authorization": {auth}, "Last-Event-Id": {"1", "1"}}},
		{"NoToken", "GET", http.Header{"Last-Event-Id": {"1", "2"}}},
		{"Head", "HEAD", http.Header{"Authorization": {auth}, "Last-Event-Id": {"1", "2"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req, err := http.NewRequest(tt.method, ts.URL+"/events/stream", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header = tt.h
			// Bounded: a stream accepted by mistake does not end by itself.
			client := &http.Client{Timeout: 5 * time.Second}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("status %d, want 400", resp.StatusCode)
			}
			if tt.method == "HEAD" {
				return
			}
			data, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			mustErrorMessage(t, &Response{Status: resp.StatusCode, Header: resp.Header, Body: data}, http.StatusBadRequest, plantstore.CodeInvalidHeader, msg)
		})
	}
	// One is fine.
	if resp := doHeaders(t, ts, "HEAD", "/events/stream", "", http.Header{"Authorization": {auth}, "Last-Event-Id": {"1"}}); resp.Status != http.StatusOK {
		t.Fatalf("one Last-Event-ID: status %d", resp.Status)
	}
}

// TestMalformedJSON_Position: a body that is not well-formed JSON is
// 400 40001 saying on which line and column (characters) it goes wrong.
func TestMalformedJSON_Position(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t)
	tok := ts.Token(t, "alice", plantstore.ScopePlantsWrite, plantstore.ScopeTokensManage)
	for _, tt := range []struct {
		name, path, body, msg string
	}{
		{"MissingValue", "/plants", `{"id":1,"name":}`, "line 1, column 16: invalid character '}' looking for beginning of value"},
		{"Truncated", "/plants", `{"id":1,"name":"Fern"`, "line 1, column 22: unexpected end of JSON input"},
		{"Lines", "/plants", "{\n  \"id\": 1,\n  \"name\": Fern\n}", "line 3, column 11: invalid character 'F' looking for beginning of value"},
		{"Trailing", "/plants", `{"id":1,"name":"Fern"} x`, "line 1, column 24: invalid character 'x' after top-level value"},
		{"Token", "/tokens", `{"scopes":["plants:read",]}`, "line 1, column 26: invalid character ']' looking for beginning of value"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp := ts.Do(t, Request{Method: "POST", Path: tt.path, Token: tok, Body: tt.body})
			mustErrorMessage(t, resp, http.StatusBadRequest, plantstore.CodeMalformedJSON, "request body is not valid JSON at "+tt.msg)
		})
	}
}

// TestCheckBodyAllocs: the checks of a common body allocate nothing.
func TestCheckBodyAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items")
	}
	body := []byte(`{"id":1234567,"name":"Monstera deliciosa","tag":"tropical"}`)
	if n := testing.AllocsPerRun(100, func() {
		if err := plantstorehttp.CheckBody(body); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("%v allocations per body, want 0", n)
	}
}
