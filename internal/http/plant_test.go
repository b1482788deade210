package http_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
)

func TestAddPlant(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t, fixedClock)
	tok := ts.Token(t, "alice")

	t.Run("OK", func(t *testing.T) {
		resp := ts.Post(t, tok, `{"id":1,"name":"Fern","tag":"green"}`)
		if resp.Status != 200 {
			t.Fatalf("status = %d, body %s", resp.Status, resp.Body)
		}
		if got, want := resp.Header.Get("Content-Type"), "application/json; charset=utf-8"; got != want {
			t.Fatalf("Content-Type = %q, want %q", got, want)
		}
		if diff := cmp.Diff(atFixedNow(`{"id":1,"name":"Fern","tag":"green"}`), string(resp.Body)); diff != "" {
			t.Fatal(diff)
		}
	})
	t.Run("TagOmittedNotNull", func(t *testing.T) {
		resp := ts.Post(t, tok, `{"id":2,"name":"Moss"}`)
		if got, want := string(resp.Body), atFixedNow(`{"id":2,"name":"Moss"}`); resp.Status != 200 || got != want {
			t.Fatalf("%d %s, want 200 %s", resp.Status, got, want)
		}
	})
	t.Run("UnknownFieldsIgnored", func(t *testing.T) {
		resp := ts.Post(t, tok, `{"id":3,"name":"Ivy","colour":"green","nested":{"a":[1,2]}}`)
		if got, want := string(resp.Body), atFixedNow(`{"id":3,"name":"Ivy"}`); resp.Status != 200 || got != want {
			t.Fatalf("%d %s, want 200 %s", resp.Status, got, want)
		}
	})
	t.Run("Limits", func(t *testing.T) {
		// Lengths count code points: 256 two-byte runes are 512 bytes.
		name := strings.Repeat("é", plantstore.MaxNameLength)
		tag := strings.Repeat("ü", plantstore.MaxTagLength)
		resp := ts.Post(t, tok, fmt.Sprintf(`{"id":4,"name":%q,"tag":%q}`, name, tag))
		if resp.Status != 200 {
			t.Fatalf("status = %d, body %s", resp.Status, resp.Body)
		}
	})
	t.Run("IDRange", func(t *testing.T) {
		for _, id := range []string{"9223372036854775807", "-9223372036854775808", "0"} {
			resp := ts.Post(t, tok, `{"id":`+id+`,"name":"Edge"}`)
			if got, want := string(resp.Body), atFixedNow(`{"id":`+id+`,"name":"Edge"}`); resp.Status != 200 || got != want {
				t.Fatalf("%d %s, want 200 %s", resp.Status, got, want)
			}
		}
	})
	t.Run("ContentTypeMissing", func(t *testing.T) {
		resp := ts.Do(t, Request{Method: "POST", Path: "/plants", Token: tok, Body: `{"id":5,"name":"Cactus"}`,
			Header: map[string]string{"Content-Type": ""}})
		if resp.Status != 200 {
			t.Fatalf("status = %d, body %s", resp.Status, resp.Body)
		}
	})
	t.Run("ContentTypeWithCharset", func(t *testing.T) {
		resp := ts.Do(t, Request{Method: "POST", Path: "/plants", Token: tok, Body: `{"id":6,"name":"Aloe"}`,
			Header: map[string]string{"Content-Type": "application/json; charset=utf-8"}})
		if resp.Status != 200 {
			t.Fatalf("status = %d, body %s", resp.Status, resp.Body)
		}
	})
	t.Run("BodyOfExactlyMaxBytes", func(t *testing.T) {
		body := `{"id":7,"name":"Big","pad":"`
		body += strings.Repeat("x", plantstore.MaxBodyBytes-len(body)-2) + `"}`
		if len(body) != plantstore.MaxBodyBytes {
			t.Fatalf("len = %d", len(body))
		}
		if resp := ts.Post(t, tok, body); resp.Status != 200 {
			t.Fatalf("status = %d, body %s", resp.Status, resp.Body)
		}
	})
}

