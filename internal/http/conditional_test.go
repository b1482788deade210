package http_test

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/plantstore/plantstore"
)

// patch sends PATCH /plants/{id} with a merge patch body (Content-Type
// application/merge-patch+json) and the given headers.
func (ts *TestServer) patch(tb testing.TB, token string, id int, body string, header map[string]string) *Response {
	tb.Helper()
	h := map[string]string{"Content-Type": "application/merge-patch+json"}
	for k, v := range header {
		h[k] = v
	}
	return ts.Do(tb, Request{Method: "PATCH", Path: "/plants/" + strconv.Itoa(id), Token: token, Body: body, Header: h})
}

// mustPlant checks a 200 with exactly body and an ETag, and returns the ETag.
func mustPlant(tb testing.TB, resp *Response, body string) string {
	tb.Helper()
	if resp.Status != 200 || string(resp.Body) != body {
		tb.Fatalf("%d %s, want 200 %s", resp.Status, resp.Body, body)
	}
	etag := resp.Header.Get("ETag")
	if !regexp.MustCompile(`^"[0-9a-f]{32}"$`).MatchString(etag) {
		tb.Fatalf("ETag = %q, want a strong quoted tag", etag)
	}
	return etag
}

// TestGetPlant_ETag: GET answers a strong ETag that depends only on the
// content: stable across reads, the same for another owner's identical
// plant, different for other content; HEAD answers the same headers and no
// body.
func TestGetPlant_ETag(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t, fixedClock)
	alice, bob := ts.Token(t, "alice"), ts.Token(t, "bob")
	ts.Post(t, alice, `{"id":1,"name":"Fern","tag":"green"}`)
	ts.Post(t, alice, `{"id":2,"name":"Fern","tag":"green"}`)
	ts.Post(t, alice, `{"id":3,"name":"Fern"}`)
	ts.Post(t, bob, `{"id":1,"name":"Fern","tag":"green"}`)

	etag := mustPlant(t, ts.Get(t, alice, "/plants/1"), atFixedNow(`{"id":1,"name":"Fern","tag":"green"}`))
	if again := mustPlant(t, ts.Get(t, alice, "/plants/1"), atFixedNow(`{"id":1,"name":"Fern","tag":"green"}`)); again != etag {
		t.Fatalf("ETag changed between reads: %s, %s", etag, again)
	}
	if got := mustPlant(t, ts.Get(t, bob, "/plants/1"), atFixedNow(`{"id":1,"name":"Fern","tag":"green"}`)); got != etag {
		t.Fatalf("the same content of another owner: ETag %s, want %s", got, etag)
	}
	other2 := mustPlant(t, ts.Get(t, alice, "/plants/2"), atFixedNow(`{"id":2,"name":"Fern","tag":"green"}`))
	other3 := mustPlant(t, ts.Get(t, alice, "/plants/3"), atFixedNow(`{"id":3,"name":"Fern"}`))
	if other2 == etag || other3 == etag || other2 == other3 {
		t.Fatalf("different contents share an ETag: %s %s %s", etag, other2, other3)
	}

	t.Run("Head", func(t *testing.T) {
		get := ts.Get(t, alice, "/plants/1")
		head := ts.Do(t, Request{Method: "HEAD", Path: "/plants/1", Token: alice})
		mustHead(t, head, 200)
		if got, want := head.Header.Get("ETag"), get.Header.Get("ETag"); got != want {
			t.Fatalf("HEAD ETag %q, GET's %q", got, want)
		}
		mustHead(t, ts.Do(t, Request{Method: "HEAD", Path: "/plants/9", Token: alice}), 404)
		mustHead(t, ts.Do(t, Request{Method: "HEAD", Path: "/plants/x", Token: alice}), 400)
		mustHead(t, ts.Do(t, Request{Method: "HEAD", Path: "/plants/1"}), 401)
	})

	t.Run("IfNoneMatch", func(t *testing.T) {
		for _, tt := range []struct {
			name, inm string
			status    int
		}{
			{"Same", etag, 304},
			{"Star", "*", 304},
			{"Weak", "W/" + etag, 304},
			{"InList", `"0123", ` + etag, 304},
			{"Other", other2, 200},
			{"Garbage", "nonsense", 200},
		} {
			t.Run(tt.name, func(t *testing.T) {
				for _, method := range []string{"GET", "HEAD"} {
					resp := ts.Do(t, Request{Method: method, Path: "/plants/1", Token: alice, Header: map[string]string{"If-None-Match": tt.inm}})
					if resp.Status != tt.status {
						t.Fatalf("%s: status %d, want %d", method, resp.Status, tt.status)
					}
					if tt.status == 304 && len(resp.Body) != 0 {
						t.Fatalf("%s: 304 with a body %q", method, resp.Body)
					}
					if got := resp.Header.Get("ETag"); got != etag {
						t.Fatalf("%s: ETag %q, want %q", method, got, etag)
					}
				}
			})
		}
		// Preconditions are ignored when the answer would be 404.
		mustError(t, ts.Do(t, Request{Method: "GET", Path: "/plants/9", Token: alice, Header: map[string]string{"If-None-Match": "*"}}), 404, plantstore.CodeNotFound)
	})
}

