package client_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore/client"
)

// linkRoundTripper answers every request with an empty page and a Link
// header of the test's choosing.
type linkRoundTripper struct{ link string }

func (rt linkRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	h := http.Header{"Content-Type": {"application/json"}}
	h["Link"] = []string{rt.link}
	return &http.Response{
		StatusCode: http.StatusOK, Header: h, Request: req,
		Body: io.NopCloser(strings.NewReader(`[{"id":1,"name":"x"}]`)),
	}, nil
}

// FuzzLinkHeader feeds any header value to the client's Link parser: no
// panic, and a rel="next" target it returns is one of the <...> targets.
// It also builds the header the server would send for (after, limit, header
// as the search, the tags and the sort) and checks the parser reads the same
// page options back, and runs the header through ListPlants.
func FuzzLinkHeader(f *testing.F) {
	for _, s := range []string{
		`</plants?after=3&limit=2>; rel="next"`,
		`</plants?after=3&limit=2&tag=a%26b>; rel=next`,
		`<https://h.example/plants?after=1>; rel="prev next"; title="x", <b>; rel=next`,
		`<a>; rel="prev", <b>; REL="Next"`,
		`<a>; title="x\"y"; rel="next"`,
		`<a>; rel="next`,
		`<a`,
		`a>; rel=next`,
		`<a>; ;; rel, <b>; rel=next`,
		`<a> rel=next`,
		`</plants?after=9223372036854775808>; rel=next`,
		`</plants?limit=x>; rel=next`,
		`<%zz>; rel=next`,
		` , ,<a>;rel=next`,
		"",
	} {
		f.Add(s, int64(42), 100)
	}
	f.Add("🌱", int64(-9223372036854775808), 1)
	f.Add("a&b=c d%\"<>", int64(9223372036854775807), 1000)

	base, _ := url.Parse("http://127.0.0.1:8080/plants?limit=5")
	f.Fuzz(func(t *testing.T, header string, after int64, limit int) {
		target, ok, err := client.LinkTarget(header, "next")
		if ok && (err != nil || !strings.Contains(header, "<"+target+">")) {
			t.Fatalf("LinkTarget(%q) = %q, %v: not one of the <...> targets", header, target, err)
		}
		if !ok && target != "" {
			t.Fatalf("LinkTarget(%q) = %q without ok", header, target)
		}
		opts, err := client.NextPage(base, header)
		if opts != nil && (!ok || err != nil) {
			t.Fatalf("NextPage(%q) = %+v, %v; LinkTarget ok=%v", header, opts, err, ok)
		}

		// The server's format (http.nextLink) round-trips.
		q := url.Values{}
		cursor := strconv.FormatInt(after, 36) + header
		q.Set("after", cursor)
		q.Set("limit", strconv.Itoa(limit))
		q.Set("q", header)
		q["tag"] = []string{header, "x" + header}
		q.Set("sort", header)
		created := time.Unix(after&(1<<37-1), int64(limit%1_000_000)*1000).UTC() // years 1970 to 6325, to the µs
		q.Set("created_after", created.Format(time.RFC3339Nano))
		link := "</plants?" + q.Encode() + `>; rel="next"`
		opts, err = client.NextPage(base, link)
		want := client.ListPlantsOptions{Limit: limit, Q: header, Tags: q["tag"], CreatedAfter: created, Sort: header, After: cursor}
		if err != nil || opts == nil || !cmp.Equal(*opts, want) {
			t.Fatalf("NextPage(%q) = %+v, %v: want %+v", link, opts, err, want)
		}

		// Through the client: a page or an error, never a panic.
		c, err := client.New("http://127.0.0.1:1", "t", client.WithHTTPClient(&http.Client{Transport: linkRoundTripper{header}}))
		if err != nil {
			t.Fatal(err)
		}
		page, err := c.ListPlants(context.Background(), client.ListPlantsOptions{Limit: 1})
		if err == nil && (len(page.Plants) != 1 || page.Next != nil && !ok) {
			t.Fatalf("ListPlants with Link %q: %+v", header, page)
		}
	})
}