// TestAddPlant_Invalid sends every kind of bad input the contract lists and
// checks the status, the error code, and that nothing was stored.
func TestAddPlant_Invalid(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t)
	tok := ts.Token(t, "alice")
	long := func(n int) string { return strings.Repeat("a", n) }
	tests := []struct {
		name   string
		body   string
		ctype  string // "" sends application/json
		status int
		code   int32
	}{
		{"EmptyBody", ``, "", 400, plantstore.CodeMalformedJSON},
		{"WhitespaceBody", " \n\t ", "", 400, plantstore.CodeMalformedJSON},
		{"NotJSON", `id=1&name=Fern`, "", 400, plantstore.CodeMalformedJSON},
		{"Truncated", `{"id":1,"name":"Fern"`, "", 400, plantstore.CodeMalformedJSON},
		{"Null", `null`, "", 400, plantstore.CodeInvalidBody},
		{"Array", `[]`, "", 400, plantstore.CodeInvalidBody},
		{"ArrayOfPlant", `[{"id":1,"name":"Fern"}]`, "", 400, plantstore.CodeInvalidBody},
		{"String", `"Fern"`, "", 400, plantstore.CodeInvalidBody},
		{"Number", `1`, "", 400, plantstore.CodeInvalidBody},
		{"TrailingObject", `{"id":1,"name":"Fern"}{"id":2,"name":"Moss"}`, "", 400, plantstore.CodeMalformedJSON},
		{"TrailingGarbage", `{"id":1,"name":"Fern"} x`, "", 400, plantstore.CodeMalformedJSON},
		{"IDMissing", `{"name":"Fern"}`, "", 400, plantstore.CodeInvalidBody},
		{"IDNull", `{"id":null,"name":"Fern"}`, "", 400, plantstore.CodeInvalidBody},
		{"IDString", `{"id":"1","name":"Fern"}`, "", 400, plantstore.CodeInvalidBody},
		{"IDFraction", `{"id":1.5,"name":"Fern"}`, "", 400, plantstore.CodeInvalidBody},
		{"IDExponent", `{"id":1e3,"name":"Fern"}`, "", 400, plantstore.CodeInvalidBody},
		{"IDBool", `{"id":true,"name":"Fern"}`, "", 400, plantstore.CodeInvalidBody},
		{"IDAboveInt64", `{"id":9223372036854775808,"name":"Fern"}`, "", 400, plantstore.CodeInvalidBody},
		{"IDBelowInt64", `{"id":-9223372036854775809,"name":"Fern"}`, "", 400, plantstore.CodeInvalidBody},
		{"IDHuge", `{"id":1` + strings.Repeat("0", 400) + `,"name":"Fern"}`, "", 400, plantstore.CodeInvalidBody},
		{"NameMissing", `{"id":1}`, "", 400, plantstore.CodeInvalidBody},
		{"NameUpperCaseKey", `{"id":1,"NAME":"Fern"}`, "", 400, plantstore.CodeInvalidBody},
		{"NameNull", `{"id":1,"name":null}`, "", 400, plantstore.CodeInvalidBody},
		{"NameNumber", `{"id":1,"name":5}`, "", 400, plantstore.CodeInvalidBody},
		{"NameObject", `{"id":1,"name":{"x":1}}`, "", 400, plantstore.CodeInvalidBody},
		{"NameEmpty", `{"id":1,"name":""}`, "", 400, plantstore.CodeInvalidBody},
		{"NameTooLong", `{"id":1,"name":"` + long(257) + `"}`, "", 400, plantstore.CodeInvalidBody},
		{"NameTooLongRunes", `{"id":1,"name":"` + strings.Repeat("é", 257) + `"}`, "", 400, plantstore.CodeInvalidBody},
		{"TagNull", `{"id":1,"name":"Fern","tag":null}`, "", 400, plantstore.CodeInvalidBody},
		{"TagNumber", `{"id":1,"name":"Fern","tag":3}`, "", 400, plantstore.CodeInvalidBody},
		{"TagTooLong", `{"id":1,"name":"Fern","tag":"` + long(65) + `"}`, "", 400, plantstore.CodeInvalidBody},
		{"InvalidUTF8InName", "{\"id\":1,\"name\":\"F\xffern\"}", "", 400, plantstore.CodeMalformedJSON},
		{"InvalidUTF8InUnknownField", "{\"id\":1,\"name\":\"Fern\",\"x\":\"\xc3\x28\"}", "", 400, plantstore.CodeMalformedJSON},
		{"InvalidUTF8Surrogate", "{\"id\":1,\"name\":\"\xed\xa0\x80\"}", "", 400, plantstore.CodeMalformedJSON},
		{"TooLarge", `{"id":1,"name":"Fern","pad":"` + long(plantstore.MaxBodyBytes) + `"}`, "", 413, plantstore.CodeBodyTooLarge},
		{"OneByteTooLarge", `{"id":1,"name":"Fern","pad":"` + long(plantstore.MaxBodyBytes-len(`{"id":1,"name":"Fern","pad":""}`)+1) + `"}`, "", 413, plantstore.CodeBodyTooLarge},
		{"TextPlain", `{"id":1,"name":"Fern"}`, "text/plain", 415, plantstore.CodeUnsupportedMedia},
		{"FormEncoded", `{"id":1,"name":"Fern"}`, "application/x-www-form-urlencoded", 415, plantstore.CodeUnsupportedMedia},
		{"XMLContentType", `{"id":1,"name":"Fern"}`, "application/xml", 415, plantstore.CodeUnsupportedMedia},
		{"BadContentType", `{"id":1,"name":"Fern"}`, "application/json;;;=", 415, plantstore.CodeUnsupportedMedia},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Request{Method: "POST", Path: "/plants", Token: tok, Body: tt.body}
			if tt.ctype != "" {
				r.Header = map[string]string{"Content-Type": tt.ctype}
			}
			if tt.body == "" {
				r.Header = map[string]string{"Content-Type": "application/json"}
			}
			mustError(t, ts.Do(t, r), tt.status, tt.code)
		})
	}
	t.Run("StoredNothing", func(t *testing.T) {
		if got := mustPlants(t, ts.Get(t, tok, "/plants")); len(got) != 0 {
			t.Fatalf("rejected requests stored %v", got)
		}
	})
}

func TestAddPlant_Idempotent(t *testing.T) {
	t.Parallel()
	clock := &testClock{}
	clock.Set(t, "2026-11-02T09:00:00.000001Z")
	ts := MustOpenServer(t, clock.configure)
	tok := ts.Token(t, "alice")
	first := ts.Post(t, tok, `{"id":1,"name":"Fern","tag":"green"}`)
	if want := timed(`{"id":1,"name":"Fern","tag":"green"}`, "2026-11-02T09:00:00.000001Z", "2026-11-02T09:00:00.000001Z"); first.Status != 200 || string(first.Body) != want {
		t.Fatalf("create = %d %s, want 200 %s", first.Status, first.Body, want)
	}
	// Replays answer the stored plant, created then.
	clock.Set(t, "2026-11-02T09:30:00Z")
	t.Run("Replay", func(t *testing.T) {
		// Key order and extra fields do not make a difference.
		resp := ts.Post(t, tok, `{"tag":"green","name":"Fern","id":1,"extra":true}`)
		if resp.Status != 200 || string(resp.Body) != string(first.Body) {
			t.Fatalf("replay = %d %s, want 200 %s", resp.Status, resp.Body, first.Body)
		}
	})
	conflicts := map[string]string{
		"ErrNameChanged": `{"id":1,"name":"Moss","tag":"green"}`,
		"ErrTagChanged":  `{"id":1,"name":"Fern","tag":"red"}`,
		"ErrTagRemoved":  `{"id":1,"name":"Fern"}`,
		"ErrTagEmpty":    `{"id":1,"name":"Fern","tag":""}`,
	}
	for name, body := range conflicts {
		t.Run(name, func(t *testing.T) {
			mustError(t, ts.Post(t, tok, body), 409, plantstore.CodeConflict)
		})
	}
	t.Run("ErrTagAdded", func(t *testing.T) {
		if resp := ts.Post(t, tok, `{"id":2,"name":"Moss"}`); resp.Status != 200 {
			t.Fatalf("status = %d", resp.Status)
		}
		mustError(t, ts.Post(t, tok, `{"id":2,"name":"Moss","tag":"green"}`), 409, plantstore.CodeConflict)
	})
	t.Run("StoredUnchanged", func(t *testing.T) {
		got := ts.Get(t, tok, "/plants")
		want := "[" + string(first.Body) + "," + timed(`{"id":2,"name":"Moss"}`, "2026-11-02T09:30:00.000000Z", "2026-11-02T09:30:00.000000Z") + "]"
		if string(got.Body) != want {
			t.Fatalf("plants = %s, want %s", got.Body, want)
		}
	})
}

