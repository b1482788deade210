package http_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/plantstore/plantstore"
	plantstorehttp "github.com/plantstore/plantstore/internal/http"
	"github.com/plantstore/plantstore/internal/service"
	"github.com/plantstore/plantstore/internal/sqlite"
	"github.com/plantstore/plantstore/internal/textsearch"
)

// fuzzServer is the real handler stack (routing, body checks, generated
// decoder, auth, handlers, error mapper) over a real SQLite file, called
// in-process: one per fuzz process, shared by every input.
type fuzzServer struct {
	h      http.Handler
	plants plantstore.PlantService
}

// Fixed secrets, so that seeds in testdata/fuzz can carry working tokens.
const (
	fuzzOwner = "fuzz"
	// fuzzSecret has full plant scopes; fuzzReadOnly only plants:read;
	// fuzzWebhooks only webhooks:manage (so it is refused on /plants).
	fuzzSecret   = "fuzz-secret-0123456789abcdef0123456789"
	fuzzReadOnly = "fuzz-read-only-0123456789abcdef01234567"
	fuzzWebhooks = "fuzz-webhooks-0123456789abcdef0123456789"
)

// fuzzIssued is a secret in the issued format (prefix, hex, checksum).
var fuzzIssued = func() string {
	random := strings.Repeat("0123456789abcdef", 4)
	return plantstore.TokenPrefix + random + crc32Hex(random)
}()

