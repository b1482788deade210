package postgres

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/portable"
	"github.com/plantstore/plantstore/internal/textsearch"
)

func TestSearchQuery(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		words []string
		want  string
	}{
		{nil, ""},
		{[]string{""}, ""},
		{[]string{"mon"}, `'mon':*`},
		{[]string{"mon", "", "del"}, `'mon':* & 'del':*`},
		{[]string{"café", "盆栽"}, `'café':* & '盆栽':*`},
		{[]string{`o'b\r`}, `'o''b\\r':*`}, // never from textsearch.Words, escaped all the same
	} {
		if got := searchQuery(tt.words); got != tt.want {
			t.Errorf("searchQuery(%q) = %q, want %q", tt.words, got, tt.want)
		}
	}
	if got, want := searchText("Café au LAIT, café!", ptr("Au-Lait")), "cafe au lait"; got != want {
		t.Errorf("searchText = %q, want %q", got, want)
	}
	if got := searchText("!!!", nil); got != "" {
		t.Errorf("searchText of no word = %q, want empty", got)
	}
}

// TestQuotedQuery: PostgreSQL reads what searchQuery makes as the word
// it was given, whatever the word holds: the word itself matches, another
// does not, and nothing is query syntax.
func TestQuotedQuery(t *testing.T) {
	t.Parallel()
	db := openBatchDB(t)
	for _, w := range []string{`o'b\r`, `a&b|c`, `!:*()`, "NOT", "<->", "盆栽"} {
		var self, other bool
		err := db.pool.QueryRow(t.Context(), `SELECT array_to_tsvector(ARRAY[$1::text]) @@ $2::tsquery, array_to_tsvector(ARRAY['x']) @@ $2::tsquery`,
			w+"z", searchQuery([]string{w})).Scan(&self, &other)
		if err != nil || !self || other {
			t.Errorf("%q: matches itself %v, another word %v, error %v", w, self, other, err)
		}
	}
}

// searchCorpus is plants of alice (and a few of bob's) whose words come
// from a small vocabulary, so that words match from a few plants to most,
// with the odd names of the storetest table among them.
func searchCorpus(n int) []*plantstore.Plant {
	r := rand.New(rand.NewPCG(7, 7))
	words := []string{"monstera", "mon", "deliciosa", "fern", "ferns", "ficus", "café", "Cafe", "CAFÉ", "ivy", "ivory", "zz9", "日本", "Ångström", "rare"}
	odd := []string{"!!!", "o'brien", "R2-D2", "İstanbul ivy", "ﬁcus", "Straße", "", "x"}
	var plants []*plantstore.Plant
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		var name string
		switch {
		case i%97 == 0:
			name = odd[r.IntN(len(odd))] + " rare"
		case i%50 == 0:
			name = odd[r.IntN(len(odd))]
		default:
			k := 1 + r.IntN(3)
			parts := make([]string, k)
			for j := range parts {
				// the first words of the list are the most common
				parts[j] = words[min(r.IntN(len(words)), r.IntN(len(words)))]
			}
			name = strings.Join(parts, " ")
		}
		if name == "" {
			name = "-"
		}
		p := &plantstore.Plant{Owner: "alice", ID: int64(i + 1), Name: name, CreatedAt: t0.Add(time.Duration(r.IntN(n/3+1)) * time.Second)}
		p.UpdatedAt = p.CreatedAt
		if r.IntN(4) > 0 {
			p.Tag = ptr([]string{"green", "shade", "ivy", "Café"}[r.IntN(4)])
		}
		plants = append(plants, p)
	}
	for i := range 20 {
		plants = append(plants, &plantstore.Plant{Owner: "bob", ID: int64(i + 1), Name: "monstera fern", CreatedAt: t0, UpdatedAt: t0})
	}
	return plants
}

