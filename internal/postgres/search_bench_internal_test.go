package postgres

import (
	"context"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/testkit/pgtest"
)

// vocabulary is benchVocabulary words: a few real plant words first (the
// most frequent), then made-up ones of two to four syllables.
var vocabulary = func() []string {
	words := strings.Fields(`monstera deliciosa ficus lyrata fern boston snake plant pothos golden aloe vera
cactus orchid ivy english rubber palm spider peace lily basil mint rosemary thyme sage lavender jade
calathea philodendron begonia succulent bamboo lucky money tree`)
	seen := map[string]bool{}
	for _, w := range words {
		seen[w] = true
	}
	r := rand.New(rand.NewPCG(30, 30))
	const cons, vows = "bcdfghklmnprstvz", "aeiou"
	for len(words) < benchVocabulary {
		var b strings.Builder
		for range 2 + r.IntN(3) {
			b.WriteByte(cons[r.IntN(len(cons))])
			b.WriteByte(vows[r.IntN(len(vows))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			words = append(words, w)
		}
	}
	return words
}()

const benchVocabulary = 3000

// zipfWord returns a word of the vocabulary, word i with a probability
// about proportional to 1/(i+1) (log-uniform ranks).
func zipfWord(r *rand.Rand) string {
	i := int(math.Exp(r.Float64()*math.Log(benchVocabulary))) - 1
	return vocabulary[min(max(i, 0), benchVocabulary-1)]
}

// benchPlant returns plant id of owner: a name of two or three words of
// the vocabulary, and one of 20 tags (none for a tenth of them).
func benchPlant(r *rand.Rand, owner string, id int64, created time.Time) *plantstore.Plant {
	name := zipfWord(r) + " " + zipfWord(r)
	if r.IntN(3) == 0 {
		name += " " + zipfWord(r)
	}
	p := &plantstore.Plant{Owner: owner, ID: id, Name: strings.ToUpper(name[:1]) + name[1:], CreatedAt: created, UpdatedAt: created}
	if r.IntN(10) != 0 {
		tag := "tag" + strconv.Itoa(int(math.Exp(r.Float64()*math.Log(20))))
		p.Tag = &tag
	}
	return p
}

// loadBenchPlants stores n plants of owner (benchPlant) in chunks.
func loadBenchPlants(tb testing.TB, db *DB, owner string, n int64) {
	tb.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	batch := make([]*plantstore.Plant, 0, 10000)
	for id := int64(1); id <= n; id++ {
		batch = append(batch, benchPlant(r, owner, id, start.Add(time.Duration(id)*time.Second)))
		if len(batch) == cap(batch) || id == n {
			if _, err := db.BulkInsertPlants(context.Background(), batch); err != nil {
				tb.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if _, err := db.pool.Exec(context.Background(), `VACUUM ANALYZE plants`); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkListPlantsSearch lists the first page (100 plants) of a search
// among 200,000 plants of one owner whose names are drawn from a
// vocabulary of 3,000 words (zipfWord): a rare word, one in the middle, a
// common word, two words, a word prefix, and a common word with a rare
// one, each by id and by name; and the estimated count.
//
//	go test -run '^$' -bench ListPlantsSearch -benchtime 200x ./internal/postgres/
func BenchmarkListPlantsSearch(b *testing.B) {
	db := OpenMigrated(b, NewDB(pgtest.NewDatabase(b)))
	loadBenchPlants(b, db, "alice", 200_000)
	for _, q := range []struct{ name, words string }{
		{"rare", vocabulary[2500]},                      // 1 in 10,000 plants
		{"middle", vocabulary[300]},                     // 1 in 1,000
		{"common", "monstera"},                          // 1 in 5
		{"two", "monstera deliciosa"},                   // 1 in 70
		{"prefix", "mo"},                                // 1 in 5
		{"common+rare", "monstera " + vocabulary[2998]}, // a few
	} {
		for _, sort := range []plantstore.PlantSort{plantstore.SortID, plantstore.SortName} {
			f := plantstore.PlantFilter{Owner: "alice", Words: strings.Fields(q.words), Sort: sort, Limit: 101}
			b.Run(q.name+"/"+sort.String(), func(b *testing.B) {
				for b.Loop() {
					if _, err := db.ListPlants(context.Background(), f); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		f := plantstore.PlantFilter{Owner: "alice", Words: strings.Fields(q.words)}
		b.Run(q.name+"/count=estimated", func(b *testing.B) {
			for b.Loop() {
				if _, err := db.CountPlants(context.Background(), f, true); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
