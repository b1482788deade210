package http_test

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
)

// searchClock is the services' clock in the search tests: each plant is
// created at the time set before its POST.
type searchClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *searchClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *searchClock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

var searchT0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// openSearchServer starts a server with the plants of the search tests:
// plant i (ids 1..len) created at searchT0 + i minutes (ids 7 and 8 at the
// same minute).
func openSearchServer(t *testing.T) (*TestServer, string) {
	t.Helper()
	clock := &searchClock{now: searchT0}
	ts := MustOpenServer(t, func(ts *TestServer) { ts.Service.Now = clock.Now })
	tok := ts.Token(t, "alice")
	plants := []string{
		`{"id":1,"name":"Monstera deliciosa","tag":"green"}`,
		`{"id":2,"name":"Money tree","tag":"lucky"}`,
		`{"id":3,"name":"Café au lait","tag":"dahlia"}`,
		`{"id":4,"name":"zebra plant"}`,
		`{"id":5,"name":"Aloe vera","tag":"succulent"}`,
		`{"id":6,"name":"MONSTERA adansonii","tag":"green"}`,
		`{"id":7,"name":"Fern (boston)","tag":"green"}`,
		`{"id":8,"name":"Zamioculcas","tag":"succulent"}`,
	}
	for i, body := range plants {
		minute := i + 1
		if i == 7 {
			minute = 7 // ids 7 and 8: the same creation time
		}
		clock.Set(searchT0.Add(time.Duration(minute)*time.Minute + 123456*time.Microsecond))
		if resp := ts.Post(t, tok, body); resp.Status != 200 {
			t.Fatalf("create %s: %d %s", body, resp.Status, resp.Body)
		}
	}
	// Another owner's plant, which no query of alice's may find.
	if resp := ts.Post(t, ts.Token(t, "bob"), `{"id":100,"name":"Monstera","tag":"green"}`); resp.Status != 200 {
		t.Fatal(resp.Status)
	}
	return ts, tok
}

func plantIDs(t *testing.T, resp *Response) []int {
	t.Helper()
	out := []int{}
	for _, p := range mustPlants(t, resp) {
		out = append(out, int(p["id"].(float64)))
	}
	return out
}

// walk follows Link headers from path and returns each page's ids.
func walk(t *testing.T, ts *TestServer, tok, path string) [][]int {
	t.Helper()
	var pages [][]int
	for path != "" {
		if len(pages) > 20 {
			t.Fatalf("more than 20 pages from %s", path)
		}
		resp := ts.Get(t, tok, path)
		pages = append(pages, plantIDs(t, resp))
		path = nextPath(t, resp.Header.Get("Link"))
	}
	return pages
}

func TestListPlants_Search(t *testing.T) {
	t.Parallel()
	ts, tok := openSearchServer(t)
	for _, tt := range []struct {
		query string
		want  []int
	}{
		{"q=mon", []int{1, 2, 6}},
		{"q=mon+del", []int{1}},
		{"q=MON%20DEL", []int{1}},
		{"q=monstera", []int{1, 6}},
		{"q=stera", []int{}}, // prefixes of words, not substrings
		{"q=cafe", []int{3}},
		{"q=CAF%C3%89", []int{3}},
		{"q=caf%C3%A9+LAIT", []int{3}},
		{"q=green", []int{1, 6, 7}}, // the tag is searched too
		{"q=succ+z", []int{8}},
		{"q=boston", []int{7}},
		{"q=%22boston%22", []int{7}},
		{"q=(boston", []int{7}},
		{"q=fern+OR+aloe", []int{}}, // OR is a word: no plant has it
		{"q=-fern", []int{7}},
		{"q=fern*", []int{7}},
		{"q=NOT+fern", []int{}},
		{"q=NEAR+%26+|+!+^+%3A", []int{}},
		{"q=", []int{1, 2, 3, 4, 5, 6, 7, 8}},
		{"q=+-*()%22", []int{1, 2, 3, 4, 5, 6, 7, 8}}, // separators only: everything
		{"q=green&sort=-id", []int{7, 6, 1}},
		{"q=mon&tag=lucky", []int{2}},
		{"tag=green&tag=succulent", []int{1, 5, 6, 7, 8}},
		{"tag=green&tag=nothing", []int{1, 6, 7}},
		{"tag=lucky", []int{2}},
		{"created_after=2026-11-01T12:03:00.123456Z", []int{4, 5, 6, 7, 8}},
		{"created_after=2026-11-01T12:03:00.1234559Z", []int{3, 4, 5, 6, 7, 8}},
		{"created_before=2026-11-01T12:03:00.123456Z", []int{1, 2}},
		{"created_before=2026-11-01T12:03:00.1234561Z", []int{1, 2, 3}},
		{"created_after=2026-11-01T13:00:00%2B01:00&created_before=2026-11-01T12:04:00Z", []int{1, 2, 3}},
		{"created_after=2026-11-01T12:05:00Z&q=monstera", []int{6}},
		// Far bounds select what the ends of the stored span do.
		{"created_before=2999-01-01T00:00:00Z", []int{1, 2, 3, 4, 5, 6, 7, 8}},
		{"created_after=2999-01-01T00:00:00Z", []int{}},
		{"created_after=1000-01-01T00:00:00Z", []int{1, 2, 3, 4, 5, 6, 7, 8}},
		{"created_before=1600-01-01T00:00:00Z", []int{}},
		{"created_before=0001-01-01T00:00:00Z", []int{}},
		{"created_after=0001-01-01T00:00:00Z", []int{1, 2, 3, 4, 5, 6, 7, 8}},
		{"sort=name", []int{5, 3, 7, 6, 2, 1, 8, 4}}, // code point order: upper case first
		{"sort=-name", []int{4, 8, 1, 2, 6, 7, 3, 5}},
		{"sort=created_at", []int{1, 2, 3, 4, 5, 6, 7, 8}},
		{"sort=-created_at", []int{8, 7, 6, 5, 4, 3, 2, 1}},
		{"sort=-id", []int{8, 7, 6, 5, 4, 3, 2, 1}},
	} {
		t.Run(tt.query, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, plantIDs(t, ts.Get(t, tok, "/plants?"+tt.query))); diff != "" {
				t.Fatalf("ids (-want +got):\n%s", diff)
			}
		})
	}
}

