package sqlite_test

import (
	"context"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/service"
	"github.com/plantstore/plantstore/internal/sqlite"
)

// benchOpenDB opens and migrates a DB on a new file with the default
// durability (full: every commit fsynced), as plantstore serve does, and
// returns it with the plant service over it (the path a request takes).
func benchOpenDB(b *testing.B) (*sqlite.DB, *service.PlantService) {
	return benchOpenDurability(b, sqlite.DurabilityFull)
}

// benchOpenDurability is benchOpenDB with the given durability.
func benchOpenDurability(b *testing.B, d sqlite.Durability) (*sqlite.DB, *service.PlantService) {
	b.Helper()
	db := sqlite.NewDB(filepath.Join(b.TempDir(), "bench.db"))
	db.Durability = d
	if err := db.Open(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(context.Background()); err != nil {
		b.Fatal(err)
	}
	return db, service.New(db, service.Config{}).Plants
}

func benchPlant(id int64) *plantstore.Plant {
	tag := "bench"
	return &plantstore.Plant{Owner: "bench", ID: id, Name: "plant " + strconv.FormatInt(id, 10), Tag: &tag}
}

// BenchmarkCreatePlant creates plants one after another, each alone in its
// commit, with each durability: full fsyncs every commit, so its ns/op is
// about one fsync plus the commit's work. cpu-ns/op is the process's CPU
// time (user and system) per create: with full durability it should not
// exceed relaxed's by more than what issuing the fsync costs, since
// waiting for the disk costs no CPU.
func BenchmarkCreatePlant(b *testing.B) {
	for _, d := range []sqlite.Durability{sqlite.DurabilityFull, sqlite.DurabilityRelaxed} {
		b.Run("durability="+string(d), func(b *testing.B) {
			_, svc := benchOpenDurability(b, d)
			ctx := context.Background()
			var id int64
			b.ReportAllocs()
			cpu0 := sqlite.CPUTime()
			for b.Loop() {
				id++
				if _, created, err := svc.CreatePlant(ctx, benchPlant(id)); err != nil || !created {
					b.Fatalf("create %d: created=%v err=%v", id, created, err)
				}
			}
			b.ReportMetric(float64(sqlite.CPUTime()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkCreatePlantParallel creates distinct plants from 64 goroutines
// at once (on two cores): what group commit can turn into shared fsyncs.
func BenchmarkCreatePlantParallel(b *testing.B) {
	_, svc := benchOpenDB(b)
	ctx := context.Background()
	var next atomic.Int64
	b.SetParallelism(32)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := next.Add(1)
			if _, created, err := svc.CreatePlant(ctx, benchPlant(id)); err != nil || !created {
				b.Errorf("create %d: created=%v err=%v", id, created, err)
				return
			}
		}
	})
}

// BenchmarkFindPlants reads a page of 100 of one owner's 10,000 plants,
// starting at a different id each time.
func BenchmarkFindPlants(b *testing.B) {
	db, svc := benchOpenDB(b)
	ctx := context.Background()
	const n = 10000
	seed := sqlite.NewDB(db.Path)
	seed.Durability = sqlite.DurabilityRelaxed // setup only: no fsync per row
	if err := seed.Open(ctx); err != nil {
		b.Fatal(err)
	}
	batch := make([]*plantstore.Plant, 0, n)
	for id := int64(1); id <= n; id++ {
		batch = append(batch, benchPlant(id))
	}
	if _, err := service.New(seed, service.Config{}).Plants.ImportPlants(ctx, batch); err != nil {
		b.Fatal(err)
	}
	if err := seed.Close(); err != nil {
		b.Fatal(err)
	}
	var i int64
	b.ReportAllocs()
	for b.Loop() {
		after := (i * 7919) % (n - 100)
		i++
		plants, _, err := svc.FindPlants(ctx, plantstore.PlantFilter{Owner: "bench", After: &plantstore.PlantKey{ID: after}, Limit: 100})
		if err != nil || len(plants) != 100 {
			b.Fatalf("FindPlants after %d: %d plants, err=%v", after, len(plants), err)
		}
	}
}