// wantAll is the reference: the plants of f (its whole result, in order),
// from textsearch.Document, in Go.
func wantAll(plants []*plantstore.Plant, f plantstore.PlantFilter) []*plantstore.Plant {
	var out []*plantstore.Plant
	for _, p := range plants {
		if p.Owner != f.Owner || len(f.Tags) > 0 && (p.Tag == nil || !slices.Contains(f.Tags, *p.Tag)) {
			continue
		}
		if !f.CreatedAfter.IsZero() && !p.CreatedAt.After(f.CreatedAfter) || !f.CreatedBefore.IsZero() && !p.CreatedAt.Before(f.CreatedBefore) {
			continue
		}
		doc := textsearch.Document(p.Name, p.Tag)
		if slices.ContainsFunc(f.Words, func(w string) bool { return !strings.Contains(doc, " "+w) }) {
			continue
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *plantstore.Plant) int {
		var c int
		switch f.Sort.Key() {
		case "name":
			c = cmp.Compare(a.Name, b.Name)
		case "created_at":
			c = a.CreatedAt.Compare(b.CreatedAt)
		}
		c = cmp.Or(c, cmp.Compare(a.ID, b.ID))
		if f.Sort.Desc() {
			c = -c
		}
		return c
	})
	return out
}

// TestSearchPaths: each way to a page of a search (searchPage: the search
// index alone; windows, one or several; windows then the search index;
// the rarest word alone in the index) gives the plants of the reference,
// page after page, in every order, with the other filters.
func TestSearchPaths(t *testing.T) {
	t.Parallel()
	db := openBatchDB(t)
	plants := searchCorpus(1500)
	if _, err := db.BulkInsertPlants(t.Context(), plants); err != nil {
		t.Fatal(err)
	}
	if _, err := db.pool.Exec(t.Context(), `ANALYZE plants`); err != nil {
		t.Fatal(err)
	}
	t0 := plants[0].CreatedAt
	filters := []plantstore.PlantFilter{
		{Words: []string{"monstera"}},
		{Words: []string{"mon"}},
		{Words: []string{"cafe"}},
		{Words: []string{"rare"}},
		{Words: []string{"f"}},
		{Words: []string{"ivy", "mon"}},
		{Words: []string{"mon", "rare"}},
		{Words: []string{"monstera", "deliciosa", "fern"}},
		{Words: []string{"istanbul"}},
		{Words: []string{"fi"}}, // ﬁcus folds to ficus
		{Words: []string{"日本"}},
		{Words: []string{"nothing"}},
		{Words: []string{"", "ivy"}},
		{Words: []string{"fern"}, Tags: []string{"green"}},
		{Words: []string{"fern"}, Tags: []string{"green", "Café"}},
		{Words: []string{"mon"}, CreatedAfter: t0.Add(100 * time.Second), CreatedBefore: t0.Add(300 * time.Second)},
	}
	type way struct {
		name    string
		est     func(f plantstore.PlantFilter) *estimates
		maxRead int
	}
	ways := []way{
		{"Index", func(plantstore.PlantFilter) *estimates { return &estimates{n: 1, t: 1e9} }, 1e6},
		{"Windows", func(plantstore.PlantFilter) *estimates { return &estimates{n: 1e6, t: 1e6} }, 1e6},
		{"WindowsThenIndex", func(plantstore.PlantFilter) *estimates { return &estimates{n: 1e6, t: 1e6} }, 50},
		{"RarestWord", func(f plantstore.PlantFilter) *estimates {
			est := &estimates{n: 1, t: 1e9}
			for i := range nonEmpty(f.Words) {
				est.words = append(est.words, float64(1e6-i*1000))
			}
			return est
		}, 1e6},
	}
	for _, base := range filters {
		for sort := range plantstore.PlantSort(6) {
			f := base
			f.Owner, f.Sort, f.Limit = "alice", sort, 7
			want := wantAll(plants, f)
			name := fmt.Sprintf("%s/%v/tags=%v", strings.Join(f.Words, "+"), sort, f.Tags)
			for _, w := range ways {
				t.Run(name+"/"+w.name, func(t *testing.T) {
					t.Parallel()
					var got []*plantstore.Plant
					g := f
					for range len(want)/f.Limit + 2 {
						page, err := db.searchPage(t.Context(), &g, w.est(g), w.maxRead)
						if err != nil {
							t.Fatal(err)
						}
						got = append(got, page...)
						if len(page) < g.Limit {
							break
						}
						g.After = plantstore.KeyOf(page[len(page)-1])
					}
					if diff := gocmp.Diff(ids(want), ids(got)); diff != "" {
						t.Fatalf("ids (-want +got):\n%s", diff)
					}
				})
			}
			t.Run(name+"/ListPlants", func(t *testing.T) {
				t.Parallel()
				var got []*plantstore.Plant
				g := f
				for range len(want)/f.Limit + 2 {
					page, err := db.ListPlants(t.Context(), g)
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, page...)
					if len(page) < g.Limit {
						break
					}
					g.After = plantstore.KeyOf(page[len(page)-1])
				}
				if diff := gocmp.Diff(want, got); diff != "" {
					t.Fatalf("plants (-want +got):\n%s", diff)
				}
				for _, estimate := range []bool{false, true} {
					n, err := db.CountPlants(t.Context(), f, estimate)
					if err != nil || n != int64(len(want)) {
						t.Errorf("CountPlants(estimate %v) = %d, %v; want %d", estimate, n, err, len(want))
					}
				}
			})
		}
	}
}

