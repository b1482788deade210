package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/client"
	"github.com/plantstore/plantstore/internal/cli/cliexit"
	plantstorehttp "github.com/plantstore/plantstore/internal/http"
	"github.com/plantstore/plantstore/internal/service"
)

// plantsServer is an in-process server over a SQLite file for the `plants`
// client commands, with a token of owner "alice".
type plantsServer struct {
	svc   *service.Services
	url   string
	token string
}

func openPlantsServer(t *testing.T) *plantsServer {
	t.Helper()
	db := openStore(t, tempDBPath(t))
	if _, err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	svc := service.New(db, service.Config{})
	s := plantstorehttp.NewServer()
	s.Addr = "127.0.0.1:0"
	s.PlantService, s.TokenService, s.WebhookService = svc.Plants, svc.Tokens, svc.Webhooks
	s.Storage = db
	s.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	if err := s.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Errorf("close server: %v", err)
		}
	})
	_, secret, err := svc.Tokens.CreateToken(context.Background(), plantstore.TokenRequest{Owner: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	return &plantsServer{svc: svc, url: s.URL(), token: secret}
}

// plants runs `plantstore plants ARGS` against the server, with the server
// and token from the environment.
func (ps *plantsServer) plants(t *testing.T, args ...string) result {
	t.Helper()
	return runCLI(t, map[string]string{"PLANTSTORE_SERVER": ps.url, "PLANTSTORE_TOKEN": ps.token},
		append([]string{"plants"}, args...)...)
}

// stored returns the owner's plants straight from the database.
func (ps *plantsServer) stored(t *testing.T) []client.Plant {
	t.Helper()
	var out []client.Plant
	var after *plantstore.PlantKey
	for {
		page, more, err := ps.svc.Plants.FindPlants(context.Background(),
			plantstore.PlantFilter{Owner: "alice", After: after, Limit: plantstore.MaxPageSize})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range page {
			out = append(out, client.Plant{ID: p.ID, Name: p.Name, Tag: p.Tag})
		}
		if !more {
			return out
		}
		after = &plantstore.PlantKey{ID: page[len(page)-1].ID}
	}
}

func mustSucceed(t *testing.T, r result) result {
	t.Helper()
	if r.err != nil {
		t.Fatalf("run: %v\nstdout:\n%s\nstderr:\n%s", r.err, r.stdout, r.stderr)
	}
	return r
}

func strPtr(s string) *string { return &s }

// ignoreTimes compares plants without their CreatedAt and UpdatedAt.
var ignoreTimes = cmpopts.IgnoreFields(client.Plant{}, "CreatedAt", "UpdatedAt")

// nextCursorRE matches the line `plants list` prints on stderr when more
// plants follow.
var nextCursorRE = regexp.MustCompile(`more plants follow: --after (\S+) `)

// nextCursor returns the cursor of the next page that `plants list`
// printed on stderr.
func nextCursor(t *testing.T, stderr string) string {
	t.Helper()
	m := nextCursorRE.FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("stderr %q: no next page's cursor", stderr)
	}
	return m[1]
}

// listedIDs returns the ids of the plants of a JSON list.
func listedIDs(t *testing.T, stdout string) []int64 {
	t.Helper()
	var plants []client.Plant
	if err := json.Unmarshal([]byte(stdout), &plants); err != nil {
		t.Fatalf("list output %q: %v", stdout, err)
	}
	ids := []int64{}
	for _, p := range plants {
		ids = append(ids, p.ID)
	}
	return ids
}

