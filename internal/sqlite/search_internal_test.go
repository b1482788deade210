package sqlite

import (
	"cmp"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/portable"
	"github.com/plantstore/plantstore/internal/textsearch"
)

// The storetest table checks what a search answers on few plants, where
// every filtered page fits the first window. These tests take each way of
// search.go on more plants, with small windows, against the same answers
// computed in Go; and check plant_search against plants after every kind
// of write.

// vocab is a vocabulary of n made-up words, the most common first.
func vocab(n int) []string {
	r := rand.New(rand.NewPCG(1, 2))
	words := make([]string, n)
	for i := range words {
		b := make([]byte, 3+r.IntN(6))
		for j := range b {
			b[j] = byte('a' + r.IntN(26))
		}
		words[i] = string(b)
	}
	words[0], words[1], words[2] = "monstera", "deliciosa", "Café"
	return words
}

var searchTags = []string{"green", "tropical", "succulent", "rare"}

// searchNow is a time with nanoseconds, as plants written before
// microsecond times could have.
var searchNow = time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC)

// makePlants returns n plants of owner from ids first.., names of one to
// three words of the vocabulary drawn by Zipf's law.
func makePlants(owner string, first int64, n int, words []string, seed uint64) []*plantstore.Plant {
	r := rand.New(rand.NewPCG(seed, 7))
	zipf := rand.NewZipf(r, 1.1, 1, uint64(len(words)-1)) // rank k: about 1/(k+1)^1.1
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	out := make([]*plantstore.Plant, n)
	for i := range out {
		k := 1 + r.IntN(3)
		name := make([]string, k)
		for j := range name {
			name[j] = words[zipf.Uint64()]
		}
		p := &plantstore.Plant{Owner: owner, ID: first + int64(i), Name: strings.Join(name, " "),
			CreatedAt: t0.Add(time.Duration(r.IntN(n)) * time.Second)} // creation times repeat
		if t := r.IntN(len(searchTags) + 2); t < len(searchTags) {
			p.Tag = &searchTags[t]
		}
		p.UpdatedAt = p.CreatedAt
		out[i] = p
	}
	return out
}

// docs caches the words of the plants of the tests.
var docs sync.Map // *plantstore.Plant -> string

// want is f's page computed in Go from plants.
func want(plants []*plantstore.Plant, f plantstore.PlantFilter) []*plantstore.Plant {
	var out []*plantstore.Plant
	for _, p := range plants {
		if p.Owner != f.Owner || len(f.Tags) > 0 && (p.Tag == nil || !slices.Contains(f.Tags, *p.Tag)) ||
			!f.CreatedAfter.IsZero() && !p.CreatedAt.After(f.CreatedAfter) ||
			!f.CreatedBefore.IsZero() && !p.CreatedAt.Before(f.CreatedBefore) {
			continue
		}
		doc, ok := docs.Load(p)
		if !ok {
			doc, _ = docs.LoadOrStore(p, textsearch.Document(p.Name, p.Tag))
		}
		if !allIn(doc.(string), f.Words) {
			continue
		}
		if f.After != nil && compare(f.Sort, p, &plantstore.Plant{ID: f.After.ID, Name: f.After.Name, CreatedAt: f.After.CreatedAt}) <= 0 {
			continue
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *plantstore.Plant) int { return compare(f.Sort, a, b) })
	return out[:min(len(out), f.Limit)]
}

func allIn(doc string, words []string) bool {
	for _, w := range words {
		if !strings.Contains(doc, " "+w) {
			return false
		}
	}
	return true
}

// compare orders a and b as s does.
func compare(s plantstore.PlantSort, a, b *plantstore.Plant) int {
	var c int
	switch s {
	case plantstore.SortName, plantstore.SortNameDesc:
		c = strings.Compare(a.Name, b.Name)
	case plantstore.SortCreatedAt, plantstore.SortCreatedAtDesc:
		c = a.CreatedAt.Compare(b.CreatedAt)
	}
	if c == 0 {
		c = cmp.Compare(a.ID, b.ID)
	}
	if s.Desc() {
		c = -c
	}
	return c
}

