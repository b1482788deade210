package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/testkit/pgtest"
)

// The benchmarks run on the throwaway test cluster (fsync and
// synchronous_commit off): they measure the CPU and round trips of a
// batch, not the WAL flush a real server adds to each commit. Run them
// with a fixed count, as the table grows:
//
//	go test -run '^$' -bench . -benchtime 2000x ./internal/postgres/

// benchCreates returns n creates of new keys of owner, from id on, each
// with its event, as the service makes them.
func benchCreates(owner string, id int64, n int) []*writeOp {
	ops := make([]*writeOp, n)
	for i := range ops {
		tag := "bench"
		p := &plantstore.Plant{Owner: owner, ID: id + int64(i), Name: "plant " + strconv.Itoa(i), Tag: &tag, CreatedAt: time.Now()}
		ev := &plantstore.Event{Type: plantstore.EventPlantCreated, ID: fmt.Sprintf("evt_%s_%d", owner, p.ID), PlantID: p.ID, CreatedAt: p.CreatedAt}
		ops[i] = &writeOp{ctx: context.Background(), plant: p, event: ev}
	}
	return ops
}

// BenchmarkCommit applies batches as the group commit does (db.commit,
// the queue's Apply): creates of new keys for an owner with no webhook
// subscription and for one with one; and mixed batches, a quarter of
// them deletes of plants the previous batch created. ns/op is per batch;
// ns/row divides it by the batch size.
func BenchmarkCommit(b *testing.B) {
	db := OpenMigrated(b, NewDB(pgtest.NewDatabase(b)))
	for _, kind := range []string{"unsubscribed", "subscribed", "mixed"} {
		for _, size := range []int{1, 8, 32, 128} {
			if kind == "mixed" && size == 1 {
				continue
			}
			b.Run(fmt.Sprintf("%s/batch=%d", kind, size), func(b *testing.B) {
				owner, deletes := fmt.Sprint(kind, size, "-", time.Now().UnixNano()), 0 // an owner per run
				switch kind {
				case "subscribed":
					sub := &plantstore.Subscription{ID: "whk_" + owner, Owner: owner, URL: "http://127.0.0.1:9/", Secret: "whsec_bench", CreatedAt: time.Now()}
					if err := db.InsertSubscription(context.Background(), sub, plantstore.DefaultMaxSubscriptions); err != nil {
						b.Fatal(err)
					}
				case "mixed":
					deletes = size / 4
				}
				var id int64
				b.ReportAllocs()
				for b.Loop() {
					b.StopTimer()
					ops := benchCreates(owner, id, size-deletes)
					for i := range deletes {
						if id > 0 {
							ops = append(ops, &writeOp{ctx: context.Background(), del: true, plant: &plantstore.Plant{Owner: owner, ID: id - 1 - int64(i)}})
						}
					}
					id += int64(size - deletes)
					b.StartTimer()
					db.commit(ops)
					for _, op := range ops {
						if op.err != nil || op.existing != nil || kind == "subscribed" && op.deliveries != 1 {
							b.Fatalf("op on %d: %+v, %v", op.plant.ID, op.existing, op.err)
						}
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*size), "ns/row")
			})
		}
	}
}

// BenchmarkInsertPlantConcurrent creates plants of new keys from 64
// goroutines at once through InsertPlant (the group commit's queue
// included): allocs/op is per create (the benchmark's own plant and event
// included), and writes/batch the mean batch size.
func BenchmarkInsertPlantConcurrent(b *testing.B) {
	var batches, writes atomic.Int64
	db := NewDB(pgtest.NewDatabase(b))
	db.OnCommit = func(n int, _ time.Duration) { batches.Add(1); writes.Add(int64(n)) }
	OpenMigrated(b, db)
	owner := fmt.Sprint("concurrent-", time.Now().UnixNano())
	ids := make(chan int64)
	var clients sync.WaitGroup
	for range 64 {
		clients.Go(func() {
			for id := range ids {
				op := benchCreates(owner, id, 1)[0]
				if existing, _, err := insert3(db.InsertPlant(context.Background(), op.plant, op.event)); err != nil || existing != nil {
					b.Errorf("create %d: %+v, %v", id, existing, err)
				}
			}
		})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for id := range int64(b.N) {
		ids <- id
	}
	close(ids)
	clients.Wait()
	b.StopTimer()
	b.ReportMetric(float64(writes.Load())/float64(max(1, batches.Load())), "writes/batch")
}

// BenchmarkListPlants reads a page of 100 plants (limit 101, as the
// service asks, of an owner with 100), half of them tagged.
func BenchmarkListPlants(b *testing.B) {
	db := OpenMigrated(b, NewDB(pgtest.NewDatabase(b)))
	var plants []*plantstore.Plant
	for id := range int64(100) {
		p := &plantstore.Plant{Owner: "alice", ID: id, Name: "plant " + strconv.FormatInt(id, 10), CreatedAt: time.Now()}
		if id%2 == 0 {
			p.Tag = new("green")
		}
		plants = append(plants, p)
	}
	if _, err := db.BulkInsertPlants(context.Background(), plants); err != nil {
		b.Fatal(err)
	}
	f := plantstore.PlantFilter{Owner: "alice", Limit: 101}
	b.ReportAllocs()
	for b.Loop() {
		page, err := db.ListPlants(context.Background(), f)
		if err != nil || len(page) != 100 {
			b.Fatalf("page of %d, %v", len(page), err)
		}
	}
}

// BenchmarkFindPlant reads one plant.
func BenchmarkFindPlant(b *testing.B) {
	db := OpenMigrated(b, NewDB(pgtest.NewDatabase(b)))
	p := &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", Tag: new("green"), CreatedAt: time.Now()}
	if _, err := db.BulkInsertPlants(context.Background(), []*plantstore.Plant{p}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := db.FindPlant(context.Background(), "alice", 1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExecMode compares the two ways the store runs statements:
// named prepared statements (the default) and, with TransactionPooler,
// unnamed ones whose descriptions pgx caches (each parsed and planned
// again by the server): a group commit of 1 and of 32 creates, and a
// read of one plant.
//
//	go test -run '^$' -bench ExecMode -benchtime 2000x ./internal/postgres/
func BenchmarkExecMode(b *testing.B) {
	url := pgtest.NewDatabase(b)
	for _, pooler := range []bool{false, true} {
		mode := "prepared"
		if pooler {
			mode = "pooler"
		}
		db := NewDB(url)
		db.Config.TransactionPooler = pooler
		OpenMigrated(b, db)
		for _, size := range []int{1, 32} {
			b.Run(fmt.Sprintf("%s/commit=%d", mode, size), func(b *testing.B) {
				owner := fmt.Sprint(mode, size, "-", time.Now().UnixNano())
				var id int64
				for b.Loop() {
					b.StopTimer()
					ops := benchCreates(owner, id, size)
					id += int64(size)
					b.StartTimer()
					db.commit(ops)
					for _, op := range ops {
						if op.err != nil {
							b.Fatal(op.err)
						}
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*size), "ns/row")
			})
		}
		b.Run(mode+"/find", func(b *testing.B) {
			for b.Loop() {
				if _, err := db.FindPlant(context.Background(), "nobody", 1); !errors.Is(err, plantstore.ErrNotFound) {
					b.Fatal(err)
				}
			}
		})
	}
}