func TestPlantsCommands(t *testing.T) {
	t.Parallel()
	ps := openPlantsServer(t)

	r := mustSucceed(t, ps.plants(t, "create", "7", "Monstera", "--tag", "indoor"))
	var created client.Plant
	if err := json.Unmarshal([]byte(r.stdout), &created); err != nil {
		t.Fatal(err)
	}
	if created.CreatedAt.IsZero() || !created.UpdatedAt.Equal(created.CreatedAt) {
		t.Errorf("create: created_at %v, updated_at %v; want a time, both equal", created.CreatedAt, created.UpdatedAt)
	}
	wantJSON := fmt.Sprintf("{\n  \"id\": 7,\n  \"name\": \"Monstera\",\n  \"tag\": \"indoor\",\n  \"created_at\": %q,\n  \"updated_at\": %[1]q\n}\n",
		created.CreatedAt.Format(time.RFC3339Nano))
	if got := r.stdout; got != wantJSON {
		t.Errorf("create stdout = %q, want %q", got, wantJSON)
	}
	r = mustSucceed(t, ps.plants(t, "create", "3", "Fern", "--format", "table"))
	if got, want := r.stdout, "ID  NAME  TAG\n3   Fern  \n"; got != want {
		t.Errorf("create table = %q, want %q", got, want)
	}
	for i, name := range []string{"Aloe", "Basil", "Cactus"} {
		mustSucceed(t, ps.plants(t, "create", string(rune('1'+i))+"0", name))
	}

	r = mustSucceed(t, ps.plants(t, "get", "7"))
	var got client.Plant
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(created, got); diff != "" {
		t.Errorf("get (-want +got):\n%s", diff)
	}
	r = mustSucceed(t, ps.plants(t, "get", "7", "--format", "table"))
	if got, want := r.stdout, "ID  NAME      TAG\n7   Monstera  indoor\n"; got != want {
		t.Errorf("get table = %q, want %q", got, want)
	}

	// One page, with the cursor of the next on stderr.
	r = mustSucceed(t, ps.plants(t, "list", "--limit", "2"))
	var page []client.Plant
	if err := json.Unmarshal([]byte(r.stdout), &page); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]client.Plant{{ID: 3, Name: "Fern"}, created}, page, ignoreTimes); diff != "" {
		t.Errorf("list page (-want +got):\n%s", diff)
	}
	cursor := nextCursor(t, r.stderr)
	r = mustSucceed(t, ps.plants(t, "list", "--limit", "2", "--after", cursor))
	if got := listedIDs(t, r.stdout); !cmp.Equal(got, []int64{10, 20}) {
		t.Errorf("list --after %s = %v, want plants 10 and 20", cursor, got)
	}
	// A plant id is a cursor too (by id).
	r = mustSucceed(t, ps.plants(t, "list", "--limit", "2", "--after", "20"))
	if got := listedIDs(t, r.stdout); !cmp.Equal(got, []int64{30}) || r.stderr != "" {
		t.Errorf("last page = %v, stderr %q; want plant 30 and no stderr", got, r.stderr)
	}
	// All pages, as a table.
	r = mustSucceed(t, ps.plants(t, "list", "--all", "--limit", "2", "--format", "table"))
	want := "ID  NAME      TAG\n3   Fern      \n7   Monstera  indoor\n10  Aloe      \n20  Basil     \n30  Cactus    \n"
	if r.stdout != want {
		t.Errorf("list --all table =\n%s\nwant\n%s", r.stdout, want)
	}
	r = mustSucceed(t, ps.plants(t, "list", "--all", "--tag", "nope"))
	if got, want := r.stdout, "[]\n"; got != want {
		t.Errorf("empty list = %q, want %q", got, want)
	}

	r = mustSucceed(t, ps.plants(t, "delete", "7"))
	if r.stdout != "" {
		t.Errorf("delete stdout = %q, want none", r.stdout)
	}
	r = ps.plants(t, "get", "7")
	var apiErr *client.Error
	if !errors.As(r.err, &apiErr) || apiErr.Code != plantstore.CodeNotFound {
		t.Errorf("get after delete: err = %v, want a 40401 *client.Error", r.err)
	}
	r = ps.plants(t, "create", "3", "Not a fern")
	if !errors.As(r.err, &apiErr) || apiErr.Code != plantstore.CodeConflict {
		t.Errorf("conflicting create: err = %v, want a 40901 *client.Error", r.err)
	}

	// Flags instead of the environment; a wrong token.
	r = runCLI(t, nil, "plants", "get", "3", "--server", ps.url, "--token", ps.token)
	mustSucceed(t, r)
	r = runCLI(t, nil, "plants", "get", "3", "--server", ps.url, "--token", "pst_wrong")
	if !errors.As(r.err, &apiErr) || apiErr.Status != 401 {
		t.Errorf("wrong token: err = %v, want a 401 *client.Error", r.err)
	}
}