// TestListPlants_SortPages: every sort, walked two plants a page through
// its Link cursors, gives the same plants in the same order as one page.
func TestListPlants_SortPages(t *testing.T) {
	t.Parallel()
	ts, tok := openSearchServer(t)
	for _, sort := range plantstore.SortNames() {
		for _, filter := range []string{"", "&q=m", "&tag=green&tag=succulent", "&created_after=2026-11-01T12:02:00Z"} {
			t.Run(sort+filter, func(t *testing.T) {
				query := "sort=" + url.QueryEscape(sort) + filter
				whole := plantIDs(t, ts.Get(t, tok, "/plants?"+query))
				var walked []int
				for _, page := range walk(t, ts, tok, "/plants?limit=2&"+query) {
					if len(page) == 0 {
						t.Fatal("an empty page")
					}
					walked = append(walked, page...)
				}
				if diff := cmp.Diff(whole, walked); diff != "" {
					t.Fatalf("paged (-whole +paged):\n%s", diff)
				}
			})
		}
	}
}

func TestListPlants_Cursor(t *testing.T) {
	t.Parallel()
	ts, tok := openSearchServer(t)
	resp := ts.Get(t, tok, "/plants?sort=-name&q=m&limit=1")
	next := nextPath(t, resp.Header.Get("Link"))
	u, err := url.Parse(next)
	if err != nil {
		t.Fatal(err)
	}
	cursor := u.Query().Get("after")
	if _, err := fmt.Sscan(cursor, new(int64)); err == nil {
		t.Fatalf("cursor %q is an id, want an opaque cursor", cursor)
	}
	t.Run("SameQuery", func(t *testing.T) {
		if diff := cmp.Diff([]int{2}, plantIDs(t, ts.Get(t, tok, next))); diff != "" {
			t.Fatal(diff)
		}
	})
	for _, other := range []string{"sort=name&q=m", "sort=-name&q=mo", "sort=-name", "sort=-name&q=m&tag=green", "sort=-name&q=m&created_after=2026-01-01T00:00:00Z"} {
		t.Run("Other/"+other, func(t *testing.T) {
			mustErrorMessage(t, ts.Get(t, tok, "/plants?"+other+"&after="+cursor), 400, plantstore.CodeInvalidQuery,
				`invalid query parameter "after": the cursor belongs to another query (its sort, q or filters differ); start again from the first page`)
		})
	}
	t.Run("WordOrderIsTheSameQuery", func(t *testing.T) {
		resp := ts.Get(t, tok, "/plants?sort=-name&q=mon+tree&limit=1")
		if resp.Status != 200 {
			t.Fatal(resp.Status)
		}
		if got := ts.Get(t, tok, "/plants?sort=-name&q=m&limit=5&after="+cursor); got.Status != 200 {
			t.Fatalf("limit changed: %d %s", got.Status, got.Body)
		}
	})
	t.Run("Garbage", func(t *testing.T) {
		for _, bad := range []string{"x", "AAAA", "%2F%2F%2F", strings.Repeat("A", 100)} {
			mustError(t, ts.Get(t, tok, "/plants?after="+bad), 400, plantstore.CodeInvalidQuery)
		}
	})
	t.Run("IDWithSortID", func(t *testing.T) {
		if diff := cmp.Diff([]int{4, 5}, plantIDs(t, ts.Get(t, tok, "/plants?after=3&limit=2"))); diff != "" {
			t.Fatal(diff)
		}
		mustErrorMessage(t, ts.Get(t, tok, "/plants?after=3&sort=name"), 400, plantstore.CodeInvalidQuery,
			`invalid query parameter "after": a plant id is a position only with sort=id; take the cursor from the Link header of the previous page`)
	})
}