func newFuzzServer(tb testing.TB, configure ...func(*plantstorehttp.Server)) *fuzzServer {
	tb.Helper()
	db := sqlite.NewDB(filepath.Join(tb.TempDir(), "plantstore.db"))
	if err := db.Open(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(context.Background()); err != nil {
		tb.Fatal(err)
	}
	for _, tok := range []struct {
		secret string
		scopes []string
	}{
		{fuzzSecret, nil},
		{fuzzIssued, nil},
		{fuzzReadOnly, []string{plantstore.ScopePlantsRead}},
		{fuzzWebhooks, []string{plantstore.ScopeWebhooksManage}},
	} {
		t, err := plantstore.NewTokenFromSecret(tok.secret, fuzzOwner, tok.scopes, time.Now())
		if err != nil {
			tb.Fatal(err)
		}
		if err := db.InsertToken(context.Background(), t); err != nil {
			tb.Fatal(err)
		}
	}
	s := plantstorehttp.NewServer()
	svc := service.New(db, service.Config{})
	s.PlantService, s.TokenService, s.WebhookService, s.Storage = svc.Plants, svc.Tokens, svc.Webhooks, db
	s.Logger = slog.New(slog.DiscardHandler)
	for _, c := range configure {
		c(s)
	}
	h, err := s.Handler()
	if err != nil {
		tb.Fatal(err)
	}
	return &fuzzServer{h: h, plants: svc.Plants}
}

// do serves one request in-process.
func (fs *fuzzServer) do(req *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	fs.h.ServeHTTP(w, req)
	return w
}

// checkErrorBody checks that a non-2xx answer is the contract's Error:
// a JSON object with an int32 error whose /100 is the status, and a message.
func checkErrorBody(t *testing.T, w *httptest.ResponseRecorder) int32 {
	t.Helper()
	var e struct {
		Error   *int32  `json:"error"`
		Message *string `json:"message"`
	}
	dec := json.NewDecoder(bytes.NewReader(w.Body.Bytes()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil || e.Error == nil || e.Message == nil {
		t.Fatalf("status %d: body is not the Error schema (%v): %q", w.Code, err, w.Body.String())
	}
	if int(*e.Error/100) != w.Code {
		t.Fatalf("status %d carries error code %d", w.Code, *e.Error)
	}
	if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("status %d: Content-Type %q", w.Code, ct)
	}
	// A schema error names the member and its rule (internal/apischema), never
	// the words of the fallback, which would mean the contract's validator
	// and the generated decoder disagree.
	if strings.Contains(*e.Message, "does not match the schema") || strings.Contains(*e.Message, ": is not valid") {
		t.Fatalf("status %d: a schema error that names no rule: %q", w.Code, *e.Message)
	}
	return *e.Error
}

// apiPlant is the contract's Plant, decoded strictly.
type apiPlant struct {
	ID        *int64  `json:"id"`
	Name      *string `json:"name"`
	Tag       *string `json:"tag"`
	CreatedAt *string `json:"created_at"`
	UpdatedAt *string `json:"updated_at"`
}

// checkPlant checks p against the Plant schema as this service answers it.
func checkPlant(t *testing.T, p apiPlant) {
	t.Helper()
	if p.ID == nil || p.Name == nil {
		t.Fatalf("plant without id or name: %+v", p)
	}
	if n := utf8.RuneCountInString(*p.Name); n < 1 || n > plantstore.MaxNameLength || !utf8.ValidString(*p.Name) {
		t.Fatalf("plant name violates the schema: %q", *p.Name)
	}
	if p.Tag != nil && (utf8.RuneCountInString(*p.Tag) > plantstore.MaxTagLength || !utf8.ValidString(*p.Tag)) {
		t.Fatalf("plant tag violates the schema: %q", *p.Tag)
	}
	if p.CreatedAt == nil || p.UpdatedAt == nil {
		t.Fatalf("plant %d without created_at or updated_at", *p.ID)
	}
	checkTimes(t, *p.CreatedAt, *p.UpdatedAt)
}

// rawBody is what was sent, read back with encoding/json as the oracle.
type rawBody struct {
	ID   json.RawMessage `json:"id"`
	Name json.RawMessage `json:"name"`
	Tag  json.RawMessage `json:"tag"`
}

// FuzzAddPlant sends any bytes as the POST /plants body (with any
// Content-Type) through the whole handler stack. The answer is a 200 whose
// Plant is schema-valid and is what was sent, or a 400/409/413/415 Error:
// never a panic, never a 5xx.
func FuzzAddPlant(f *testing.F) {
	for _, seed := range []struct{ body, ct string }{
		{`{"id":1,"name":"fern"}`, "application/json"},
		{`{"id":2,"name":"rose","tag":"red"}`, ""},
		{`{"id":-9223372036854775808,"name":"x","tag":""}`, "application/json; charset=utf-8"},
		{`{"id":9223372036854775808,"name":"overflow"}`, "application/json"},
		{`{"id":3,"name":""}`, "application/json"},
		{`{"id":4,"name":"` + strings.Repeat("é", 257) + `"}`, "application/json"},
		{`{"id":5,"name":"ok","tag":"` + strings.Repeat("🌱", 65) + `"}`, "application/json"},
		{`{"id":6,"name":"\ud800"}`, "application/json"},
		{`{"id":7,"name":"a","name":"b"}`, "application/json"},
		{`{"id":1.5,"name":"x"}`, "application/json"},
		{`{"id":"8","name":"x"}`, "application/json"},
		{`{"id":9,"name":null}`, "application/json"},
		{`{"id":10,"name":"x","tag":null,"extra":[1,{"a":2}]}`, "application/json"},
		{`[{"id":1,"name":"x"}]`, "application/json"},
		{`{"id":1,"name":"x"} {}`, "application/json"},
		{"{\"id\":1,\"name\":\"\xff\"}", "application/json"},
		{`{"id":1,"name":"x"}`, "text/plain"},
		{`{"id":1e3,"name":"x"}`, "application/json"},
		{strings.Repeat("[", 10000), "application/json"},
		{"", ""},
	} {
		f.Add([]byte(seed.body), seed.ct)
	}
	fs := newFuzzServer(f)
	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		req := httptest.NewRequest(http.MethodPost, "/plants", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+fuzzSecret)
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		w := fs.do(req)
		switch w.Code {
		case http.StatusOK:
		case http.StatusBadRequest, http.StatusConflict, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType:
			checkErrorBody(t, w)
			return
		default:
			t.Fatalf("status %d for body %q (Content-Type %q): %s", w.Code, body, contentType, w.Body.String())
		}

		var got apiPlant
		dec := json.NewDecoder(bytes.NewReader(w.Body.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("200 body is not a Plant: %v: %q", err, w.Body.String())
		}
		checkPlant(t, got)
		if *got.UpdatedAt != *got.CreatedAt {
			t.Fatalf("a plant never changed: updated_at %s, created_at %s", *got.UpdatedAt, *got.CreatedAt)
		}
		// Clean up, so that the next input has a fresh id space.
		defer func() {
			if err := fs.plants.DeletePlant(context.Background(), fuzzOwner, *got.ID); err != nil {
				t.Fatalf("delete %d: %v", *got.ID, err)
			}
		}()

		// The answer is what was sent.
		// By exact key: encoding/json would also match "tAg" to tag, which
		// the server (rightly) takes for an unknown member.
		var members map[string]json.RawMessage
		if err := json.Unmarshal(body, &members); err != nil {
			t.Fatalf("200 for a body encoding/json refuses (%v): %q", err, body)
		}
		sent := rawBody{ID: members["id"], Name: members["name"], Tag: members["tag"]}
		var id int64
		if err := json.Unmarshal(sent.ID, &id); err != nil || id != *got.ID {
			t.Fatalf("sent id %s, got %d (%v)", sent.ID, *got.ID, err)
		}
		var name string
		if err := json.Unmarshal(sent.Name, &name); err != nil || name != *got.Name {
			t.Fatalf("sent name %s, got %q (%v)", sent.Name, *got.Name, err)
		}
		switch {
		case sent.Tag == nil:
			if got.Tag != nil {
				t.Fatalf("sent no tag, got %q", *got.Tag)
			}
		default:
			var tag string
			if err := json.Unmarshal(sent.Tag, &tag); err != nil || got.Tag == nil || tag != *got.Tag {
				t.Fatalf("sent tag %s, got %v (%v)", sent.Tag, got.Tag, err)
			}
		}
	})
}

// linkRE is the only Link header the list answers may carry.
var linkRE = regexp.MustCompile(`^<([^<>]*)>; rel="next"$`)

// FuzzListPlants sends arbitrary limit, after and tag parameters (or, with
// raw, limit as the whole raw query) to GET /plants. The answer is a 200
// JSON array of plants that match the query's filters, in its order, whose
// Link, if any, is `<...>; rel="next"` with a URL that is accepted when
// followed and answers the plants that come next, or a 400 with error 40003
// or 40002: never a panic, never a 5xx.
func FuzzListPlants(f *testing.F) {
	f.Add("", "", "", uint8(0))
	f.Add("2", "", "", uint8(1))
	f.Add("3", "5", "a", uint8(7))
	f.Add("1000", "-9223372036854775808", "", uint8(3))
	f.Add("0", "", "", uint8(1))
	f.Add("1001", "", "", uint8(1))
	f.Add("-1", "9223372036854775808", "", uint8(3))
	f.Add("abc", "1.5", "", uint8(3))
	f.Add("", "", "a&b=c d%", uint8(4))
	f.Add("", "", "", uint8(4))
	f.Add("limit=1&limit=2&after=&tag=%zz", "", "", uint8(8))
	f.Add("limit=2&tag=a&tag=b", "", "", uint8(8))
	f.Add("1", "", "🌱", uint8(5))
	// Search, sort and time filters, paged through by cursor.
	f.Add("limit=3&sort=-name&tag=a&tag=b", "", "", uint8(8))
	f.Add("limit=2&q=plant+1&sort=created_at", "", "", uint8(8))
	f.Add("limit=4&sort=-id&created_after=2000-01-01T00:00:00.5Z&created_before=2200-01-01T00:00:00%2B01:00", "", "", uint8(8))
	f.Add("limit=2&sort=-created_at&q=PLANT", "", "", uint8(8))

	fs := newFuzzServer(f)
	// Plants to page through, with tags that need escaping in the Link.
	tags := []string{"a", "b", "a&b=c d%", "🌱", "", "+;,<>\""}
	for i := int64(1); i <= 40; i++ {
		p := &plantstore.Plant{Owner: fuzzOwner, ID: i*3 - 60, Name: fmt.Sprintf("plant %d", i)}
		if i%7 != 0 {
			tag := tags[i%int64(len(tags))]
			p.Tag = &tag
		}
		if _, _, err := fs.plants.CreatePlant(context.Background(), p); err != nil {
			f.Fatal(err)
		}
	}

	list := func(t *testing.T, target string) *httptest.ResponseRecorder {
		req, err := http.NewRequest(http.MethodGet, target, nil)
		if err != nil {
			t.Fatalf("request %q: %v", target, err)
		}
		req.RequestURI = target
		req.Header.Set("Authorization", "Bearer "+fuzzReadOnly)
		return fs.do(req)
	}

	f.Fuzz(func(t *testing.T, limit, after, tag string, present uint8) {
		var rawQuery string
		if present&8 != 0 {
			rawQuery = limit
		} else {
			q := url.Values{}
			if present&1 != 0 {
				q.Set("limit", limit)
			}
			if present&2 != 0 {
				q.Set("after", after)
			}
			if present&4 != 0 {
				q.Set("tag", tag)
			}
			rawQuery = q.Encode()
		}
		// A '#' starts the fragment: what follows is not sent as the query.
		rawQuery, _, _ = strings.Cut(rawQuery, "#")
		u := &url.URL{Path: "/plants", RawQuery: rawQuery}
		if _, err := http.NewRequest(http.MethodGet, u.String(), nil); err != nil {
			t.Skip("not a request target net/http can carry")
		}
		w := list(t, u.String())
		switch w.Code {
		case http.StatusOK:
		case http.StatusBadRequest:
			// 40003 for a bad limit or after; 40002 for the string faults
			// of bodies in the query (a tag with U+0000 or not UTF-8, a
			// parameter given twice).
			if code := checkErrorBody(t, w); code != plantstore.CodeInvalidQuery && code != plantstore.CodeInvalidBody {
				t.Fatalf("query %q: 400 with error %d, want %d or %d", rawQuery, code, plantstore.CodeInvalidQuery, plantstore.CodeInvalidBody)
			}
			if !strings.Contains(w.Body.String(), `invalid query parameter`) {
				t.Fatalf("query %q: 400 does not name the query parameter: %s", rawQuery, w.Body.String())
			}
			return
		default:
			t.Fatalf("query %q: status %d: %s", rawQuery, w.Code, w.Body.String())
		}

		q, _ := url.ParseQuery(rawQuery)
		sort := cmp.Or(q.Get("sort"), "id")
		// order compares two plants in the query's order (ties by id).
		order := func(a, b apiPlant) int {
			var c int
			switch strings.TrimPrefix(sort, "-") {
			case "name":
				c = strings.Compare(*a.Name, *b.Name) // code point order
			case "created_at":
				c = strings.Compare(*a.CreatedAt, *b.CreatedAt) // fixed width: time order
			}
			if c == 0 {
				c = cmp.Compare(*a.ID, *b.ID)
			}
			if strings.HasPrefix(sort, "-") {
				c = -c
			}
			return c
		}
		// checkPage checks a page of q's query: the plants that match q's
		// filters, in its order, after prev (the last plant of the page
		// before) or, with prev nil, after q's after when it is an id.
		checkPage := func(w *httptest.ResponseRecorder, prev *apiPlant) []apiPlant {
			var plants []apiPlant
			dec := json.NewDecoder(bytes.NewReader(w.Body.Bytes()))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&plants); err != nil || plants == nil {
				t.Fatalf("query %q: 200 body is not a JSON array of plants (%v): %q", rawQuery, err, w.Body.String())
			}
			max := plantstore.DefaultPageSize
			if s := q.Get("limit"); s != "" {
				if n, err := strconv.Atoi(s); err == nil {
					max = n
				}
			}
			if len(plants) > max {
				t.Fatalf("query %q: %d plants, limit %d", rawQuery, len(plants), max)
			}
			var afterID *int64
			if s := q.Get("after"); prev == nil && s != "" {
				if n, err := strconv.ParseInt(s, 10, 64); err == nil {
					afterID = &n
				}
			}
			bound := func(name string) (time.Time, bool) {
				b, err := time.Parse(time.RFC3339Nano, q.Get(name))
				return b, err == nil
			}
			createdAfter, hasAfter := bound("created_after")
			createdBefore, hasBefore := bound("created_before")
			words := textsearch.Words(q.Get("q"))
			for i, p := range plants {
				checkPlant(t, p)
				if afterID != nil && *p.ID <= *afterID {
					t.Fatalf("query %q: id %d not after %d", rawQuery, *p.ID, *afterID)
				}
				if i == 0 && prev != nil && order(*prev, p) >= 0 {
					t.Fatalf("query %q: the next page starts with plant %d, not after plant %d", rawQuery, *p.ID, *prev.ID)
				}
				if i > 0 && order(plants[i-1], p) >= 0 {
					t.Fatalf("query %q: plants %d and %d not in %s order", rawQuery, *plants[i-1].ID, *p.ID, sort)
				}
				if tags := q["tag"]; len(tags) > 0 && (p.Tag == nil || !slices.Contains(tags, *p.Tag)) {
					t.Fatalf("query %q: plant %d has tag %v", rawQuery, *p.ID, p.Tag)
				}
				doc := textsearch.Document(*p.Name, p.Tag)
				for _, word := range words {
					if !strings.Contains(doc, " "+word) {
						t.Fatalf("query %q: plant %d (%q) has no word starting with %q", rawQuery, *p.ID, doc, word)
					}
				}
				created, err := time.Parse(time.RFC3339Nano, *p.CreatedAt)
				if err != nil {
					t.Fatalf("query %q: plant %d: %v", rawQuery, *p.ID, err)
				}
				if (hasAfter && !created.After(createdAfter)) || (hasBefore && !created.Before(createdBefore)) {
					t.Fatalf("query %q: plant %d created at %s", rawQuery, *p.ID, *p.CreatedAt)
				}
			}
			return plants
		}
		plants := checkPage(w, nil)

		link := w.Header().Values("Link")
		if len(link) == 0 {
			return
		}
		m := linkRE.FindStringSubmatch(link[0])
		if len(link) != 1 || m == nil {
			t.Fatalf("query %q: Link %q is not one `<...>; rel=\"next\"`", rawQuery, link)
		}
		next, err := url.Parse(m[1])
		if err != nil || next.Path != "/plants" || next.IsAbs() {
			t.Fatalf("query %q: Link target %q is not a relative /plants URL (%v)", rawQuery, m[1], err)
		}
		nq := next.Query()
		if len(plants) == 0 || nq.Get("after") == "" {
			t.Fatalf("query %q: Link %q does not continue after the last plant", rawQuery, m[1])
		}
		set := func(list []string) []string { return slices.Compact(slices.Sorted(slices.Values(list))) }
		if !slices.Equal(set(q["tag"]), set(nq["tag"])) || nq.Get("q") != q.Get("q") || cmp.Or(nq.Get("sort"), "id") != sort {
			t.Fatalf("query %q: Link %q changes the query", rawQuery, m[1])
		}
		nw := list(t, m[1])
		if nw.Code != http.StatusOK {
			t.Fatalf("query %q: following Link %q: status %d: %s", rawQuery, m[1], nw.Code, nw.Body.String())
		}
		// The next page is of the same query, after this page's last plant.
		checkPage(nw, &plants[len(plants)-1])
	})
}