// TestPlantsListQuery: plants list's search, filters, sort and count
// flags, page after page through the printed cursor; the count goes to
// stderr, never into stdout's JSON.
func TestPlantsListQuery(t *testing.T) {
	t.Parallel()
	ps := openPlantsServer(t)
	created := map[string]time.Time{}
	for _, args := range [][]string{
		{"1", "Monstera deliciosa", "--tag", "green"},
		{"2", "Café au lait"},
		{"3", "Boston fern", "--tag", "green"},
		{"4", "Monstera adansonii", "--tag", "shade"},
		{"5", "Aloe vera", "--tag", "a,b"},
	} {
		r := mustSucceed(t, ps.plants(t, append([]string{"create"}, args...)...))
		var p client.Plant
		if err := json.Unmarshal([]byte(r.stdout), &p); err != nil {
			t.Fatal(err)
		}
		created[args[0]] = p.CreatedAt
	}
	at := func(id string) string { return created[id].Format(time.RFC3339Nano) }

	for _, tt := range []struct {
		args []string
		want []int64
	}{
		{[]string{"--q", "mon"}, []int64{1, 4}},
		{[]string{"--q", "mon del"}, []int64{1}},
		{[]string{"--q", "CAFE"}, []int64{2}},
		{[]string{"--tag", "green", "--tag", "shade"}, []int64{1, 3, 4}},
		{[]string{"--tag", "a,b"}, []int64{5}}, // a comma is part of the tag
		{[]string{"--sort=-name"}, []int64{1, 4, 2, 3, 5}},
		{[]string{"--sort", "created_at", "--q", "monstera"}, []int64{1, 4}},
		{[]string{"--created-after", at("2"), "--created-before", at("4")}, []int64{3}},
		{[]string{"--all", "--limit", "1", "--sort", "name"}, []int64{5, 3, 2, 4, 1}},
	} {
		r := mustSucceed(t, ps.plants(t, append([]string{"list"}, tt.args...)...))
		if got := listedIDs(t, r.stdout); !cmp.Equal(got, tt.want) || r.stderr != "" {
			t.Errorf("list %q = %v, stderr %q; want %v and no stderr", tt.args, got, r.stderr, tt.want)
		}
	}

	// Page by page with the printed cursor and the same query flags.
	r := mustSucceed(t, ps.plants(t, "list", "--sort", "name", "--limit", "2"))
	if got := listedIDs(t, r.stdout); !cmp.Equal(got, []int64{5, 3}) {
		t.Errorf("list --sort name page 1 = %v, want [5 3]", got)
	}
	cursor := nextCursor(t, r.stderr)
	r = mustSucceed(t, ps.plants(t, "list", "--sort", "name", "--limit", "2", "--after", cursor))
	if got := listedIDs(t, r.stdout); !cmp.Equal(got, []int64{2, 4}) {
		t.Errorf("list --sort name page 2 = %v, want [2 4]", got)
	}
	// The cursor of another query: the server's 400, exit 1.
	r = ps.plants(t, "list", "--sort=-name", "--limit", "2", "--after", cursor)
	var apiErr *client.Error
	if !errors.As(r.err, &apiErr) || apiErr.Status != 400 || cliexit.Status(r.err) != 1 {
		t.Errorf("cursor with another sort: %v, want a 400 *client.Error, exit 1", r.err)
	}

	// Counts: on stderr; stdout stays the plants.
	for _, tt := range []struct {
		args       []string
		want       []int64
		wantStderr string
	}{
		{[]string{"--q", "mon", "--count", "exact"}, []int64{1, 4}, "2 plants match (exact)\n"},
		{[]string{"--q", "mon del", "--count", "estimated"}, []int64{1}, "about 1 plant matches (estimated)\n"},
		{[]string{"--tag", "nope", "--count", "exact"}, []int64{}, "0 plants match (exact)\n"},
		{[]string{"--all", "--limit", "1", "--tag", "green", "--count", "exact"}, []int64{1, 3}, "2 plants match (exact)\n"},
	} {
		r := mustSucceed(t, ps.plants(t, append([]string{"list"}, tt.args...)...))
		if got := listedIDs(t, r.stdout); !cmp.Equal(got, tt.want) || r.stderr != tt.wantStderr {
			t.Errorf("list %q = %v, stderr %q; want %v, stderr %q", tt.args, got, r.stderr, tt.want, tt.wantStderr)
		}
	}
	r = mustSucceed(t, ps.plants(t, "list", "--limit", "1", "--count", "exact", "--format", "table"))
	if !strings.HasPrefix(r.stderr, "5 plants match (exact)\nmore plants follow: --after ") || strings.Contains(r.stdout, "match") {
		t.Errorf("list --count exact --format table: stdout %q, stderr %q; want the count and the cursor on stderr only", r.stdout, r.stderr)
	}

	// Usage errors exit 2 before any request.
	for _, args := range [][]string{
		{"--sort", "size"},
		{"--count", "planned"},
		{"--created-after", "2025-03-01T12:00:00"}, // no zone
		{"--created-before", "yesterday"},
	} {
		r := ps.plants(t, append([]string{"list"}, args...)...)
		if cliexit.Status(r.err) != 2 || !strings.Contains(r.stderr+r.err.Error(), args[0]) {
			t.Errorf("list %q: %v, stderr %q; want exit 2 naming %s", args, r.err, r.stderr, args[0])
		}
	}
}