// TestUpdatePlant: PATCH is a JSON merge patch of name and tag, validated
// like NewPlant, answering the plant and its new ETag; updated_at is the
// time of the last patch that changed the plant.
func TestUpdatePlant(t *testing.T) {
	t.Parallel()
	clock := &testClock{}
	ts := MustOpenServer(t, clock.configure)
	alice, bob := ts.Token(t, "alice"), ts.Token(t, "bob")
	reader := ts.Token(t, "bob", plantstore.ScopePlantsRead) // another owner: a bucket of its own
	const created = "2026-11-02T09:00:00.000001Z"
	clock.Set(t, created)
	ts.Post(t, alice, `{"id":1,"name":"Fern","tag":"green"}`)
	// plant is the answer for the plant obj last changed at updated.
	plant := func(obj, updated string) string { return timed(obj, created, updated) }
	before := mustPlant(t, ts.Get(t, alice, "/plants/1"), plant(`{"id":1,"name":"Fern","tag":"green"}`, created))

	t.Run("Name", func(t *testing.T) {
		clock.Set(t, "2026-11-02T09:01:00.5Z")
		want := plant(`{"id":1,"name":"Boston fern","tag":"green"}`, "2026-11-02T09:01:00.500000Z")
		etag := mustPlant(t, ts.patch(t, alice, 1, `{"name":"Boston fern"}`, nil), want)
		if etag == before {
			t.Fatal("the ETag did not change with the name")
		}
		if got := mustPlant(t, ts.Get(t, alice, "/plants/1"), want); got != etag {
			t.Fatalf("GET's ETag %s, PATCH's %s", got, etag)
		}
	})
	t.Run("SetTag", func(t *testing.T) {
		clock.Set(t, "2026-11-02T09:02:00.000002999Z") // stored to the microsecond
		mustPlant(t, ts.patch(t, alice, 1, `{"tag":"shade"}`, nil), plant(`{"id":1,"name":"Boston fern","tag":"shade"}`, "2026-11-02T09:02:00.000002Z"))
	})
	t.Run("NullTagRemovesIt", func(t *testing.T) {
		clock.Set(t, "2026-11-02T10:03:00.000003+01:00") // answered in UTC
		want := plant(`{"id":1,"name":"Boston fern"}`, "2026-11-02T09:03:00.000003Z")
		mustPlant(t, ts.patch(t, alice, 1, `{"tag":null}`, nil), want)
		mustPlant(t, ts.Get(t, alice, "/plants/1"), want)
	})
	const changed = "2026-11-02T09:04:00.000004Z" // the last change of the subtests below
	t.Run("Both", func(t *testing.T) {
		clock.Set(t, changed)
		mustPlant(t, ts.patch(t, alice, 1, `{"name":"Fern","tag":"green"}`, nil), plant(`{"id":1,"name":"Fern","tag":"green"}`, changed))
	})
	// Patches that change nothing leave updated_at.
	clock.Set(t, "2026-11-02T09:05:00.000005Z")
	t.Run("EmptyChangesNothing", func(t *testing.T) {
		last := mustPlant(t, ts.Get(t, alice, "/plants/1"), plant(`{"id":1,"name":"Fern","tag":"green"}`, changed))
		if got := mustPlant(t, ts.patch(t, alice, 1, `{}`, nil), plant(`{"id":1,"name":"Fern","tag":"green"}`, changed)); got != last {
			t.Fatalf("ETag %s, want %s (nothing changed)", got, last)
		}
		// The content is the original's again, but not the plant:
		// updated_at moved, and so did the tag.
		if last == before {
			t.Fatalf("ETag %s, the original's, after the plant changed and changed back", last)
		}
	})
	t.Run("ApplicationJSON", func(t *testing.T) {
		resp := ts.Do(t, Request{Method: "PATCH", Path: "/plants/1", Token: alice, Body: `{"tag":"green"}`}) // Content-Type application/json
		mustPlant(t, resp, plant(`{"id":1,"name":"Fern","tag":"green"}`, changed))
	})
	t.Run("NoContentType", func(t *testing.T) {
		resp := ts.Do(t, Request{Method: "PATCH", Path: "/plants/1", Token: alice, Body: `{}`, Header: map[string]string{"Content-Type": ""}})
		mustPlant(t, resp, plant(`{"id":1,"name":"Fern","tag":"green"}`, changed))
	})
	for _, tt := range []struct{ name, body, msg string }{
		{"UnknownMember", `{"name":"x","color":"red"}`, "invalid PlantPatch: color: unknown member: send only name and tag"},
		{"ID", `{"id":2}`, "invalid PlantPatch: id: unknown member: send only name and tag"},
		{"NullName", `{"name":null}`, "invalid PlantPatch: name: must be a string (leave it out to keep the name)"},
		{"EmptyName", `{"name":""}`, "invalid PlantPatch: name: must have at least 1 character"},
		{"LongTag", `{"tag":"` + strings.Repeat("x", 65) + `"}`, "invalid PlantPatch: tag: must have at most 64 characters"},
		{"TagNumber", `{"tag":1}`, "invalid PlantPatch: tag: must be a string (leave it out to keep the tag)"},
		{"NULName", `{"name":"a\u0000b"}`, `invalid PlantPatch: name: must not contain U+0000 (\u0000)`},
		{"NotObject", `[]`, "invalid PlantPatch: the body must be a JSON object"},
	} {
		t.Run("Invalid/"+tt.name, func(t *testing.T) {
			mustErrorMessage(t, ts.patch(t, alice, 1, tt.body, nil), 400, plantstore.CodeInvalidBody, tt.msg)
			mustPlant(t, ts.Get(t, alice, "/plants/1"), plant(`{"id":1,"name":"Fern","tag":"green"}`, changed))
		})
	}
	t.Run("Malformed", func(t *testing.T) {
		mustError(t, ts.patch(t, alice, 1, `{"name":`, nil), 400, plantstore.CodeMalformedJSON)
	})
	t.Run("TextPlain", func(t *testing.T) {
		resp := ts.Do(t, Request{Method: "PATCH", Path: "/plants/1", Token: alice, Body: `{}`, Header: map[string]string{"Content-Type": "text/plain"}})
		mustErrorMessage(t, resp, 415, plantstore.CodeUnsupportedMedia, `Content-Type "text/plain" is not supported: send application/merge-patch+json or application/json`)
	})
	t.Run("NotFound", func(t *testing.T) {
		mustError(t, ts.patch(t, alice, 2, `{"name":"x"}`, nil), 404, plantstore.CodeNotFound)
		mustError(t, ts.patch(t, bob, 1, `{"name":"x"}`, nil), 404, plantstore.CodeNotFound)
		mustError(t, ts.patch(t, alice, 2, `{}`, nil), 404, plantstore.CodeNotFound)
	})
	t.Run("ReadScope", func(t *testing.T) {
		mustError(t, ts.patch(t, reader, 1, `{"name":"x"}`, nil), 403, plantstore.CodeInsufficientScope)
	})
	t.Run("ReplayOfTheOldCreateConflicts", func(t *testing.T) {
		clock.Set(t, "2026-11-02T09:06:00.000006Z")
		want := plant(`{"id":1,"name":"Renamed","tag":"green"}`, "2026-11-02T09:06:00.000006Z")
		mustPlant(t, ts.patch(t, alice, 1, `{"name":"Renamed"}`, nil), want)
		clock.Set(t, "2026-11-02T09:07:00.000007Z")
		mustError(t, ts.Post(t, alice, `{"id":1,"name":"Fern","tag":"green"}`), 409, plantstore.CodeConflict)
		if resp := ts.Post(t, alice, `{"id":1,"name":"Renamed","tag":"green"}`); resp.Status != 200 || string(resp.Body) != want {
			t.Fatalf("a create with the new content: %d %s, want the replay's 200 %s", resp.Status, resp.Body, want)
		}
	})
}