// TestListPlants_ConcurrentPages: while plants are created and deleted,
// paging by -created_at shows no plant twice, and every plant that exists
// from the first page to the last on exactly one page.
func TestListPlants_ConcurrentPages(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t)
	tok := ts.Token(t, "alice")
	for id := 1; id <= 30; id++ {
		if resp := ts.Post(t, tok, fmt.Sprintf(`{"id":%d,"name":"Plant %d"}`, id, id)); resp.Status != 200 {
			t.Fatal(resp.Status)
		}
	}
	for _, sort := range []string{"id", "-created_at", "name"} {
		seen := map[int]int{}
		path := "/plants?limit=4&sort=" + sort
		next := 1000
		for page := 0; path != ""; page++ {
			resp := ts.Get(t, tok, path)
			for _, id := range plantIDs(t, resp) {
				seen[id]++
			}
			path = nextPath(t, resp.Header.Get("Link"))
			// Between pages: a new plant, and one deleted that is not
			// among the stable ones (ids 1..30 other than multiples of 7).
			next++
			ts.Post(t, tok, fmt.Sprintf(`{"id":%d,"name":"Plant new %d"}`, next, next))
			if del := 7 * (page + 1); del <= 30 {
				ts.Do(t, Request{Method: "DELETE", Path: fmt.Sprintf("/plants/%d", del), Token: tok})
			}
		}
		for id, n := range seen {
			if n > 1 {
				t.Errorf("sort=%s: plant %d on %d pages", sort, id, n)
			}
		}
		for id := 1; id <= 30; id++ {
			if id%7 != 0 && seen[id] != 1 {
				t.Errorf("sort=%s: stable plant %d on %d pages, want 1", sort, id, seen[id])
			}
		}
		// Put the deleted ones back for the next sort.
		for id := 7; id <= 30; id += 7 {
			ts.Post(t, tok, fmt.Sprintf(`{"id":%d,"name":"Plant %d"}`, id, id))
		}
	}
}

func TestListPlants_Count(t *testing.T) {
	t.Parallel()
	ts, tok := openSearchServer(t)
	count := func(t *testing.T, method, query, prefer string) *Response {
		t.Helper()
		h := map[string]string{}
		if prefer != "" {
			h["Prefer"] = prefer
		}
		resp := ts.Do(t, Request{Method: method, Path: "/plants?" + query, Token: tok, Header: h})
		if resp.Status != 200 {
			t.Fatalf("%s %s: %d %s", method, query, resp.Status, resp.Body)
		}
		return resp
	}
	for _, tt := range []struct {
		method, query, prefer string
		total, applied        string
	}{
		{"GET", "limit=2", "count=exact", "8", "count=exact"},
		{"GET", "limit=2&q=mon", "count=exact", "3", "count=exact"},
		{"GET", "q=green&tag=green", "count=exact", "3", "count=exact"},
		{"GET", "limit=1&q=mon", "count=estimated", "3", "count=estimated"},
		{"GET", "limit=1", "return=minimal, count=exact", "8", "count=exact"},
		{"GET", "limit=1", "", "", ""},
		{"GET", "limit=1", "count=planned", "", ""},
		{"GET", "limit=1", "respond-async", "", ""},
		{"HEAD", "q=monstera", "count=exact", "2", "count=exact"},
		{"HEAD", "q=monstera", "count=estimated", "2", "count=estimated"},
		{"HEAD", "q=monstera", "", "", ""},
	} {
		t.Run(tt.method+"/"+tt.query+"/"+tt.prefer, func(t *testing.T) {
			resp := count(t, tt.method, tt.query, tt.prefer)
			if got := resp.Header.Get("X-Total-Count"); got != tt.total {
				t.Fatalf("X-Total-Count = %q, want %q", got, tt.total)
			}
			if got := resp.Header.Get("Preference-Applied"); got != tt.applied {
				t.Fatalf("Preference-Applied = %q, want %q", got, tt.applied)
			}
		})
	}
	t.Run("HeadLink", func(t *testing.T) {
		resp := count(t, "HEAD", "limit=1&q=mon", "")
		if resp.Header.Get("Link") == "" || len(resp.Body) != 0 {
			t.Fatalf("Link %q, body %q", resp.Header.Get("Link"), resp.Body)
		}
	})
}