func ids(plants []*plantstore.Plant) []int64 {
	out := []int64{}
	for _, p := range plants {
		out = append(out, p.ID)
	}
	return out
}

// TestCountEstimated: an estimated count is exact up to
// EstimateExactUpTo, and beyond it at least EstimateExactUpTo+1.
func TestCountEstimated(t *testing.T) {
	t.Parallel()
	db := openBatchDB(t)
	var plants []*plantstore.Plant
	for i := range 2500 {
		name := "fern"
		if i < plantstore.EstimateExactUpTo {
			name = "ivy fern"
		}
		plants = append(plants, &plantstore.Plant{Owner: "alice", ID: int64(i), Name: name, CreatedAt: fixedNow})
	}
	if _, err := db.BulkInsertPlants(t.Context(), plants); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		words        []string
		exact, least int64
	}{
		{[]string{"ivy"}, 1000, 1000},
		{[]string{"fern"}, 2500, 1001},
		{nil, 2500, 1001},
		{[]string{"ivy", "fern"}, 1000, 1000},
		{[]string{"oak"}, 0, 0},
	} {
		f := plantstore.PlantFilter{Owner: "alice", Words: tt.words}
		if n, err := db.CountPlants(t.Context(), f, false); err != nil || n != tt.exact {
			t.Errorf("%q: exact count %d, %v; want %d", tt.words, n, err, tt.exact)
		}
		n, err := db.CountPlants(t.Context(), f, true)
		switch {
		case err != nil:
			t.Errorf("%q: %v", tt.words, err)
		case tt.exact <= plantstore.EstimateExactUpTo && n != tt.exact:
			t.Errorf("%q: estimated count %d, want exactly %d", tt.words, n, tt.exact)
		case n < tt.least:
			t.Errorf("%q: estimated count %d, want at least %d", tt.words, n, tt.least)
		}
	}
}