func TestPlantsUsage(t *testing.T) {
	t.Parallel()
	var code cliexit.Code
	r := runCLI(t, nil, "plants", "list")
	if !errors.As(r.err, &code) || code != 2 || !strings.Contains(r.stderr, "--token") {
		t.Errorf("no token: err = %v, stderr %q; want exit 2 naming --token", r.err, r.stderr)
	}
	r = runCLI(t, map[string]string{"PLANTSTORE_TOKEN": "t"}, "plants", "list", "--format", "xml")
	if !errors.As(r.err, &code) || code != 2 {
		t.Errorf("bad format: err = %v, want exit 2", r.err)
	}
	r = runCLI(t, nil, "plants", "import", "--help")
	if !errors.As(r.err, &code) || code != 0 {
		t.Fatalf("import --help: err = %v", r.err)
	}
	for _, want := range []string{"--resume", "--concurrency", "replayed", "PLANTSTORE_TOKEN", "PLANTSTORE_SERVER"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("import --help lacks %q:\n%s", want, r.stdout)
		}
	}
	r = runCLI(t, nil, "--help")
	if !strings.Contains(r.stdout, "plants") {
		t.Errorf("--help lacks the plants command:\n%s", r.stdout)
	}
}

// The import files: 6 valid plants and 1 that conflicts with the stored
// plant 100; the Bad ones have invalid lines too, so nothing of them is
// sent.
var (
	longName = strings.Repeat("n", 300)

	importJSONL = `{"id": 1, "name": "Aloe", "tag": "succulent"}
{"id": 2, "name": "Basil"}
{"id": 3, "name": "Cactus", "color": "ignored, as POST /plants ignores it"}

{"id": 100, "name": "Other"}
{"id": 6, "name": "Dill", "tag": "herb"}
{"id": 7, "name": "Elm"}
{"id": 9, "name": "Ginkgo"}
`
	importJSONLBad = `{"id": 1, "name": "Aloe", "tag": "succulent"}
{"id": 2, "name": "Basil"}
{"id": 3, "name": "Cactus", "tag": null}
this is not json

{"id": 4, "name": ""}
{"id": 5, "name": "` + longName + `"}
{"id": 100, "name": "Other"}
{"name": "no id"}
{"id": 6, "name": "Dill", "tag": "herb"}
{"id": 7, "name": "Elm"}
{"id": 8, "name": "Fig", "tag": "` + strings.Repeat("t", 65) + `"}
{"id": 9, "name": "Ginkgo"}
{"ID": 10, "name": "Hosta"}
{"id": 11, "name": "Iris", "name": "Ivy"}
{"id": 12, "name": "J\ud800"}
` + "{\"id\": 13, \"name\": \"K\xffale\"}\n"

	importCSV = `id,name,tag
1,Aloe,succulent
2,Basil,
3,Cactus,
100,Other,
6,Dill,herb
7,Elm,
9,Ginkgo,
`
	importCSVBad = `id,name,tag
1,Aloe,succulent
2,Basil,
3,Cactus,
x,Bad id,
4,,
5,` + longName + `,
100,Other,
6,Dill,herb
7,Elm,
"8,Fig
9,Ginkgo,
`
	// The quote of line 11 runs to the end: the CSV reader reports it
	// there and the rest of the file is part of that one bad record.
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestPlantsImport(t *testing.T) {
	t.Parallel()
	wantStored := []client.Plant{
		{ID: 1, Name: "Aloe", Tag: strPtr("succulent")},
		{ID: 2, Name: "Basil"},
		{ID: 3, Name: "Cactus"},
		{ID: 6, Name: "Dill", Tag: strPtr("herb")},
		{ID: 7, Name: "Elm"},
		{ID: 9, Name: "Ginkgo"},
		{ID: 100, Name: "Original"},
	}
	for _, tt := range []struct {
		name, file, content string
		args                []string
		wantSummary         string
		wantResume          string   // the summary of a second run with --resume
		wantLines           []string // substrings of the report
		wantStored          []client.Plant
	}{
		{
			name: "JSONL", file: "plants.jsonl", content: importJSONL,
			wantSummary: "created 6, replayed 0, conflicted 1, invalid 0",
			wantResume:  "created 0, replayed 6, conflicted 1, invalid 0",
			wantLines:   []string{"conflicted: line 5: "},
			wantStored:  wantStored,
		},
		{
			name: "CSV", file: "plants.csv", content: importCSV,
			wantSummary: "created 6, replayed 0, conflicted 1, invalid 0",
			wantResume:  "created 0, replayed 6, conflicted 1, invalid 0",
			wantLines:   []string{"conflicted: line 5: "},
			wantStored:  wantStored,
		},
		{
			name: "JSON array by flag", file: "plants.txt",
			content: "[\n" + `{"id": 1, "name": "Aloe", "tag": "succulent"},` + "\n\n" + `  {"id": 100, "name": "Original"}` + "\n]\n",
			args:    []string{"--input-format", "jsonl", "--concurrency", "1"},
			// Plant 100 is stored identically: without --resume the
			// server's 200 cannot tell, so it counts as created.
			wantSummary: "created 2, replayed 0, conflicted 0, invalid 0",
			wantResume:  "created 0, replayed 2, conflicted 0, invalid 0",
			wantStored:  []client.Plant{wantStored[0], wantStored[6]},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ps := openPlantsServer(t)
			mustSucceed(t, ps.plants(t, "create", "100", "Original"))
			path := writeFile(t, tt.file, tt.content)

			check := func(r result, wantSummary string) {
				t.Helper()
				if !strings.HasSuffix(r.stdout, wantSummary+"\n") {
					t.Errorf("summary:\n%s\nwant it to end with %q", r.stdout, wantSummary)
				}
				for _, line := range tt.wantLines {
					if !strings.Contains(r.stdout, line) {
						t.Errorf("report lacks %q:\n%s", line, r.stdout)
					}
				}
				if r.stderr != "" {
					t.Errorf("stderr = %q, want nothing (not a terminal: no progress bar)", r.stderr)
				}
				var code cliexit.Code
				if wantExit := !strings.HasSuffix(wantSummary, "conflicted 0, invalid 0"); wantExit != (errors.As(r.err, &code) && code == 1) {
					t.Errorf("err = %v, want exit 1: %v", r.err, wantExit)
				}
				if diff := cmp.Diff(tt.wantStored, ps.stored(t)); diff != "" {
					t.Errorf("stored (-want +got):\n%s", diff)
				}
			}
			check(ps.plants(t, append([]string{"import", path}, tt.args...)...), tt.wantSummary)

			// Again with --resume: nothing is sent; what is stored is
			// replayed.
			check(ps.plants(t, append([]string{"import", path, "--resume"}, tt.args...)...), tt.wantResume)
		})
	}
}

