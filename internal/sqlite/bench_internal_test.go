package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/textsearch"
)

// BenchmarkCommit applies batches of creates as the group commit does
// (db.commit, the queue's Apply), each create with its event, as the
// service makes them: for an owner with no webhook subscription and for one
// with one. Relaxed durability (no fsync per commit), so that it measures
// the committer's CPU, not the disk. ns/op is per batch; ns/row divides
// it by the batch size, and cpu-ns/row is the process's CPU time (user and
// system: the WAL's writes) per create.
//
//	go test -run '^$' -bench Commit -benchtime 2000x ./internal/sqlite/
func BenchmarkCommit(b *testing.B) {
	db := openBenchDB(b)
	for _, kind := range []string{"unsubscribed", "subscribed"} {
		for _, size := range []int{1, 8, 31, 128} {
			b.Run(fmt.Sprintf("%s/batch=%d", kind, size), func(b *testing.B) {
				owner := fmt.Sprint(kind, size, "-", time.Now().UnixNano()) // an owner per run
				if kind == "subscribed" {
					sub := &plantstore.Subscription{ID: "whk_" + owner, Owner: owner, URL: "http://127.0.0.1:9/",
						Secret: "whsec_bench", CreatedAt: time.Now()}
					if err := db.InsertSubscription(context.Background(), sub, plantstore.DefaultMaxSubscriptions); err != nil {
						b.Fatal(err)
					}
				}
				// Every batch's ops are made before the clock starts.
				batches := make([][]*writeOp, b.N)
				for i := range batches {
					batches[i] = make([]*writeOp, size)
					for j := range size {
						batches[i][j] = benchCreate(owner, int64(i*size+j+1))
					}
				}
				b.ReportAllocs()
				cpu0 := cpuTime()
				b.ResetTimer()
				for _, ops := range batches {
					db.commit(ops)
				}
				b.StopTimer()
				cpu := cpuTime() - cpu0
				for _, ops := range batches {
					for _, w := range ops {
						if w.err != nil || !w.inserted || w.seq == 0 || kind == "subscribed" && w.deliveries != 1 {
							b.Fatalf("create %d: %+v", w.plant.ID, w)
						}
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*size), "ns/row")
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*size), "cpu-ns/row")
			})
		}
	}
}

// BenchmarkInsertPlants applies batch creates (opInsertPlants) of new
// plants as the group commit does, each batch alone in its commit, each
// plant with its event: the store's part of POST /plants/batch. Relaxed
// durability, as BenchmarkCommit. ns/row and cpu-ns/row are per plant.
//
//	go test -run '^$' -bench InsertPlants -benchtime 200x ./internal/sqlite/
func BenchmarkInsertPlants(b *testing.B) {
	db := openBenchDB(b)
	for _, size := range []int{100, 1000} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			owner := fmt.Sprint("batch", size, "-", time.Now().UnixNano())
			ops := make([]*writeOp, b.N)
			for i := range ops {
				w := &writeOp{kind: opInsertPlants, plants: make([]*plantstore.Plant, size), events: make([]*plantstore.Event, size)}
				for j := range size {
					c := benchCreate(owner, int64(i*size+j+1))
					w.plants[j], w.events[j] = c.plant, c.event
				}
				ops[i] = w
			}
			b.ReportAllocs()
			cpu0 := cpuTime()
			b.ResetTimer()
			for _, w := range ops {
				db.commit([]*writeOp{w})
			}
			b.StopTimer()
			cpu := cpuTime() - cpu0
			for _, w := range ops {
				if w.err != nil || len(w.results) != size || w.results[size-1].Seq == 0 {
					b.Fatalf("batch: err %v, %d results", w.err, len(w.results))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*size), "ns/row")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*size), "cpu-ns/row")
		})
	}
}

// cpuTime is the CPU time (user and system) the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchCreate is the op of a create of owner's plant id, as InsertPlant
// queues it.
// openBenchDB opens and migrates a database file of b's, relaxed (no
// fsync: the benchmarks measure the CPU).
func openBenchDB(b *testing.B) *DB {
	db := NewDB(filepath.Join(b.TempDir(), "bench.db"))
	db.Durability = DurabilityRelaxed
	if err := db.Open(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(context.Background()); err != nil {
		b.Fatal(err)
	}
	return db
}

func benchCreate(owner string, id int64) *writeOp {
	tag := "bench"
	now := time.Now().UTC()
	p := &plantstore.Plant{Owner: owner, ID: id, Name: "plant " + strconv.FormatInt(id, 10), Tag: &tag, CreatedAt: now}
	ev := &plantstore.Event{Owner: owner, ID: fmt.Sprintf("evt_%024x", id), Type: plantstore.EventPlantCreated, CreatedAt: now}
	return &writeOp{kind: opInsertPlant, plant: p, event: ev}
}

// BenchmarkListPlantsSearch reads the first page (100) of searches among
// one owner's 200,000 plants, beside the list's (the reference), named
// from a Zipf-distributed vocabulary of 3,000 words (vocab, makePlants): a
// rare word (in a few dozen plants), the commonest, two common words and
// two prefixes, by id; the commonest by name; and the counts of the
// commonest (estimated) and the rare (exact).
//
//	go test -run '^$' -bench ListPlantsSearch -benchtime 200x ./internal/sqlite/
func BenchmarkListPlantsSearch(b *testing.B) {
	const n = 200000
	db := openBenchDB(b)
	words := vocab(3000)
	plants := makePlants("bench", 1, n, words, 9)
	for rest := plants; len(rest) > 0; rest = rest[min(len(rest), 50000):] {
		if _, err := db.BulkInsertPlants(context.Background(), rest[:min(len(rest), 50000)]); err != nil {
			b.Fatal(err)
		}
	}
	// The rare word: the one in fewest plants, of those in 20 or more.
	seen := map[string]int{}
	for _, p := range plants {
		for _, w := range textsearch.Words(p.Name) {
			seen[w]++
		}
	}
	rare := ""
	for w, k := range seen {
		if k >= 20 && (rare == "" || k < seen[rare] || k == seen[rare] && w < rare) {
			rare = w
		}
	}
	common := textsearch.Words(words[0] + " " + words[1])
	for _, c := range []struct {
		name  string
		f     plantstore.PlantFilter
		count int // 0: list; 1: estimated count; 2: exact count
	}{
		{name: "list"}, // the reference: a page of every plant, by id
		{name: fmt.Sprintf("rare=%s(%d)", rare, seen[rare]), f: plantstore.PlantFilter{Words: []string{rare}}},
		{name: fmt.Sprintf("common=%s(%d)", common[0], seen[common[0]]), f: plantstore.PlantFilter{Words: common[:1]}},
		{name: "two=" + strings.Join(common, "+"), f: plantstore.PlantFilter{Words: common}},
		{name: "prefixes=" + common[0][:3] + "+" + common[1][:3], f: plantstore.PlantFilter{Words: []string{common[0][:3], common[1][:3]}}},
		{name: "common/sort=name", f: plantstore.PlantFilter{Words: common[:1], Sort: plantstore.SortName}},
		{name: "common/count=estimated", f: plantstore.PlantFilter{Words: common[:1]}, count: 1},
		{name: "rare/count=exact", f: plantstore.PlantFilter{Words: []string{rare}}, count: 2},
	} {
		b.Run(c.name, func(b *testing.B) {
			f := c.f
			f.Owner, f.Limit = "bench", 100
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				var err error
				switch c.count {
				case 0:
					_, err = db.ListPlants(ctx, f)
				default:
					_, err = db.CountPlants(ctx, f, c.count == 1)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
