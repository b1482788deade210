package plantlines_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	plantstorehttp "github.com/plantstore/plantstore/internal/http"
	"github.com/plantstore/plantstore/internal/plantlines"
	"github.com/plantstore/plantstore/internal/service"
	"github.com/plantstore/plantstore/internal/sqlite"
)

func ptr(s string) *string { return &s }

// got is a Line as the tests compare it: the error as its text.
type got struct {
	Number int
	Plant  *plantstore.Plant
	Err    string
}

func read(t *testing.T, input string, opt plantlines.Options) ([]got, error) {
	t.Helper()
	lines, err := plantlines.ReadAll([]byte(input), opt)
	var out []got
	for _, l := range lines {
		g := got{Number: l.Number, Plant: l.Plant}
		if l.Err != nil {
			g.Err = l.Err.Error()
		}
		out = append(out, g)
	}
	return out, err
}

// TestJSONLine: a JSON line is a plant exactly when POST /plants would take
// it as its body: the API's text checks, exact member names, other members
// ignored, the contract's types, the limits of a new plant.
func TestJSONLine(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       *plantstore.Plant
		err        string
	}{
		{"OK", `{"id":1,"name":"Fern","tag":"green"}`, &plantstore.Plant{ID: 1, Name: "Fern", Tag: ptr("green")}, ""},
		{"OKNoTag", ` {"name":"Fern","id":-9223372036854775808} `, &plantstore.Plant{ID: -9223372036854775808, Name: "Fern"}, ""},
		{"OKEscapes", `{"id":1,"name":"\u00e9\ud83c\udf31\"","tag":""}`, &plantstore.Plant{ID: 1, Name: "é🌱\"", Tag: ptr("")}, ""},
		{"OKUnknownIgnored", `{"id":1,"name":"Fern","color":"red","ID":2,"owner":"bob"}`, &plantstore.Plant{ID: 1, Name: "Fern"}, ""},
		{"OKControl", `{"id":1,"name":"\u001b[2J\u0007"}`, &plantstore.Plant{ID: 1, Name: "\x1b[2J\x07"}, ""},
		{"InvalidUTF8", "{\"id\":1,\"name\":\"F\xffern\"}", nil, "not valid UTF-8"},
		{"InvalidUTF8Ignored", "{\"id\":1,\"name\":\"Fern\",\"x\":\"\xc3\"}", nil, "not valid UTF-8"},
		{"DuplicateKey", `{"id":1,"name":"Fern","name":"Ivy"}`, nil, `duplicate key "name"`},
		{"DuplicateEscapedKey", `{"id":1,"name":"Fern","n\u0061me":"Ivy"}`, nil, `duplicate key "name"`},
		{"DuplicateIgnoredKey", `{"id":1,"name":"Fern","x":1,"x":2}`, nil, `duplicate key "x"`},
		{"LoneSurrogate", `{"id":1,"name":"\ud800"}`, nil, `name: must not contain a lone surrogate (\ud800 not followed by a low surrogate \udc00-\udfff)`},
		{"LoneLowSurrogate", `{"id":1,"name":"a","tag":"\udc00"}`, nil, `tag: must not contain a lone surrogate (\udc00 not after a high surrogate \ud800-\udbff)`},
		{"NUL", `{"id":1,"name":"a\u0000"}`, nil, `name: must not contain U+0000 (\u0000)`},
		{"UpperID", `{"ID":1,"name":"Fern"}`, nil, "id: required"},
		{"UpperName", `{"id":1,"Name":"Fern"}`, nil, "name: required"},
		{"NoMembers", `{}`, nil, "id: required; name: required"},
		{"NotObject", `[1]`, nil, "must be a JSON object (a plant)"},
		{"NotJSON", `this is not json`, nil, "not valid JSON (or more than one JSON value)"},
		{"TwoValues", `{"id":1,"name":"a"} {}`, nil, "not valid JSON (or more than one JSON value)"},
		{"FractionalID", `{"id":1.0,"name":"a"}`, nil, "id: must be an integer from -9223372036854775808 to 9223372036854775807 (int64)"},
		{"ExponentID", `{"id":1e2,"name":"a"}`, nil, "id: must be an integer from -9223372036854775808 to 9223372036854775807 (int64)"},
		{"StringID", `{"id":"1","name":"a"}`, nil, "id: must be an integer from -9223372036854775808 to 9223372036854775807 (int64)"},
		{"BigID", `{"id":9223372036854775808,"name":"a"}`, nil, "id: must be an integer from -9223372036854775808 to 9223372036854775807 (int64)"},
		{"NullName", `{"id":1,"name":null}`, nil, "name: must be a string"},
		{"NullTag", `{"id":1,"name":"a","tag":null}`, nil, "tag: must be a string (leave it out for no tag)"},
		{"EmptyName", `{"id":1,"name":""}`, nil, "name: must have at least 1 character"},
		{"LongTag", `{"id":1,"name":"a","tag":"` + strings.Repeat("t", 65) + `"}`, nil, "tag: must have at most 64 characters"},
		{"Deep", `{"id":1,"name":"a","x":` + strings.Repeat("[", 65) + strings.Repeat("]", 65) + `}`, nil, "objects and arrays must not nest more than 64 deep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines, err := read(t, "\n"+tc.line+"\n", plantlines.Options{Format: plantlines.JSONLines})
			if err != nil {
				t.Fatal(err)
			}
			want := []got{{Number: 2, Plant: tc.want, Err: tc.err}}
			if diff := cmp.Diff(want, lines); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestOwners: with Owners, a line's owner member wins over the default;
// none at all is ErrNoOwner; owners are checked.
func TestOwners(t *testing.T) {
	input := "\ufeff" + `{"owner":"bob","id":1,"name":"a"}` + "\r\n" +
		`{"id":2,"name":"b"}` + "\n" +
		`{"owner":"","id":3,"name":"c"}` + "\n" +
		`{"owner":"a\u0001","id":4,"name":"d"}` + "\n" +
		`{"owner":7,"id":5,"name":"e"}` + "\n" +
		`{"Owner":"bob","id":6,"name":"f"}`
	lines, err := read(t, input, plantlines.Options{Owners: true, DefaultOwner: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	want := []got{
		{1, &plantstore.Plant{Owner: "bob", ID: 1, Name: "a"}, ""},
		{2, &plantstore.Plant{Owner: "alice", ID: 2, Name: "b"}, ""},
		{3, nil, "owner must not be empty"},
		{4, nil, "owner must have printable characters only, not U+0001 (at byte 1)"},
		{5, nil, "owner: must be a string"},
		{6, &plantstore.Plant{Owner: "alice", ID: 6, Name: "f"}, ""},
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	ls, err := plantlines.ReadAll([]byte(`{"id":2,"name":"b"}`), plantlines.Options{Owners: true})
	if err != nil || len(ls) != 1 || !errors.Is(ls[0].Err, plantlines.ErrNoOwner) {
		t.Fatalf("no owner: %+v, %v; want ErrNoOwner", ls, err)
	}
}

// TestArray: one JSON array, each element numbered by its line; a broken
// array or data after it stops the reader, naming the line.
func TestArray(t *testing.T) {
	lines, err := read(t, "\ufeff\n[\n"+`{"id":1,"name":"a"},`+"\n\n"+`  {"id":2,"name":""}, {"id":3,"name":"c","id":4}`+"\n]\n",
		plantlines.Options{Name: "plants.txt"})
	if err != nil {
		t.Fatal(err)
	}
	want := []got{
		{3, &plantstore.Plant{ID: 1, Name: "a"}, ""},
		{5, nil, "name: must have at least 1 character"},
		{5, nil, `duplicate key "id"`},
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	for _, tc := range []struct{ input, err string }{
		{"[\n{\"id\":1,\"name\":\"a\"}\n{\"id\":2}]", "line 3: not a JSON array of plants"},
		{"[{\"id\":1,\"name\":\"a\"}]\n{}", "line 2: data after the JSON array"},
		{"[{\"id\":1,\"name\":\"a\"}", "line 1: not a JSON array of plants"},
	} {
		if _, err := read(t, tc.input, plantlines.Options{}); err == nil || !strings.HasPrefix(err.Error(), tc.err) {
			t.Errorf("%q: err = %v, want %q", tc.input, err, tc.err)
		}
	}
}

// TestCSV: the header names id and name (any case, any order, once each);
// fields must be UTF-8; the limits are a new plant's.
func TestCSV(t *testing.T) {
	input := "\ufeffName, ID ,tag,extra\n" +
		"Aloe,1,succulent,x\n" +
		"Basil,2,,\n" +
		"Bad id,x,,\n" +
		",3,,\n" +
		"F\xffig,4,,\n" +
		"Elm,,,\n" +
		"Fig,5\n" +
		"\"Gin\"kgo\",6,,\n"
	lines, err := read(t, input, plantlines.Options{Name: "plants.csv"})
	if err != nil {
		t.Fatal(err)
	}
	var numbers []int
	for i := range lines {
		numbers = append(numbers, lines[i].Number)
	}
	want := []got{
		{2, &plantstore.Plant{ID: 1, Name: "Aloe", Tag: ptr("succulent")}, ""},
		{3, &plantstore.Plant{ID: 2, Name: "Basil"}, ""},
		{4, nil, `id: must be an integer from -9223372036854775808 to 9223372036854775807 (int64), not "x"`},
		{5, nil, "name: must have at least 1 character"},
		{6, nil, "not valid UTF-8"},
		{7, nil, "id: required"},
		{8, nil, "2 fields, want 4"},
		{9, nil, `not CSV: extraneous or missing " in quoted-field`},
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	for _, tc := range []struct{ input, err string }{
		{"id,name,ID\n1,a,2\n", `line 1: csv header: column "id" given twice`},
		{"id,tag\n1,a\n", `line 1: csv header "id,tag": no "name" column`},
		{"id,na\xffme\n1,a\n", "line 1: csv header: not valid UTF-8"},
	} {
		if _, err := read(t, tc.input, plantlines.Options{Format: plantlines.CSV}); err == nil || err.Error() != tc.err {
			t.Errorf("%q: err = %v, want %q", tc.input, err, tc.err)
		}
	}
}

// TestSniff: the format comes from the name's extension, else from the
// first byte that is not blank.
func TestSniff(t *testing.T) {
	for _, tc := range []struct {
		name, input string
		wantPlant   bool
	}{
		{"-", "\ufeff  \n" + `{"id":1,"name":"a"}`, true},
		{"-", "\n[" + `{"id":1,"name":"a"}]`, true},
		{"-", "id,name\n1,a\n", true},
		{"p.csv", `{"id":1,"name":"a"}`, false}, // CSV: no id column
		{"p.jsonl", "id,name\n1,a\n", false},    // JSON: not valid
	} {
		lines, err := plantlines.ReadAll([]byte(tc.input), plantlines.Options{Name: tc.name})
		ok := err == nil && len(lines) > 0 && lines[0].Plant != nil && lines[0].Plant.ID == 1
		if ok != tc.wantPlant {
			t.Errorf("%s %q: %+v, %v", tc.name, tc.input, lines, err)
		}
	}
}

// TestLongLine: a JSON line longer than the API's body limit stops the
// reader, naming the line, without reading the line whole into memory.
func TestLongLine(t *testing.T) {
	input := `{"id":1,"name":"a"}` + "\n" + `{"id":2,"name":"` + strings.Repeat("x", 1<<20) + `"}` + "\n"
	lines, err := read(t, input, plantlines.Options{})
	if err == nil || !strings.HasPrefix(err.Error(), "line 2: longer than 65536 bytes") || len(lines) != 1 {
		t.Fatalf("lines %+v, err %v", lines, err)
	}
}

// TestSameAsAPI: over real HTTP on 127.0.0.1 and a SQLite file, every body
// of TestJSONLine's kinds is taken by POST /plants exactly when the reader
// takes it as a line, and then stored as the plant the reader read; a body
// refused for what it holds is refused with the same message.
func TestSameAsAPI(t *testing.T) {
	ctx := t.Context()
	db := sqlite.NewDB(filepath.Join(t.TempDir(), "plantstore.db"))
	if err := db.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	svc := service.New(db, service.Config{})
	s := plantstorehttp.NewServer()
	s.Addr = "127.0.0.1:0"
	s.PlantService, s.TokenService, s.WebhookService, s.Storage = svc.Plants, svc.Tokens, svc.Webhooks, db
	s.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	if err := s.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	_, token, err := svc.Tokens.CreateToken(ctx, plantstore.TokenRequest{Owner: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	for i, body := range []string{
		`{"id":1,"name":"Fern","tag":"green"}`,
		`{"name":"Fern","id":-9223372036854775808}`,
		`{"id":1,"name":"\u00e9\ud83c\udf31\"","tag":""}`,
		`{"id":1,"name":"Fern","color":"red","ID":2,"owner":"bob"}`,
		`{"id":1,"name":"\u001b[2J\u0007"}`,
		"{\"id\":1,\"name\":\"F\xffern\"}",
		"{\"id\":1,\"name\":\"Fern\",\"x\":\"\xc3\"}",
		`{"id":1,"name":"Fern","name":"Ivy"}`,
		`{"id":1,"name":"Fern","n\u0061me":"Ivy"}`,
		`{"id":1,"name":"Fern","x":1,"x":2}`,
		`{"id":1,"name":"\ud800"}`,
		`{"id":1,"name":"a","tag":"\udc00"}`,
		`{"id":1,"name":"a\u0000"}`,
		`{"ID":1,"name":"Fern"}`,
		`{"id":1,"Name":"Fern"}`,
		`{}`,
		`[1]`,
		`"x"`,
		`{"id":1,"name":"a"} {}`,
		`{"id":1.0,"name":"a"}`,
		`{"id":1e2,"name":"a"}`,
		`{"id":"1","name":"a"}`,
		`{"id":-0,"name":"a"}`,
		`{"id":9223372036854775808,"name":"a"}`,
		`{"id":1,"name":null}`,
		`{"id":1,"name":"a","tag":null}`,
		`{"id":1,"name":""}`,
		`{"id":1,"name":"` + strings.Repeat("é", 256) + `"}`,
		`{"id":1,"name":"` + strings.Repeat("é", 257) + `"}`,
		`{"id":1,"name":"a","tag":"` + strings.Repeat("t", 65) + `"}`,
		`{"id":1,"name":"a","x":` + strings.Repeat("[", 64) + strings.Repeat("]", 64) + `}`,
		`{"id":1,"name":"a","x":` + strings.Repeat("[", 65) + strings.Repeat("]", 65) + `}`,
		`{"id":"1","name":"","tag":null}`,
		`{"name":7,"tag":["a"]}`,
	} {
		id := int64(i + 1)
		body = strings.Replace(body, `"id":1,`, `"id":`+strconv.FormatInt(id, 10)+",", 1)
		lines, err := plantlines.ReadAll([]byte(body), plantlines.Options{Format: plantlines.JSONLines})
		if err != nil || len(lines) != 1 {
			t.Fatalf("%q: read %+v, %v", body, lines, err)
		}
		req, _ := http.NewRequestWithContext(ctx, "POST", s.URL()+"/plants", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		answer, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if got, want := res.StatusCode == http.StatusOK, lines[0].Plant != nil; got != want {
			t.Errorf("%q: API %d %s; reader: %+v, %v", body, res.StatusCode, answer, lines[0].Plant, lines[0].Err)
			continue
		}
		if res.StatusCode != http.StatusOK {
			// A line refused for what it holds (400 40002) is refused
			// with the API's words; only a line that is not an object
			// says so in the reader's own ("a plant", not "the body").
			var e struct {
				Error   int32
				Message string
			}
			if err := json.Unmarshal(answer, &e); err != nil {
				t.Fatalf("%q: %s: %v", body, answer, err)
			}
			if e.Error == plantstore.CodeInvalidBody && lines[0].Err.Error() != "must be a JSON object (a plant)" {
				if got, want := lines[0].Err.Error(), strings.TrimPrefix(e.Message, "invalid NewPlant: "); got != want {
					t.Errorf("%q: reader says %q, API %q", body, got, e.Message)
				}
			}
			continue
		}
		stored, err := svc.Plants.FindPlantByID(ctx, "alice", lines[0].Plant.ID)
		if err != nil {
			t.Fatalf("%q: %v", body, err)
		}
		stored.Owner, stored.CreatedAt, stored.UpdatedAt = "", time.Time{}, time.Time{}
		if diff := cmp.Diff(lines[0].Plant, stored); diff != "" {
			t.Errorf("%q: stored (-reader +API):\n%s", body, diff)
		}
	}
}