// TestAddPlant_ConcurrentIdentical: 16 simultaneous identical creates all
// get 200 and store one row.
func TestAddPlant_ConcurrentIdentical(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t)
	tok := ts.Token(t, "alice")
	statuses, bodies := concurrently(t, 16, func(int) *Response {
		return ts.Post(t, tok, `{"id":42,"name":"Fern","tag":"green"}`)
	})
	// Every answer is the one plant stored, with its creation time.
	stored := ts.Get(t, tok, "/plants/42")
	if got, want := withoutTimes(t, stored.Body), `{"id":42,"name":"Fern","tag":"green"}`; stored.Status != 200 || got != want {
		t.Fatalf("GET = %d %s, want 200 %s", stored.Status, stored.Body, want)
	}
	for i := range statuses {
		if statuses[i] != 200 || bodies[i] != string(stored.Body) {
			t.Fatalf("request %d: %d %s, want 200 %s", i, statuses[i], bodies[i], stored.Body)
		}
	}
	if got := mustPlants(t, ts.Get(t, tok, "/plants")); len(got) != 1 {
		t.Fatalf("rows = %d, want 1", len(got))
	}
}

// TestAddPlant_ConcurrentConflicting: 16 simultaneous creates of one id with
// different names give exactly one 200 and fifteen 409s.
func TestAddPlant_ConcurrentConflicting(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t)
	tok := ts.Token(t, "alice")
	statuses, bodies := concurrently(t, 16, func(i int) *Response {
		return ts.Post(t, tok, fmt.Sprintf(`{"id":42,"name":"Fern %d"}`, i))
	})
	var ok, conflict int
	var winner string
	for i, s := range statuses {
		switch s {
		case 200:
			ok++
			winner = bodies[i]
		case 409:
			conflict++
		default:
			t.Fatalf("request %d: %d %s", i, s, bodies[i])
		}
	}
	if ok != 1 || conflict != 15 {
		t.Fatalf("200s = %d, 409s = %d; want 1 and 15", ok, conflict)
	}
	if got := ts.Get(t, tok, "/plants"); string(got.Body) != "["+winner+"]" {
		t.Fatalf("stored %s, want [%s]", got.Body, winner)
	}
}

// concurrently runs n calls of fn released at the same moment.
func concurrently(t *testing.T, n int, fn func(i int) *Response) ([]int, []string) {
	t.Helper()
	statuses := make([]int, n)
	bodies := make([]string, n)
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			resp := fn(i)
			statuses[i], bodies[i] = resp.Status, string(resp.Body)
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
	return statuses, bodies
}

func TestOwnership(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t, fixedClock)
	alice, bob := ts.Token(t, "alice"), ts.Token(t, "bob")
	if resp := ts.Post(t, alice, `{"id":1,"name":"Fern"}`); resp.Status != 200 {
		t.Fatalf("status = %d", resp.Status)
	}
	t.Run("OtherOwnerGets404", func(t *testing.T) {
		mustError(t, ts.Get(t, bob, "/plants/1"), 404, plantstore.CodeNotFound)
	})
	t.Run("OtherOwnerDelete404", func(t *testing.T) {
		mustError(t, ts.Do(t, Request{Method: "DELETE", Path: "/plants/1", Token: bob}), 404, plantstore.CodeNotFound)
	})
	t.Run("OtherOwnerListsNothing", func(t *testing.T) {
		if got := mustPlants(t, ts.Get(t, bob, "/plants")); len(got) != 0 {
			t.Fatalf("bob sees %v", got)
		}
	})
	t.Run("SameIDForOtherOwner", func(t *testing.T) {
		resp := ts.Post(t, bob, `{"id":1,"name":"Cactus"}`)
		if resp.Status != 200 || string(resp.Body) != atFixedNow(`{"id":1,"name":"Cactus"}`) {
			t.Fatalf("%d %s", resp.Status, resp.Body)
		}
		if got := ts.Get(t, alice, "/plants/1"); string(got.Body) != atFixedNow(`{"id":1,"name":"Fern"}`) {
			t.Fatalf("alice's plant = %s", got.Body)
		}
	})
}