// TestPlantsImportInvalid: a file with any line that is not a plant POST
// /plants would take (the API's checks: UTF-8, duplicate keys, lone
// surrogates, exact member names, types, limits) sends nothing: the report
// names every invalid line (the first 5 of them), the command exits 1 with
// a message saying so, and nothing is stored.
func TestPlantsImportInvalid(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, file, content string
		wantLines           []string
		wantSummary         string
	}{
		{
			name: "JSONL", file: "plants.jsonl", content: importJSONLBad,
			wantLines: []string{
				"invalid: line 3: tag: must be a string (leave it out for no tag)",
				"invalid: line 4: not valid JSON",
				"invalid: line 6: name: must have at least 1 character",
				"invalid: line 7: name: must have at most 256 characters",
				"invalid: line 9: id: required",
				"invalid: 5 more lines",
			},
			wantSummary: "created 0, replayed 0, conflicted 0, invalid 10, not sent 6",
		},
		{
			name: "Strict", file: "plants.jsonl", content: `{"id": 1, "name": "Aloe"}` + "\n" + strings.Join(strings.Split(importJSONLBad, "\n")[13:], "\n"),
			wantLines: []string{
				"invalid: line 2: id: required",
				`invalid: line 3: duplicate key "name"`,
				`invalid: line 4: name: must not contain a lone surrogate`,
				"invalid: line 5: not valid UTF-8",
			},
			wantSummary: "created 0, replayed 0, conflicted 0, invalid 4, not sent 1",
		},
		{
			name: "CSV", file: "plants.csv", content: importCSVBad,
			wantLines: []string{
				`invalid: line 5: id: must be an integer from -9223372036854775808 to 9223372036854775807 (int64), not "x"`,
				"invalid: line 6: name: must have at least 1 character",
				"invalid: line 7: name: must have at most 256 characters",
				"invalid: line 11: not CSV",
			},
			wantSummary: "created 0, replayed 0, conflicted 0, invalid 4, not sent 6",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ps := openPlantsServer(t)
			mustSucceed(t, ps.plants(t, "create", "100", "Original"))
			r := ps.plants(t, "import", writeFile(t, tt.file, tt.content))
			if !strings.HasSuffix(r.stdout, tt.wantSummary+"\n") {
				t.Errorf("summary:\n%s\nwant it to end with %q", r.stdout, tt.wantSummary)
			}
			for _, line := range tt.wantLines {
				if !strings.Contains(r.stdout, line) {
					t.Errorf("report lacks %q:\n%s", line, r.stdout)
				}
			}
			if r.err == nil || cliexit.Status(r.err) != 1 || !strings.Contains(r.err.Error(), "nothing sent") {
				t.Errorf("err = %v, want exit 1: nothing sent", r.err)
			}
			if diff := cmp.Diff([]client.Plant{{ID: 100, Name: "Original"}}, ps.stored(t)); diff != "" {
				t.Errorf("stored (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPlantsImportTokenRefused(t *testing.T) {
	t.Parallel()
	ps := openPlantsServer(t)
	path := writeFile(t, "p.jsonl", importJSONL)
	r := runCLI(t, map[string]string{"PLANTSTORE_SERVER": ps.url, "PLANTSTORE_TOKEN": "pst_wrong"}, "plants", "import", path)
	if r.err == nil || !strings.Contains(r.err.Error(), "401") {
		t.Errorf("err = %v, want the import stopped on 401", r.err)
	}
	if got := ps.stored(t); len(got) != 0 {
		t.Errorf("stored %v, want nothing", got)
	}
}
