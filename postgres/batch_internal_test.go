package postgres

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/pgtest"
)

// TestMain stops the shared test cluster when the tests are done (the
// external tests of this package share this binary).
func TestMain(m *testing.M) { os.Exit(pgtest.Run(m)) }

func openBatchDB(t *testing.T) *DB {
	t.Helper()
	db := NewDB(pgtest.NewDatabase(t))
	if err := db.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	return db
}

func create(owner string, id int64, name string, tag *string) *writeOp {
	return &writeOp{ctx: context.Background(), kind: opCreate, done: make(chan struct{}),
		plant: &plantstore.Plant{Owner: owner, ID: id, Name: name, Tag: tag}}
}

func ptr(s string) *string { return &s }

// TestBatch_ReplayAndConflict runs one batch by hand: a replay and a
// conflict of a create in the same batch behave as if serial, and a delete
// of an unknown id is not found.
func TestBatch_ReplayAndConflict(t *testing.T) {
	db := openBatchDB(t)
	ops := []*writeOp{
		create("alice", 1, "Fern", ptr("green")),
		create("alice", 1, "Fern", ptr("green")),
		create("alice", 1, "Moss", nil),
		create("alice", 2, "Ivy", nil),
		{ctx: context.Background(), kind: opDelete, done: make(chan struct{}), plant: &plantstore.Plant{Owner: "alice", ID: 5}},
	}
	db.batch.run(ops)
	var created, replays, conflicts, notFound int
	for _, op := range ops {
		switch code := plantstore.ErrorCode(op.err); {
		case code == plantstore.CodeConflict:
			conflicts++
		case code == plantstore.CodeNotFound:
			notFound++
		case code != 0:
			t.Fatalf("op %+v: %v", op.plant, op.err)
		case op.created:
			created++
		default:
			replays++
		}
	}
	if created != 2 || replays != 1 || conflicts != 1 || notFound != 1 {
		t.Fatalf("created %d, replays %d, conflicts %d, not found %d; want 2, 1, 1, 1", created, replays, conflicts, notFound)
	}
	p, err := db.FindPlantByID(t.Context(), "alice", 1)
	if err != nil || p.Name != "Fern" || p.Tag == nil || *p.Tag != "green" {
		t.Fatalf("stored %+v, %v", p, err)
	}
}

// TestBatch_FailingWriteAlone: a statement error aborts PostgreSQL's whole
// transaction; the batch then runs each write alone, so only the bad one
// fails.
func TestBatch_FailingWriteAlone(t *testing.T) {
	db := openBatchDB(t)
	ops := []*writeOp{
		create("alice", 1, "Fern", nil),
		create("alice", 2, "bad\x00name", nil), // PostgreSQL refuses NUL in text
		create("alice", 3, "Ivy", nil),
	}
	db.batch.run(ops)
	if ops[0].err != nil || ops[2].err != nil || ops[1].err == nil {
		t.Fatalf("errors = %v, %v, %v; want only the second", ops[0].err, ops[1].err, ops[2].err)
	}
	if !ops[0].created || !ops[2].created {
		t.Fatal("the good writes were not created")
	}
	plants, _, err := db.FindPlants(t.Context(), plantstore.PlantFilter{Owner: "alice", Limit: 10})
	if err != nil || len(plants) != 2 {
		t.Fatalf("plants = %v, %v; want 2", plants, err)
	}
}

// TestBatch_CancelledBeforeTurn: a write whose caller left is not applied.
func TestBatch_CancelledBeforeTurn(t *testing.T) {
	db := openBatchDB(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	gone := create("alice", 1, "Fern", nil)
	gone.ctx = ctx
	db.batch.run([]*writeOp{gone, create("alice", 2, "Ivy", nil)})
	if gone.err == nil {
		t.Fatal("cancelled write reported success")
	}
	if _, err := db.FindPlantByID(t.Context(), "alice", 1); plantstore.ErrorCode(err) != plantstore.CodeNotFound {
		t.Fatalf("cancelled write applied: %v", err)
	}
}

// TestBulkInsertPlants: COPY many plants in one transaction.
func TestBulkInsertPlants(t *testing.T) {
	db := openBatchDB(t)
	var plants []*plantstore.Plant
	for id := int64(1); id <= 1000; id++ {
		plants = append(plants, &plantstore.Plant{Owner: "alice", ID: id, Name: "p", Tag: ptr("t")})
	}
	if err := db.BulkInsertPlants(t.Context(), plants); err != nil {
		t.Fatal(err)
	}
	page, more, err := db.FindPlants(t.Context(), plantstore.PlantFilter{Owner: "alice", Limit: 1000})
	if err != nil || len(page) != 1000 || more {
		t.Fatalf("page: %d plants, more %v, %v", len(page), more, err)
	}
	if err := db.BulkInsertPlants(t.Context(), plants[:1]); err == nil {
		t.Fatal("an existing id was accepted")
	}
}

// TestBatch_Outbox: the pipelined batch itself (not the fallback that runs
// each write alone) writes the outbox rows of the creates that inserted, in
// its transaction: none for a replay, a conflict or another owner; one
// message id per plant, shared by its subscriptions.
func TestBatch_Outbox(t *testing.T) {
	db := openBatchDB(t)
	now := time.Now()
	for _, sub := range []*plantstore.Subscription{
		{ID: "whk_1", Owner: "alice", URL: "https://example.com/1", Secret: "whsec_1", CreatedAt: now},
		{ID: "whk_2", Owner: "alice", URL: "https://example.com/2", Secret: "whsec_2", CreatedAt: now},
		{ID: "whk_3", Owner: "alice", URL: "https://example.com/3", Secret: "whsec_3", CreatedAt: now, DisabledAt: &now},
	} {
		if err := db.CreateSubscription(t.Context(), sub); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := db.createPlant(t.Context(), &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern"}); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := db.OutboxStats(t.Context()); n != 2 {
		t.Fatalf("createPlant wrote %d deliveries, want 2", n)
	}
	ops := []*writeOp{
		create("alice", 1, "Fern", nil), // replay
		create("alice", 1, "Moss", nil), // conflict
		create("alice", 2, "Ivy", ptr("green")),
		create("alice", 3, "Moss", nil),
		create("bob", 2, "Ivy", nil),
	}
	if err := db.applyBatch(ops); err != nil {
		t.Fatalf("applyBatch: %v", err)
	}
	if n, _, _ := db.OutboxStats(t.Context()); n != 2+4 {
		t.Fatalf("%d deliveries after the batch, want 6", n)
	}
	tasks, err := db.ClaimTasks(t.Context(), time.Now(), time.Minute, 100)
	if err != nil {
		t.Fatal(err)
	}
	msgs := map[int64]map[string]bool{}
	for _, task := range tasks {
		if msgs[task.PlantID] == nil {
			msgs[task.PlantID] = map[string]bool{}
		}
		msgs[task.PlantID][task.MessageID] = true
		if task.PlantID == 2 && string(task.Payload) != `{"id":2,"name":"Ivy","tag":"green"}` {
			t.Fatalf("payload %s", task.Payload)
		}
	}
	for id := int64(1); id <= 3; id++ {
		if len(msgs[id]) != 1 {
			t.Fatalf("plant %d: message ids %v, want one", id, msgs[id])
		}
	}
}