func TestListPlants_SearchInvalid(t *testing.T) {
	t.Parallel()
	ts, tok := openSearchServer(t)
	for _, tt := range []struct {
		query string
		code  int32
		msg   string // "" : only the code and that it names the parameter
		param string
	}{
		{"sort=size", plantstore.CodeInvalidQuery, "", "sort"},
		{"sort=", plantstore.CodeInvalidQuery, "", "sort"},
		{"sort=id&sort=name", plantstore.CodeInvalidBody, `invalid query parameter "sort": given more than once: send it once`, "sort"},
		{"q=a&q=b", plantstore.CodeInvalidBody, `invalid query parameter "q": given more than once: send it once`, "q"},
		{"q=" + strings.Repeat("a", 201), plantstore.CodeInvalidQuery, "", "q"},
		{"q=a+b+c+d+e+f+g+h+i+j+k+l+m+n+o+p+q", plantstore.CodeInvalidQuery, `invalid query parameter "q": must have at most 16 words`, "q"},
		{"created_after=yesterday", plantstore.CodeInvalidQuery, "", "created_after"},
		{"created_after=2026-11-01T12:00:00", plantstore.CodeInvalidQuery, "", "created_after"}, // no zone
		{"created_before=2026-11-01", plantstore.CodeInvalidQuery, "", "created_before"},
		{"created_after=2026-11-02T00:00:00Z&created_before=2026-11-01T00:00:00Z", plantstore.CodeInvalidQuery,
			`invalid query parameters "created_after" and "created_before": created_after must be before created_before (both bounds are exclusive)`, "created_after"},
		{"created_after=2026-11-01T00:00:00Z&created_before=2026-11-01T00:00:00Z", plantstore.CodeInvalidQuery, "", "created_before"},
		{"limit=0", plantstore.CodeInvalidQuery, "", "limit"},
		{"limit=1001", plantstore.CodeInvalidQuery, "", "limit"},
		{"tag=%00", plantstore.CodeInvalidBody, "", "tag"},
	} {
		t.Run(tt.query[:min(len(tt.query), 40)], func(t *testing.T) {
			resp := ts.Get(t, tok, "/plants?"+tt.query)
			if tt.msg != "" {
				mustErrorMessage(t, resp, 400, tt.code, tt.msg)
				return
			}
			mustError(t, resp, 400, tt.code)
			if !strings.Contains(string(resp.Body), `\"`+tt.param+`\"`) {
				t.Fatalf("body %s does not name %q", resp.Body, tt.param)
			}
		})
	}
}

var plantTime = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`)

// TestPlantTimes: every plant answer carries created_at and updated_at,
// RFC 3339 in UTC to the microsecond; a change moves updated_at only.
func TestPlantTimes(t *testing.T) {
	t.Parallel()
	clock := &searchClock{now: time.Date(2026, 11, 2, 10, 0, 0, 123456789, time.FixedZone("x", 3600))}
	ts := MustOpenServer(t, func(ts *TestServer) { ts.Service.Now = clock.Now })
	tok := ts.Token(t, "alice")
	created := ts.Post(t, tok, `{"id":1,"name":"Fern"}`)
	want := `{"id":1,"name":"Fern","created_at":"2026-11-02T09:00:00.123456Z","updated_at":"2026-11-02T09:00:00.123456Z"}`
	if got := string(created.Body); got != want {
		t.Fatalf("create: %s\nwant %s", got, want)
	}
	clock.Set(time.Date(2026, 11, 3, 8, 30, 0, 5000, time.UTC))
	patched := ts.Do(t, Request{Method: "PATCH", Path: "/plants/1", Token: tok, Body: `{"tag":"green"}`,
		Header: map[string]string{"Content-Type": "application/merge-patch+json"}})
	want = `{"id":1,"name":"Fern","tag":"green","created_at":"2026-11-02T09:00:00.123456Z","updated_at":"2026-11-03T08:30:00.000005Z"}`
	if got := string(patched.Body); got != want {
		t.Fatalf("patch: %d %s\nwant %s", patched.Status, got, want)
	}
	for _, path := range []string{"/plants/1", "/plants"} {
		body := string(ts.Get(t, tok, path).Body)
		if !strings.Contains(body, `"created_at":"2026-11-02T09:00:00.123456Z","updated_at":"2026-11-03T08:30:00.000005Z"`) {
			t.Fatalf("GET %s: %s", path, body)
		}
	}
	for _, p := range mustPlants(t, ts.Get(t, tok, "/plants")) {
		for _, k := range []string{"created_at", "updated_at"} {
			if s, _ := p[k].(string); !plantTime.MatchString(s) {
				t.Fatalf("%s = %v", k, p[k])
			}
		}
	}
}