// TestPlantSearchWrites: every write of a plant keeps its search words and
// updated_at: creates (group commit, bulk, copy), and each kind of update.
func TestPlantSearchWrites(t *testing.T) {
	t.Parallel()
	db := openBatchDB(t)
	ctx := t.Context()
	words := func(id int64) []string {
		t.Helper()
		var got []string
		if err := db.pool.QueryRow(ctx, `SELECT coalesce(array_agg(w ORDER BY w), '{}') FROM unnest(tsvector_to_array((SELECT search FROM plants WHERE owner = 'alice' AND id = $1))) w`, id).Scan(&got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	sorted := func(s ...string) []string { s = append([]string{}, s...); slices.Sort(s); return s }
	check := func(id int64, want ...string) {
		t.Helper()
		if diff := gocmp.Diff(sorted(want...), words(id)); diff != "" {
			t.Errorf("plant %d: words (-want +got):\n%s", id, diff)
		}
	}
	p := &plantstore.Plant{Owner: "alice", ID: 1, Name: "Monstera Deliciosa", Tag: ptr("Café"), CreatedAt: fixedNow}
	mustInsert(t, db, p)
	check(1, "monstera", "deliciosa", "cafe")
	if _, err := db.BulkInsertPlants(ctx, []*plantstore.Plant{{Owner: "alice", ID: 2, Name: "ﬁcus ﬁcus", CreatedAt: fixedNow}, {Owner: "alice", ID: 3, Name: "!!!", CreatedAt: fixedNow}}); err != nil {
		t.Fatal(err)
	}
	check(2, "ficus")
	check(3)

	at := fixedNow.Add(time.Hour)
	for _, tt := range []struct {
		name   string
		upd    plantstore.PlantUpdate
		expect bool
		want   []string
	}{
		{"Name", plantstore.PlantUpdate{Name: ptr("Ivy")}, false, []string{"ivy", "cafe"}},
		{"Tag", plantstore.PlantUpdate{SetTag: true, Tag: ptr("green shade")}, false, []string{"ivy", "green", "shade"}},
		{"RemoveTag", plantstore.PlantUpdate{SetTag: true}, false, []string{"ivy"}},
		{"Both", plantstore.PlantUpdate{Name: ptr("Fern"), SetTag: true, Tag: ptr("fern")}, false, []string{"fern"}},
		{"NameExpected", plantstore.PlantUpdate{Name: ptr("Zebra plant")}, true, []string{"zebra", "plant", "fern"}},
		{"TagExpected", plantstore.PlantUpdate{SetTag: true, Tag: ptr("Ångström")}, true, []string{"zebra", "plant", "angstrom"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cur, err := db.FindPlant(ctx, "alice", 1)
			if err != nil {
				t.Fatal(err)
			}
			var expect *plantstore.Plant
			if tt.expect {
				expect = cur
			}
			at = at.Add(time.Minute)
			tt.upd.At = at
			res, err := db.UpdatePlant(ctx, "alice", 1, tt.upd, expect, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Plant.UpdatedAt.Equal(at) || !res.Plant.CreatedAt.Equal(fixedNow) {
				t.Errorf("updated plant %+v: want UpdatedAt %v, CreatedAt %v", res.Plant, at, fixedNow)
			}
			check(1, tt.want...)
			// A patch that changes nothing writes nothing: UpdatedAt stays.
			same := plantstore.PlantUpdate{Name: &res.Plant.Name, At: at.Add(time.Second)}
			if expect != nil {
				expect = res.Plant
			}
			if res, err := db.UpdatePlant(ctx, "alice", 1, same, expect, nil); err != nil || !res.Plant.UpdatedAt.Equal(at) {
				t.Errorf("empty change: %+v, %v; want UpdatedAt %v", res.Plant, err, at)
			}
			found, err := db.ListPlants(ctx, plantstore.PlantFilter{Owner: "alice", Words: tt.want[:1], Limit: 10})
			if err != nil || len(found) != 1 || found[0].ID != 1 || !found[0].UpdatedAt.Equal(at) {
				t.Errorf("search %q: %+v, %v; want plant 1 updated at %v", tt.want[:1], found, err, at)
			}
		})
	}
	// An update without a time keeps updated_at.
	before, _ := db.FindPlant(ctx, "alice", 1)
	if res, err := db.UpdatePlant(ctx, "alice", 1, plantstore.PlantUpdate{Name: ptr("Oak")}, nil, nil); err != nil || !res.Plant.UpdatedAt.Equal(before.UpdatedAt) {
		t.Errorf("update without At: %+v, %v; want UpdatedAt %v", res.Plant, err, before.UpdatedAt)
	}
	check(1, "oak", "angstrom")
}

// TestSearchPlans: at a size where plans matter (20,000 plants, analyzed),
// the statements use the indexes of migration 11 as intended.
func TestSearchPlans(t *testing.T) {
	t.Parallel()
	db := openBatchDB(t)
	loadBenchPlants(t, db, "alice", 20_000)
	explain := func(sql string, args ...any) string {
		t.Helper()
		rows, err := db.pool.Query(t.Context(), `EXPLAIN `+sql, args...)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var plan []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, line)
		}
		return strings.Join(plan, "\n")
	}
	rare := plantstore.PlantFilter{Owner: "alice", Words: []string{vocabulary[2000]}, Sort: plantstore.SortName, Limit: 101}
	key := &plantstore.PlantKey{ID: 5, Name: "M", CreatedAt: fixedNow}
	page := func(f plantstore.PlantFilter) string {
		q := filterQuery(&f)
		q.afterSQL(f.Sort, f.After)
		order, _ := sortSQL(f.Sort)
		return explain(`SELECT id, `+plantColumns+` FROM plants WHERE owner = $1`+q.where.String()+` ORDER BY `+order+` LIMIT 101`, q.args...)
	}
	all := func(f plantstore.PlantFilter) string {
		q := filterQuery(&f)
		return explain(`SELECT id, `+plantColumns+` FROM plants WHERE owner = $1`+q.where.String()+` ORDER BY `+unindexedSQL(f.Sort)+` LIMIT 101`, q.args...)
	}
	end := func(f plantstore.PlantFilter) string {
		q := otherFilters(&f)
		q.afterSQL(f.Sort, f.After)
		order, _ := sortSQL(f.Sort)
		return explain(`SELECT id, name FROM plants WHERE owner = $1`+q.where.String()+` ORDER BY `+order+` OFFSET 999 LIMIT 1`, q.args...)
	}
	for _, tt := range []struct {
		name, plan, want string
	}{
		{"ByName", page(plantstore.PlantFilter{Owner: "alice", Sort: plantstore.SortName, After: key}), "Index Scan using plants_owner_name_id"},
		{"ByNameDesc", page(plantstore.PlantFilter{Owner: "alice", Sort: plantstore.SortNameDesc, After: key}), "Index Scan Backward using plants_owner_name_id"},
		{"ByCreated", page(plantstore.PlantFilter{Owner: "alice", Sort: plantstore.SortCreatedAt, After: key}), "Index Scan using plants_owner_created_id"},
		{"ByID", page(plantstore.PlantFilter{Owner: "alice", After: key}), "Index Scan using plants_pkey"},
		{"RareWord", all(rare), "Bitmap Index Scan on plants_search"},
		{"WindowEnd", end(plantstore.PlantFilter{Owner: "alice", Sort: plantstore.SortName, After: key}), "Index Only Scan using plants_owner_name_id"},
	} {
		if !strings.Contains(tt.plan, tt.want) {
			t.Errorf("%s: want %q in the plan:\n%s", tt.name, tt.want, tt.plan)
		}
	}
	// The keyset condition is the index's own: no filter left of it.
	if plan := page(plantstore.PlantFilter{Owner: "alice", Sort: plantstore.SortName, After: key}); strings.Contains(plan, "Filter") {
		t.Errorf("the keyset of a page by name is a filter:\n%s", plan)
	}
	est, err := db.estimate(t.Context(), &rare, nil)
	if err != nil || est.n > 2000 || est.t < 10_000 {
		t.Errorf("estimates of a rare word: %+v, %v", est, err)
	}
}

// TestReplaceRowsSearch: plants written by ReplaceRows (plantstore copy,
// import of a backup) get their search words, which the portable schema
// does not carry.
func TestReplaceRowsSearch(t *testing.T) {
	t.Parallel()
	db := openBatchDB(t)
	tb := portable.TableNamed("plants")
	row := make(portable.Row, len(tb.Columns))
	for i, c := range tb.Columns {
		switch c.Name {
		case "owner":
			row[i] = "alice"
		case "id":
			row[i] = int64(7)
		case "name":
			row[i] = "Monstera Deliciosa"
		case "tag":
			row[i] = "Café"
		default: // created_at, updated_at
			row[i] = fixedNow
		}
	}
	if err := db.ReplaceRows(t.Context(), tb, nil, []portable.Row{row}); err != nil {
		t.Fatal(err)
	}
	got, err := db.ListPlants(t.Context(), plantstore.PlantFilter{Owner: "alice", Words: []string{"del", "caf"}, Limit: 10})
	if err != nil || len(got) != 1 || got[0].ID != 7 || !got[0].UpdatedAt.Equal(fixedNow) {
		t.Fatalf("search after ReplaceRows: %+v, %v", got, err)
	}
}