// TestIfMatch: PATCH and DELETE with If-Match change the plant only while it
// has a listed ETag; otherwise 412 41201 and nothing changes.
func TestIfMatch(t *testing.T) {
	t.Parallel()
	clock := &testClock{}
	ts := MustOpenServer(t, clock.configure)
	alice := ts.Token(t, "alice")
	const created = "2026-11-02T09:00:00.000001Z"
	clock.Set(t, created)
	ts.Post(t, alice, `{"id":1,"name":"Fern","tag":"green"}`)
	// plant is the answer for the plant obj last changed at updated.
	plant := func(obj, updated string) string { return timed(obj, created, updated) }
	v1 := mustPlant(t, ts.Get(t, alice, "/plants/1"), plant(`{"id":1,"name":"Fern","tag":"green"}`, created))

	const moss = "2026-11-02T09:01:00.000001Z"
	clock.Set(t, moss)
	v2 := mustPlant(t, ts.patch(t, alice, 1, `{"name":"Moss"}`, map[string]string{"If-Match": v1}), plant(`{"id":1,"name":"Moss","tag":"green"}`, moss))
	clock.Set(t, "2026-11-02T09:02:00.000001Z") // refused writes change nothing
	// v1 is stale now: a second writer that read v1 loses.
	for _, ifMatch := range []string{v1, "W/" + v2, `"nope"`, "garbage"} {
		resp := ts.patch(t, alice, 1, `{"name":"Lost update"}`, map[string]string{"If-Match": ifMatch})
		mustError(t, resp, 412, plantstore.CodePreconditionFailed)
		resp = ts.Do(t, Request{Method: "DELETE", Path: "/plants/1", Token: alice, Header: map[string]string{"If-Match": ifMatch}})
		mustError(t, resp, 412, plantstore.CodePreconditionFailed)
	}
	mustError(t, ts.patch(t, alice, 1, `{}`, map[string]string{"If-Match": v1}), 412, plantstore.CodePreconditionFailed)
	if got := mustPlant(t, ts.Get(t, alice, "/plants/1"), plant(`{"id":1,"name":"Moss","tag":"green"}`, moss)); got != v2 {
		t.Fatalf("ETag %s, want %s", got, v2)
	}

	clock.Set(t, "2026-11-02T09:03:00.000001Z")
	v3 := mustPlant(t, ts.patch(t, alice, 1, `{"tag":null}`, map[string]string{"If-Match": v1 + ", " + v2}), plant(`{"id":1,"name":"Moss"}`, "2026-11-02T09:03:00.000001Z"))
	clock.Set(t, "2026-11-02T09:04:00.000001Z")
	v4 := mustPlant(t, ts.patch(t, alice, 1, `{"tag":"green"}`, map[string]string{"If-Match": "*"}), plant(`{"id":1,"name":"Moss","tag":"green"}`, "2026-11-02T09:04:00.000001Z"))
	// Back to v2's content, but not v2: its updated_at moved, so v2
	// no longer matches (a client holding v2 has a stale updated_at).
	clock.Set(t, "2026-11-02T09:05:00.000001Z")
	mustError(t, ts.patch(t, alice, 1, `{}`, map[string]string{"If-Match": v2}), 412, plantstore.CodePreconditionFailed)
	mustPlant(t, ts.patch(t, alice, 1, `{}`, map[string]string{"If-Match": v4}), plant(`{"id":1,"name":"Moss","tag":"green"}`, "2026-11-02T09:04:00.000001Z"))
	mustError(t, ts.patch(t, alice, 1, `{}`, map[string]string{"If-Match": v3}), 412, plantstore.CodePreconditionFailed)

	mustError(t, ts.patch(t, alice, 2, `{"name":"x"}`, map[string]string{"If-Match": v2}), 404, plantstore.CodeNotFound)
	mustError(t, ts.Do(t, Request{Method: "DELETE", Path: "/plants/2", Token: alice, Header: map[string]string{"If-Match": "*"}}), 404, plantstore.CodeNotFound)

	resp := ts.Do(t, Request{Method: "DELETE", Path: "/plants/1", Token: alice, Header: map[string]string{"If-Match": v4}})
	if resp.Status != 204 {
		t.Fatalf("DELETE with the current ETag: %d %s", resp.Status, resp.Body)
	}
	mustError(t, ts.Get(t, alice, "/plants/1"), 404, plantstore.CodeNotFound)
}