// withWindows runs the test with the windows and cost given, and collects
// the ways the pages took.
func withWindows(t *testing.T, probe, most, cost int64) map[string]int {
	t.Helper()
	p, m, c, tr := probeWindow, maxWindow, selectiveCost, traceList
	probeWindow, maxWindow, selectiveCost = probe, most, cost
	ways := map[string]int{}
	traceList = func(way string) { ways[way]++ }
	t.Cleanup(func() { probeWindow, maxWindow, selectiveCost, traceList = p, m, c, tr })
	return ways
}

// searchFilters are the filters TestListPlantsWays pages through.
func searchFilters(words []string) []plantstore.PlantFilter {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	rare := words[len(words)-1]
	var fs []plantstore.PlantFilter
	for _, base := range []plantstore.PlantFilter{
		{},
		{Words: []string{"monstera"}},
		{Words: []string{"mon", "del"}},
		{Words: []string{"cafe"}},
		{Words: []string{rare}},
		{Words: []string{rare[:2]}},
		{Words: []string{"zzzz"}},
		{Tags: []string{"rare"}},
		{Tags: []string{"green", "rare"}},
		{Tags: []string{"green", "tropical", "succulent", "rare"}},
		{Tags: []string{"tropical"}, Words: []string{"mon"}},
		{CreatedAfter: t0.Add(100 * time.Second), CreatedBefore: t0.Add(160 * time.Second)},
		{CreatedAfter: t0.Add(1000 * time.Second), Words: []string{"de"}},
		{Tags: []string{"succulent", "nope"}, CreatedBefore: t0.Add(900 * time.Second), Words: []string{words[5]}},
	} {
		for s := range plantstore.PlantSort(6) {
			f := base
			f.Owner, f.Sort, f.Limit = "alice", s, 29
			fs = append(fs, f)
		}
	}
	return fs
}

// TestListPlantsWays pages through filters with every order on 2,000
// plants, with windows small enough that pages take every way (one
// window, two, the selective read), and large (the first window).
func TestListPlantsWays(t *testing.T) {
	db := openInternal(t, nil)
	words := vocab(300)
	plants := append(makePlants("alice", 1, 2000, words, 1), makePlants("bob", 1, 500, words, 2)...)
	if _, err := db.BulkInsertPlants(t.Context(), plants); err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		name              string
		probe, most, cost int64
		ways              []string // each must be taken
	}{
		{"Small", 100, 3000, 10, []string{"scan", "window", "window end", "windows", "windows end", "select"}},
		{"SelectiveCheap", 100, 800, 1, []string{"select"}},
		{"Default", probeWindow, maxWindow, selectiveCost, []string{"scan", "window", "window end"}},
	} {
		t.Run(w.name, func(t *testing.T) {
			ways := withWindows(t, w.probe, w.most, w.cost)
			for _, f := range searchFilters(words) {
				pages := 0
				for {
					got, err := db.ListPlants(t.Context(), f)
					if err != nil {
						t.Fatalf("%+v: %v", f, err)
					}
					if diff := gocmp.Diff(want(plants, f), got, cmpopts.EquateEmpty()); diff != "" {
						t.Fatalf("%+v (page %d): (-want +got)\n%s", f, pages, diff)
					}
					pages++
					if len(got) < f.Limit {
						break
					}
					f.After = plantstore.KeyOf(got[len(got)-1])
				}
			}
			for _, way := range w.ways {
				if ways[way] == 0 {
					t.Errorf("no page took the way %q (ways: %v)", way, ways)
				}
			}
		})
	}
}

// TestCountPlants: exact counts, and estimates exact up to
// EstimateExactUpTo and above it beyond, within a factor of two here.
func TestCountPlants(t *testing.T) {
	db := openInternal(t, nil)
	words := vocab(300)
	plants := append(makePlants("alice", 1, 6000, words, 3), makePlants("bob", 1, 1000, words, 4)...)
	if _, err := db.BulkInsertPlants(t.Context(), plants); err != nil {
		t.Fatal(err)
	}
	for _, f := range searchFilters(words) {
		if f.Sort != plantstore.SortID {
			continue
		}
		f.Limit = 1 << 30
		exact := int64(len(want(plants, f)))
		if got, err := db.CountPlants(t.Context(), f, false); err != nil || got != exact {
			t.Fatalf("%+v: exact count %d, %v; want %d", f, got, err, exact)
		}
		est, err := db.CountPlants(t.Context(), f, true)
		switch {
		case err != nil:
			t.Fatal(err)
		case exact <= plantstore.EstimateExactUpTo && est != exact:
			t.Errorf("%+v: estimated %d, want the exact %d", f, est, exact)
		case exact > plantstore.EstimateExactUpTo && (est <= plantstore.EstimateExactUpTo || est > 2*exact || 2*est < exact):
			t.Errorf("%+v: estimated %d, want above %d, about %d", f, est, plantstore.EstimateExactUpTo, exact)
		}
	}
	// Few plants: the sample takes them all.
	small := openInternal(t, nil)
	if _, err := small.BulkInsertPlants(t.Context(), plants[:900]); err != nil {
		t.Fatal(err)
	}
	f := plantstore.PlantFilter{Owner: "alice", Words: []string{"mon"}, Limit: 1 << 30}
	if got, want := mustCount(t, small, f, true), int64(len(want(plants[:900], f))); got != want {
		t.Errorf("estimate on %d plants = %d, want %d", 900, got, want)
	}
}