func TestGetAndDeletePlant(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t, fixedClock)
	tok := ts.Token(t, "alice")
	ts.Post(t, tok, `{"id":-5,"name":"Fern","tag":"green"}`)
	t.Run("Get", func(t *testing.T) {
		resp := ts.Get(t, tok, "/plants/-5")
		if resp.Status != 200 || string(resp.Body) != atFixedNow(`{"id":-5,"name":"Fern","tag":"green"}`) {
			t.Fatalf("%d %s", resp.Status, resp.Body)
		}
	})
	t.Run("ErrGetNotFound", func(t *testing.T) {
		mustError(t, ts.Get(t, tok, "/plants/6"), 404, plantstore.CodeNotFound)
	})
	for _, id := range []string{"", "abc", "1.5", "9223372036854775808", "1e3", "%20"} {
		t.Run("ErrBadID/"+id, func(t *testing.T) {
			mustError(t, ts.Get(t, tok, "/plants/"+id), 400, plantstore.CodeInvalidPath)
			mustError(t, ts.Do(t, Request{Method: "DELETE", Path: "/plants/" + id, Token: tok}), 400, plantstore.CodeInvalidPath)
		})
	}
	t.Run("Delete", func(t *testing.T) {
		resp := ts.Do(t, Request{Method: "DELETE", Path: "/plants/-5", Token: tok})
		if resp.Status != 204 || len(resp.Body) != 0 {
			t.Fatalf("%d %q, want 204 and no body", resp.Status, resp.Body)
		}
		mustError(t, ts.Get(t, tok, "/plants/-5"), 404, plantstore.CodeNotFound)
	})
	t.Run("ErrDeleteAgain", func(t *testing.T) {
		mustError(t, ts.Do(t, Request{Method: "DELETE", Path: "/plants/-5", Token: tok}), 404, plantstore.CodeNotFound)
	})
	t.Run("RecreateAfterDelete", func(t *testing.T) {
		if resp := ts.Post(t, tok, `{"id":-5,"name":"Moss"}`); resp.Status != 200 {
			t.Fatalf("status = %d %s", resp.Status, resp.Body)
		}
	})
}

func TestListPlants(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t)
	tok := ts.Token(t, "alice")
	// Created out of order; listed by id ascending.
	for _, id := range []int{5, 3, 9, 1, 7, 2, 8, 4, 6, 10} {
		tag := "odd"
		if id%2 == 0 {
			tag = "even"
		}
		if resp := ts.Post(t, tok, fmt.Sprintf(`{"id":%d,"name":"P%d","tag":%q}`, id, id, tag)); resp.Status != 200 {
			t.Fatalf("create %d: %d", id, resp.Status)
		}
	}
	ids := func(t *testing.T, resp *Response) []int {
		t.Helper()
		var out []int
		for _, p := range mustPlants(t, resp) {
			out = append(out, int(p["id"].(float64)))
		}
		return out
	}
	t.Run("Default", func(t *testing.T) {
		resp := ts.Get(t, tok, "/plants")
		if diff := cmp.Diff([]int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, ids(t, resp)); diff != "" {
			t.Fatal(diff)
		}
		if link := resp.Header.Get("Link"); link != "" {
			t.Fatalf("Link = %q on the only page", link)
		}
	})
	t.Run("FollowLinks", func(t *testing.T) {
		var pages [][]int
		path := "/plants?limit=3"
		for path != "" && len(pages) < 10 {
			resp := ts.Get(t, tok, path)
			pages = append(pages, ids(t, resp))
			path = nextPath(t, resp.Header.Get("Link"))
		}
		if diff := cmp.Diff([][]int{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}, {10}}, pages); diff != "" {
			t.Fatal(diff)
		}
	})
	t.Run("NoNextLinkWhenFullPageEndsList", func(t *testing.T) {
		resp := ts.Get(t, tok, "/plants?limit=5&after=5")
		if diff := cmp.Diff([]int{6, 7, 8, 9, 10}, ids(t, resp)); diff != "" {
			t.Fatal(diff)
		}
		if link := resp.Header.Get("Link"); link != "" {
			t.Fatalf("Link = %q, want none", link)
		}
	})
	t.Run("TagFilterKeptInLink", func(t *testing.T) {
		resp := ts.Get(t, tok, "/plants?tag=even&limit=2")
		if diff := cmp.Diff([]int{2, 4}, ids(t, resp)); diff != "" {
			t.Fatal(diff)
		}
		next := nextPath(t, resp.Header.Get("Link"))
		if !strings.Contains(next, "tag=even") || !strings.Contains(next, "limit=2") || !strings.Contains(next, "after=") {
			t.Fatalf("next = %q", next)
		}
		if diff := cmp.Diff([]int{6, 8}, ids(t, ts.Get(t, tok, next))); diff != "" {
			t.Fatal(diff)
		}
	})
	t.Run("TagNeedsEscaping", func(t *testing.T) {
		ts.Post(t, tok, `{"id":100,"name":"S","tag":"a b&c"}`)
		ts.Post(t, tok, `{"id":101,"name":"S","tag":"a b&c"}`)
		resp := ts.Get(t, tok, "/plants?tag=a+b%26c&limit=1")
		if diff := cmp.Diff([]int{100}, ids(t, resp)); diff != "" {
			t.Fatal(diff)
		}
		if diff := cmp.Diff([]int{101}, ids(t, ts.Get(t, tok, nextPath(t, resp.Header.Get("Link"))))); diff != "" {
			t.Fatal(diff)
		}
	})
	t.Run("AfterLast", func(t *testing.T) {
		if got := string(ts.Get(t, tok, "/plants?after=1000").Body); got != "[]" {
			t.Fatalf("body = %s, want []", got)
		}
	})
	t.Run("EmptyTagMatchesNothing", func(t *testing.T) {
		if got := string(ts.Get(t, tok, "/plants?tag=none").Body); got != "[]" {
			t.Fatalf("body = %s, want []", got)
		}
	})
	t.Run("LimitBounds", func(t *testing.T) {
		for _, q := range []string{"limit=1", "limit=1000"} {
			if resp := ts.Get(t, tok, "/plants?"+q); resp.Status != 200 {
				t.Fatalf("%s: %d", q, resp.Status)
			}
		}
	})
	for _, q := range []string{"limit=0", "limit=-1", "limit=1001", "limit=abc", "limit=1.5", "limit=", "limit=99999999999", "after=x", "after=1.5", "after=9223372036854775808"} {
		t.Run("ErrQuery/"+q, func(t *testing.T) {
			mustError(t, ts.Get(t, tok, "/plants?"+q), 400, plantstore.CodeInvalidQuery)
		})
	}
}

// nextPath returns the target of a `<...>; rel="next"` Link header, "" if none.
func nextPath(t *testing.T, link string) string {
	t.Helper()
	if link == "" {
		return ""
	}
	target, params, ok := strings.Cut(link, ";")
	if !ok || strings.TrimSpace(params) != `rel="next"` || !strings.HasPrefix(target, "<") || !strings.HasSuffix(target, ">") {
		t.Fatalf("Link %q is not an RFC 8288 next link", link)
	}
	return strings.TrimSuffix(strings.TrimPrefix(target, "<"), ">")
}

func TestListPlants_EmptyIsArray(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t)
	resp := ts.Get(t, ts.Token(t, "nobody"), "/plants")
	if resp.Status != 200 || string(resp.Body) != "[]" {
		t.Fatalf("%d %s, want 200 []", resp.Status, resp.Body)
	}
	var v []json.RawMessage
	if err := json.Unmarshal(resp.Body, &v); err != nil || v == nil {
		t.Fatalf("not an array: %v", err)
	}
}