// rateLimit parses RateLimit: "token";r=R;t=T.
func rateLimit(tb testing.TB, resp *Response) (r, t int) {
	tb.Helper()
	m := regexp.MustCompile(`^"token";r=(\d+);t=(\d+)$`).FindStringSubmatch(resp.Header.Get("RateLimit"))
	if m == nil {
		tb.Fatalf("%d: RateLimit = %q", resp.Status, resp.Header.Get("RateLimit"))
	}
	r, _ = strconv.Atoi(m[1])
	t, _ = strconv.Atoi(m[2])
	return r, t
}

// TestRateLimitHeaders: every answer to a request whose token was
// identified carries RateLimit-Policy and RateLimit, errors included; the
// remaining count goes down with each request; a 401 has neither.
func TestRateLimitHeaders(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t, func(s *TestServer) {
		s.RateLimit, s.RateBurst = 0.01, 5 // one request back per 100 s: no refill during the test
	})
	alice := ts.Token(t, "alice")
	reader := ts.Token(t, "bob", plantstore.ScopePlantsRead) // another owner: a bucket of its own
	const policy = `"token";q=5;w=500`

	answers := []*Response{
		ts.Post(t, alice, `{"id":1,"name":"Fern"}`),                      // 200
		ts.Get(t, alice, "/plants/2"),                                    // 404
		ts.Do(t, Request{Method: "HEAD", Path: "/plants", Token: alice}), // 200, no body
		ts.patch(t, alice, 1, `{"nope":1}`, nil),                         // 400
		ts.Get(t, alice, "/plants"),                                      // 200
		ts.Get(t, alice, "/plants"),                                      // 429
	}
	wantStatus := []int{200, 404, 200, 400, 200, 429}
	for i, resp := range answers {
		if resp.Status != wantStatus[i] {
			t.Fatalf("answer %d: status %d, want %d (%s)", i, resp.Status, wantStatus[i], resp.Body)
		}
		if got := resp.Header.Get("RateLimit-Policy"); got != policy {
			t.Fatalf("answer %d (%d): RateLimit-Policy = %q, want %q", i, resp.Status, got, policy)
		}
		r, reset := rateLimit(t, resp)
		if want := max(0, 4-i); r != want {
			t.Fatalf("answer %d (%d): r=%d, want %d", i, resp.Status, r, want)
		}
		if reset < 100*(5-r)-1 || reset > 500 {
			t.Fatalf("answer %d: t=%d, want about %d s to refill %d requests", i, reset, 100*(5-r), 5-r)
		}
	}
	if after := answers[5].Header.Get("Retry-After"); after == "" {
		t.Fatal("429 without Retry-After")
	}
	t.Run("Forbidden", func(t *testing.T) {
		resp := ts.Post(t, reader, `{"id":3,"name":"Moss"}`)
		mustError(t, resp, 403, plantstore.CodeInsufficientScope)
		// The bucket of reader's owner, full: the 403 spends nothing from it.
		if r, _ := rateLimit(t, resp); r != 5 {
			t.Fatalf("403: r=%d, want 5 (nothing spent)", r)
		}
		if got := resp.Header.Get("RateLimit-Policy"); got != policy {
			t.Fatalf("403: RateLimit-Policy = %q", got)
		}
	})
	t.Run("Unauthenticated", func(t *testing.T) {
		resp := ts.Get(t, "", "/plants")
		mustError(t, resp, 401, plantstore.CodeTokenMissing)
		if resp.Header.Get("RateLimit") != "" || resp.Header.Get("RateLimit-Policy") != "" {
			t.Fatalf("401 with RateLimit headers: %v", resp.Header)
		}
	})
	t.Run("Off", func(t *testing.T) {
		off := MustOpenServer(t)
		resp := off.Get(t, off.Token(t, "alice"), "/plants")
		if resp.Header.Get("RateLimit") != "" || resp.Header.Get("RateLimit-Policy") != "" {
			t.Fatalf("rate limiting off, yet RateLimit headers: %v", resp.Header)
		}
	})
}

// TestHead: HEAD on every collection and object that has a GET answers
// the GET's status and headers (Link, ETag, rate limit) and no body.
func TestHead(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t, func(s *TestServer) { s.RateLimit, s.RateBurst = 1000, 2000 })
	tok := ts.Token(t, "alice", plantstore.KnownScopes...)
	for i := 1; i <= 3; i++ {
		ts.Post(t, tok, `{"id":`+strconv.Itoa(i)+`,"name":"Fern"}`)
	}
	hook := decodeWebhook(t, ts.Do(t, Request{Method: "POST", Path: "/webhooks", Token: tok, Body: `{"url":"http://127.0.0.1:9/hook"}`}), 201)
	ts.Do(t, Request{Method: "POST", Path: "/webhooks", Token: tok, Body: `{"url":"http://127.0.0.1:9/hook2"}`})
	for _, path := range []string{
		"/plants?limit=2", "/plants?limit=2&after=2", "/plants/1",
		"/webhooks?limit=1", "/webhooks/" + hook.ID, "/webhooks/" + hook.ID + "/deliveries",
		"/plants/99", "/webhooks/whk_0000000000000000",
	} {
		t.Run(path, func(t *testing.T) {
			get := ts.Get(t, tok, path)
			head := ts.Do(t, Request{Method: "HEAD", Path: path, Token: tok})
			mustHead(t, head, get.Status)
			for _, h := range []string{"Link", "ETag", "RateLimit-Policy"} {
				if got, want := head.Header.Get(h), get.Header.Get(h); got != want {
					t.Fatalf("%s: HEAD %q, GET %q", h, got, want)
				}
			}
			if head.Header.Get("RateLimit") == "" {
				t.Fatal("HEAD without RateLimit")
			}
		})
	}
	if link := ts.Do(t, Request{Method: "HEAD", Path: "/plants?limit=2", Token: tok}).Header.Get("Link"); !strings.Contains(link, `rel="next"`) {
		t.Fatalf("HEAD /plants?limit=2: Link = %q, want the next page", link)
	}
}

// TestIfMatch_Strict: If-Match and If-None-Match are parsed whole (RFC
// 9110 entity-tag lists): junk after the current ETag, or a malformed
// member anywhere in the list, matches nothing, so PATCH and DELETE answer
// 412 and change nothing, and GET answers the plant, not 304. Field lines
// sent separately are one list; an If-Match with no tag matches nothing.
func TestIfMatch_Strict(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t, fixedClock)
	alice := ts.Token(t, "alice")
	ts.Post(t, alice, `{"id":1,"name":"Fern","tag":"green"}`)
	etag := mustPlant(t, ts.Get(t, alice, "/plants/1"), atFixedNow(`{"id":1,"name":"Fern","tag":"green"}`))

	for _, value := range []string{
		etag + "junk",
		etag + `"`,
		etag + " junk",
		etag + ", junk",
		etag + ` "other"`,
		`junk, ` + etag,
		etag + `, "unclosed`,
		etag + `, "a b"`,
		"W/" + etag + "x",
		"*x",
	} {
		t.Run(value, func(t *testing.T) {
			h := map[string]string{"If-Match": value}
			mustError(t, ts.patch(t, alice, 1, `{"name":"Lost update"}`, h), 412, plantstore.CodePreconditionFailed)
			mustError(t, ts.Do(t, Request{Method: "DELETE", Path: "/plants/1", Token: alice, Header: h}), 412, plantstore.CodePreconditionFailed)
			resp := ts.Do(t, Request{Method: "GET", Path: "/plants/1", Token: alice, Header: map[string]string{"If-None-Match": value}})
			mustPlant(t, resp, atFixedNow(`{"id":1,"name":"Fern","tag":"green"}`))
		})
	}

	// Raw requests: headers the test client's map cannot send.
	send := func(method string, header http.Header, body string) int {
		t.Helper()
		req, err := http.NewRequest(method, ts.URL+"/plants/1", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header = header
		req.Header.Set("Authorization", "Bearer "+alice)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	t.Run("TwoLines", func(t *testing.T) {
		// One list: a junk line spoils it, whichever line comes first.
		for _, lines := range [][]string{{etag, "junk"}, {"junk", etag}} {
			if got := send("PATCH", http.Header{"If-Match": lines}, `{"name":"Lost update"}`); got != 412 {
				t.Errorf("PATCH If-Match %q: %d, want 412", lines, got)
			}
			if got := send("GET", http.Header{"If-None-Match": lines}, ""); got != 200 {
				t.Errorf("GET If-None-Match %q: %d, want 200", lines, got)
			}
		}
		// A well-formed list over two lines matches.
		if got := send("GET", http.Header{"If-None-Match": {`"other"`, etag}}, ""); got != 304 {
			t.Errorf("GET If-None-Match over two lines: %d, want 304", got)
		}
	})
	t.Run("Empty", func(t *testing.T) {
		for _, method := range []string{"PATCH", "DELETE"} {
			if got := send(method, http.Header{"If-Match": {""}}, `{"name":"Lost update"}`); got != 412 {
				t.Errorf("%s with an empty If-Match: %d, want 412", method, got)
			}
		}
		if got := send("PATCH", http.Header{"If-Match": {""}}, `{}`); got != 412 {
			t.Errorf("PATCH {} with an empty If-Match: %d, want 412", got)
		}
	})
	mustPlant(t, ts.Get(t, alice, "/plants/1"), atFixedNow(`{"id":1,"name":"Fern","tag":"green"}`))
	// And the well-formed list still matches.
	mustPlant(t, ts.patch(t, alice, 1, `{"name":"Moss"}`, map[string]string{"If-Match": `"x", ` + etag + ` ,`}), atFixedNow(`{"id":1,"name":"Moss","tag":"green"}`))
}