func mustCount(t *testing.T, db *DB, f plantstore.PlantFilter, estimate bool) int64 {
	t.Helper()
	n, err := db.CountPlants(t.Context(), f, estimate)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// checkSearchIndex checks plant_search against plants: FTS4's own
// integrity check, and one row per plant, of its docid, words, owner and
// id.
func checkSearchIndex(t *testing.T, db *sql.DB) {
	t.Helper()
	if _, err := db.Exec(`INSERT INTO plant_search (plant_search) VALUES ('integrity-check')`); err != nil {
		t.Fatalf("plant_search integrity-check: %v", err)
	}
	var plants, docs, matched int
	err := db.QueryRow(`SELECT (SELECT count(*) FROM plants), (SELECT count(*) FROM plant_search_content),
(SELECT count(*) FROM plants p JOIN plant_search_content c ON c.docid = p.doc AND c.c0words = p.words AND c.c1owner = p.owner AND c.c2id = p.id)`).
		Scan(&plants, &docs, &matched)
	if err != nil {
		t.Fatal(err)
	}
	if plants != docs || plants != matched {
		t.Fatalf("%d plants, %d rows in plant_search, %d of them the plants'", plants, docs, matched)
	}
	var wrong int
	rows, err := db.Query(`SELECT name, tag, words FROM plants`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var name, words string
		var tag sql.NullString
		if err := rows.Scan(&name, &tag, &words); err != nil {
			t.Fatal(err)
		}
		var tp *string
		if tag.Valid {
			tp = &tag.String
		}
		if words != textsearch.Document(name, tp) {
			wrong++
		}
	}
	if wrong > 0 {
		t.Fatalf("%d plants whose words are not their name's and tag's", wrong)
	}
}

// TestSearchIndexWrites: every write keeps plant_search one row per plant,
// in the write's transaction: creates in batches (conflicts included),
// bulk inserts, updates, deletes, conditional deletes, copied rows and a
// plant inserted by SQL alone.
func TestSearchIndexWrites(t *testing.T) {
	db, _ := openTestDB(t)
	ctx := t.Context()
	release := holdCommitter(t, db)
	errs := make(chan error, 40)
	for i := range 40 {
		go func() {
			id := int64(i % 30) // ten conflicts, in the batch
			_, err := db.InsertPlant(ctx, &plantstore.Plant{Owner: "alice", ID: id, Name: fmt.Sprint("Fern ", id), CreatedAt: searchNow}, nil)
			errs <- err
		}()
	}
	queued(db, 40)
	release()
	for range 40 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.BulkInsertPlants(ctx, makePlants("alice", 20, 600, vocab(50), 5)); err != nil {
		t.Fatal(err)
	}
	checkSearchIndex(t, db.write)
	name, tag := "Zanzibar Quokka", "Quixotic"
	if _, err := db.UpdatePlant(ctx, "alice", 3, plantstore.PlantUpdate{Name: &name, Tag: &tag, SetTag: true, At: searchNow.Add(time.Hour)}, nil, nil); err != nil {
		t.Fatal(err)
	}
	upper := "FERN 4"
	if _, err := db.UpdatePlant(ctx, "alice", 4, plantstore.PlantUpdate{Name: &upper}, nil, nil); err != nil { // same words
		t.Fatal(err)
	}
	if _, err := db.DeletePlant(ctx, "alice", 5, nil); err != nil {
		t.Fatal(err)
	}
	p6, err := db.FindPlant(ctx, "alice", 6)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.DeletePlantIf(ctx, "alice", 6, p6, nil); err != nil {
		t.Fatal(err)
	}
	plantsTable := portable.TableNamed("plants")
	row := make(portable.Row, len(plantsTable.Columns))
	for i, c := range plantsTable.Columns {
		switch c.Name {
		case "owner":
			row[i] = "carol"
		case "id":
			row[i] = int64(1)
		case "name":
			row[i] = "Copied zanzibar"
		case "created_at", "updated_at":
			row[i] = searchNow
		}
	}
	if err := db.ReplaceRows(ctx, plantsTable, nil, []portable.Row{row}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.write.Exec(`INSERT INTO plants (owner, id, name, created_at) VALUES ('dave', 1, 'raw', 0)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.write.Exec(`UPDATE plants SET words = ' raw ' WHERE owner = 'dave'`); err != nil {
		t.Fatal(err)
	}
	checkSearchIndex(t, db.write)
	for _, c := range []struct {
		owner string
		words []string
		ids   []int64
	}{
		{"alice", []string{"zanzibar", "quixotic"}, []int64{3}},
		{"alice", []string{"fern", "4"}, []int64{4}},
		{"alice", []string{"fern", "5"}, nil},
		{"carol", []string{"copied"}, []int64{1}},
		{"dave", []string{"raw"}, []int64{1}},
	} {
		for _, selective := range []int64{10, 0} { // the window, then plant_search
			withWindows(t, 8, 64, selective)
			got, err := db.ListPlants(ctx, plantstore.PlantFilter{Owner: c.owner, Words: c.words, Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			ids := []int64{}
			for _, p := range got {
				ids = append(ids, p.ID)
			}
			if !slices.Equal(ids, c.ids) && !(len(ids) == 0 && len(c.ids) == 0) {
				t.Errorf("%s %q: %v, want %v", c.owner, c.words, ids, c.ids)
			}
		}
	}
	p3, err := db.FindPlant(ctx, "alice", 3)
	if err != nil {
		t.Fatal(err)
	}
	if !p3.UpdatedAt.Equal(searchNow.Add(time.Hour)) || !p3.CreatedAt.Equal(searchNow) {
		t.Errorf("updated plant: created %v, updated %v", p3.CreatedAt, p3.UpdatedAt)
	}
}

// TestSearchPlans: the statements of each way run as search.go says:
// walks in index order without sorting, through the index meant, and the
// sample and counts by lookups, never a scan of a table.
func TestSearchPlans(t *testing.T) {
	db := openInternal(t, nil)
	after := &plantstore.PlantKey{ID: 5, Name: "x", CreatedAt: searchNow}
	t0 := searchNow.Add(-time.Hour)
	for _, c := range []struct {
		f                plantstore.PlantFilter
		kind             uint8
		fill             func(*query, *plantstore.PlantFilter)
		want, notWant    []string
		withWordsOnlyIdx bool
	}{
		{f: plantstore.PlantFilter{}, kind: kindScan, fill: fillScan, want: []string{"PRIMARY KEY (owner=?)"}},
		{f: plantstore.PlantFilter{After: after, Sort: plantstore.SortNameDesc}, kind: kindScan, fill: fillScan, want: []string{"COVERING INDEX plants_owner_name_id (owner=? AND (name,id)<(?,?))"}},
		{f: plantstore.PlantFilter{Tags: []string{"a"}, After: after}, kind: kindScan, fill: fillScan, want: []string{"plants_owner_tag_id (owner=? AND tag=? AND id>?)"}},
		{f: plantstore.PlantFilter{CreatedAfter: t0, Sort: plantstore.SortCreatedAt}, kind: kindScan, fill: fillScan, want: []string{"plants_owner_created_id (owner=? AND created_at>?)"}},
		{f: plantstore.PlantFilter{Words: []string{"a"}, Tags: []string{"b"}, After: after}, kind: kindWindow, fill: fillWindow, want: []string{"PRIMARY KEY (owner=? AND id>?)"}},
		{f: plantstore.PlantFilter{Words: []string{"a"}, Tags: []string{"b", "c"}, CreatedBefore: t0, Sort: plantstore.SortName, After: after}, kind: kindWindow, fill: fillWindow,
			want: []string{"COVERING INDEX plants_owner_name_id (owner=? AND (name,id)>(?,?))"}},
		{f: plantstore.PlantFilter{Sort: plantstore.SortNameDesc}, kind: kindScan, fill: fillScan, want: []string{"COVERING INDEX plants_owner_name_id (owner=?)"}},
		{f: plantstore.PlantFilter{Words: []string{"a"}, Sort: plantstore.SortCreatedAt, After: after}, kind: kindWindow, fill: fillWindow,
			want: []string{"SEARCH p USING INDEX plants_owner_created_id (owner=? AND (created_at,id)>(?,?))"}},
		{f: plantstore.PlantFilter{Words: []string{"a"}, Tags: []string{"b"}, Sort: plantstore.SortCreatedAtDesc}, kind: kindWindow, fill: fillWindow,
			want: []string{"SEARCH p USING INDEX plants_owner_created_id (owner=?)"}},
		{f: plantstore.PlantFilter{Words: []string{"a"}, Sort: plantstore.SortName, After: after}, kind: kindSentinel, fill: fillSentinel, want: []string{"COVERING INDEX plants_owner_name_id"}},
		{f: plantstore.PlantFilter{Words: []string{"abc"}, After: after}, kind: kindSelect, fill: fillSelect, want: []string{"VIRTUAL TABLE", "SEARCH p USING PRIMARY KEY (owner=? AND id=?)"}},
		{f: plantstore.PlantFilter{Words: []string{"abc"}, Tags: []string{"x"}, Sort: plantstore.SortName}, kind: kindSelect, fill: fillSelect, want: []string{"VIRTUAL TABLE", "SEARCH p USING PRIMARY KEY (owner=? AND id=?)"}},
		{f: plantstore.PlantFilter{Tags: []string{"x", "y"}, Sort: plantstore.SortName}, kind: kindSelect, fill: fillSelect, want: []string{"plants_owner_tag_id (owner=? AND tag=?)"}},
		{f: plantstore.PlantFilter{CreatedAfter: t0}, kind: kindSelect, fill: fillSelect, want: []string{"plants_owner_created_id (owner=? AND created_at>?)"}},
		{f: plantstore.PlantFilter{Words: []string{"abc"}, CreatedAfter: t0}, kind: kindCount, fill: fillCount, want: []string{"VIRTUAL TABLE", "PRIMARY KEY (owner=? AND id=?)"}},
		{f: plantstore.PlantFilter{}, kind: kindCount, fill: fillCount, want: []string{"COVERING INDEX plants_owner_created_id (owner=?)"}},
		{f: plantstore.PlantFilter{Words: []string{"a"}}, kind: kindSample, fill: fillSample, want: []string{"INTEGER PRIMARY KEY (rowid>? AND rowid<?)"}},
		{f: plantstore.PlantFilter{Words: []string{"a"}, Tags: []string{"b"}}, kind: kindSample, fill: fillSample, want: []string{"INTEGER PRIMARY KEY (rowid>? AND rowid<?)", "PRIMARY KEY (owner=? AND id=?)"}},
	} {
		f := c.f
		f.Owner, f.Limit = "alice", 10
		text, args := build(c.kind, &f, c.fill)
		if c.kind == kindWindow {
			args = append(args, int64(10))
		}
		all := append([]any{"alice"}, toAny(args)...)
		rows, err := db.read.QueryContext(t.Context(), `EXPLAIN QUERY PLAN `+text, all...)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		joined := strings.Join(plan, "\n") + "\n"
		for _, w := range c.want {
			if !strings.Contains(joined, w) {
				t.Errorf("%s\nplan:\n%s\nwant %q in it", text, joined, w)
			}
		}
		bad := []string{"AUTOMATIC", "SCAN plants", "SCAN plant_search_content", "SCAN p\n", "SCAN c\n"}
		if c.kind == kindScan || c.kind == kindWindow || c.kind == kindSentinel {
			bad = append(bad, "TEMP B-TREE")
		}
		for _, b := range bad {
			if strings.Contains(joined, b) {
				t.Errorf("%s\nplan:\n%s\nhas %q", text, joined, b)
			}
		}
	}
}

func toAny(vs []driver.Value) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = v
	}
	return out
}

// TestFTS4Available: FTS4 is compiled into the driver as it is built by
// default (no build tag, no CGO_CFLAGS).
func TestFTS4Available(t *testing.T) {
	db, err := sql.Open("sqlite3", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE VIRTUAL TABLE t USING fts4(words, tokenize=simple)`); err != nil {
		t.Fatalf("FTS4: %v", err)
	}
	if _, err := db.Exec(`INSERT INTO t (words) VALUES (' monstera deliciosa ')`); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM t WHERE words MATCH '"mon*" "del*"'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("MATCH: %d, %v", n, err)
	}
}

// TestMatchQuery: the full-text query quotes every word, and leaves short
// ones out beside a long one.
func TestMatchQuery(t *testing.T) {
	for _, c := range []struct {
		words []string
		want  string
	}{
		{[]string{"monstera"}, `"monstera*"`},
		{[]string{"mon", "del"}, `"mon*" "del*"`},
		{[]string{"a", "monstera", "or"}, `"monstera*"`},
		{[]string{"a", "or"}, `"a*" "or*"`},
		{[]string{"not", "near"}, `"not*" "near*"`},
	} {
		if got := matchQuery(c.words); got != c.want {
			t.Errorf("matchQuery(%q) = %s, want %s", c.words, got, c.want)
		}
	}
}

// TestSearchMigration: plants written before migration 12 get their words,
// a docid, updated_at and microsecond times, chunk by chunk with progress
// in the log, and are found; an interrupted fill goes on where it stopped.
func TestSearchMigration(t *testing.T) {
	var log strings.Builder
	db, prov := migratedTo(t, searchVersion-1)
	_, latest, err := prov.GetVersions(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	db.Logger = slogTo(&log)
	chunk := fillChunk
	fillChunk = 3
	t.Cleanup(func() { fillChunk = chunk })
	for i, name := range []string{"Monstera deliciosa", "Café au lait", "Fern", "Ficus lyrata", "🌿", "monstera adansonii", "Ivy"} {
		var tag any
		if i%2 == 0 {
			tag = "Green"
		}
		if _, err := db.write.Exec(`INSERT INTO plants (owner, id, name, tag, created_at) VALUES ('alice', ?, ?, ?, ?)`,
			i+1, name, tag, searchNow.Add(time.Duration(i)*time.Second).UnixNano()); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := db.Migrate(t.Context()); err != nil || n != int(latest-searchVersion+1) {
		t.Fatalf("Migrate = %d, %v; want %d", n, err, latest-searchVersion+1)
	}
	for _, line := range []string{"migration: search index: 0 of 7 plants", "migration: search index: 3 of 7 plants",
		"migration: search index: 6 of 7 plants", "migration: search index: 7 of 7 plants", "migration: search index: 7 plants indexed in"} {
		if !strings.Contains(log.String(), line) {
			t.Errorf("log lacks %q:\n%s", line, log.String())
		}
	}
	checkSearchIndex(t, db.write)
	got, err := db.ListPlants(t.Context(), plantstore.PlantFilter{Owner: "alice", Words: []string{"mon"}, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != 1 || got[1].ID != 6 {
		t.Fatalf("q=mon found %+v, want plants 1 and 6", got)
	}
	wantTime := searchNow.Truncate(time.Microsecond)
	if !got[0].CreatedAt.Equal(wantTime) || !got[0].UpdatedAt.Equal(wantTime) {
		t.Errorf("plant 1: created %v, updated %v, want %v both", got[0].CreatedAt, got[0].UpdatedAt, wantTime)
	}
	if n := mustCount(t, db, plantstore.PlantFilter{Owner: "alice", Words: []string{"green"}}, false); n != 4 {
		t.Errorf("q=green counts %d, want 4", n)
	}
	// Interrupted: three plants lost their docid and index rows.
	if _, err := db.write.Exec(`DELETE FROM plant_search WHERE docid IN (SELECT doc FROM plants WHERE id > 4)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.write.Exec(`UPDATE plants SET doc = NULL WHERE id > 4`); err != nil {
		t.Fatal(err)
	}
	if err := fillSearch(t.Context(), db.migrations, slogTo(&log)); err != nil {
		t.Fatal(err)
	}
	checkSearchIndex(t, db.write)
	// Down and up again.
	if _, err := prov.DownTo(t.Context(), searchVersion-1); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	checkSearchIndex(t, db.write)
}

// slogTo is a logger writing text to w.
func slogTo(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }
