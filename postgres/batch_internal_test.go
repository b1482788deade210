package postgres

import (
	"context"
	"errors"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/pgtest"
)

// TestMain stops the shared test cluster when the tests are done (the
// external tests of this package share this binary).
func TestMain(m *testing.M) { os.Exit(pgtest.Run(m)) }

var fixedNow = time.Date(2025, 3, 1, 12, 0, 0, 123456000, time.UTC)

// OpenMigrated opens db for a test, with its Close registered first, and
// migrates it. The external tests of the package use it too.
func OpenMigrated(t testing.TB, db *DB) *DB {
	t.Helper()
	t.Cleanup(func() { db.Close() })
	err := db.Open(t.Context())
	if err == nil {
		_, err = db.Migrate(t.Context())
	}
	if err != nil {
		t.Fatalf("open %s: %v", db.URL, err)
	}
	return db
}

func openBatchDB(t *testing.T) *DB { return OpenMigrated(t, NewDB(pgtest.NewDatabase(t))) }

func ptr[T any](v T) *T { return &v }

// event returns p's webhook event, as the service makes it.
func event(t *testing.T, p *plantstore.Plant) *plantstore.Event {
	t.Helper()
	id, err := plantstore.NewMessageID()
	if err != nil {
		t.Fatal(err)
	}
	return &plantstore.Event{MessageID: id, PlantID: p.ID, Payload: p.WebhookPayload(), CreatedAt: p.CreatedAt}
}

func create(t *testing.T, owner string, id int64, name string, tag *string) *writeOp {
	p := &plantstore.Plant{Owner: owner, ID: id, Name: name, Tag: tag, CreatedAt: fixedNow}
	return &writeOp{ctx: t.Context(), plant: p, event: event(t, p)}
}

func remove(t *testing.T, owner string, id int64) *writeOp {
	return &writeOp{ctx: t.Context(), del: true, plant: &plantstore.Plant{Owner: owner, ID: id}}
}

func mustInsert(t *testing.T, db *DB, p *plantstore.Plant) {
	t.Helper()
	if existing, _, err := db.InsertPlant(t.Context(), p, event(t, p)); err != nil || existing != nil {
		t.Fatalf("InsertPlant(%+v) = %+v, %v; want it stored", p, existing, err)
	}
}

// TestApply_OneTransaction runs one pipelined batch by hand: creates of a
// key already taken within the batch find the first one's row (the service
// tells replay from conflict), and a delete of an unknown key is
// ErrNotFound; nothing needs running alone.
func TestApply_OneTransaction(t *testing.T) {
	db := openBatchDB(t)
	ops := []*writeOp{
		create(t, "alice", 1, "Fern", ptr("green")),
		create(t, "alice", 1, "Fern", ptr("green")), // replay candidate
		create(t, "alice", 1, "Moss", nil),          // conflict candidate
		create(t, "alice", 2, "Ivy", nil),
		remove(t, "alice", 5),
	}
	if err := db.apply(t.Context(), ops); err != nil {
		t.Fatalf("apply: %v", err)
	}
	fern := ops[0].plant
	for i, op := range ops {
		if op.vanished {
			t.Fatalf("op %d vanished", i)
		}
	}
	if ops[0].existing != nil || ops[0].err != nil || ops[3].existing != nil || ops[3].err != nil {
		t.Fatalf("new keys: %+v, %v; %+v, %v; want stored", ops[0].existing, ops[0].err, ops[3].existing, ops[3].err)
	}
	for _, op := range ops[1:3] {
		if op.err != nil || op.existing == nil || !op.existing.SameContent(fern) || !op.existing.CreatedAt.Equal(fern.CreatedAt) {
			t.Fatalf("create of a taken key: %+v, %v; want the stored %+v", op.existing, op.err, fern)
		}
	}
	if !errors.Is(ops[4].err, plantstore.ErrNotFound) {
		t.Fatalf("delete of an unknown key: err = %v, want ErrNotFound", ops[4].err)
	}
	p, err := db.FindPlant(t.Context(), "alice", 1)
	if err != nil || !p.SameContent(fern) {
		t.Fatalf("stored %+v, %v; want %+v", p, err, fern)
	}
}

// TestCommit_Vanished: a create whose key was taken by a row that a later
// op of the batch deleted finds no row at its lookup; it runs again alone
// after the batch and stores.
func TestCommit_Vanished(t *testing.T) {
	db := openBatchDB(t)
	mustInsert(t, db, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", CreatedAt: fixedNow})
	moss, del := create(t, "alice", 1, "Moss", nil), remove(t, "alice", 1)
	db.commit([]*writeOp{moss, del})
	if moss.err != nil || moss.existing != nil || del.err != nil {
		t.Fatalf("create: %+v, %v; delete: %v; want both done", moss.existing, moss.err, del.err)
	}
	if p, err := db.FindPlant(t.Context(), "alice", 1); err != nil || p.Name != "Moss" {
		t.Fatalf("stored %+v, %v; want Moss", p, err)
	}
}

// TestCommit_Contended: a create whose key stays taken by a row its lookup
// never finds is tried in the batch, then alone maxVanished times, then
// fails with ErrContended. A trigger stands in for a plant created and
// deleted again and again: it moves every insert of "ghost" onto a key
// that exists.
func TestCommit_Contended(t *testing.T) {
	db := openBatchDB(t)
	_, err := db.pool.Exec(t.Context(), `
CREATE TABLE ghost_tries (n INT NOT NULL);
CREATE FUNCTION ghost() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF NEW.name = 'ghost' THEN
		INSERT INTO ghost_tries VALUES (1);
		NEW.owner := 'haunt';
		NEW.id := 1;
	END IF;
	RETURN NEW;
END $$;
CREATE TRIGGER ghost BEFORE INSERT ON plants FOR EACH ROW EXECUTE FUNCTION ghost();
INSERT INTO plants (owner, id, name, created_at) VALUES ('haunt', 1, 'x', now())`)
	if err != nil {
		t.Fatal(err)
	}
	ghost, ivy := create(t, "alice", 7, "ghost", nil), create(t, "alice", 8, "Ivy", nil)
	db.commit([]*writeOp{ghost, ivy})
	if !errors.Is(ghost.err, plantstore.ErrContended) || ghost.existing != nil {
		t.Fatalf("ghost: %+v, %v; want ErrContended", ghost.existing, ghost.err)
	}
	if ivy.err != nil || ivy.existing != nil {
		t.Fatalf("ivy: %+v, %v; want stored", ivy.existing, ivy.err)
	}
	var tries int
	if err := db.pool.QueryRow(t.Context(), `SELECT count(*) FROM ghost_tries`).Scan(&tries); err != nil {
		t.Fatal(err)
	}
	if got, want := tries, 1+maxVanished; got != want {
		t.Fatalf("ghost inserted %d times, want %d (the batch, then alone)", got, want)
	}
}

// TestCommit_FailingWriteAlone: one failing statement aborts PostgreSQL's
// whole transaction; the batch then runs each op alone, so only the bad one
// fails, and the others keep their outcomes.
func TestCommit_FailingWriteAlone(t *testing.T) {
	db := openBatchDB(t)
	ops := []*writeOp{
		create(t, "alice", 1, "Fern", nil),
		create(t, "alice", 2, "bad\x00name", nil), // PostgreSQL refuses NUL in text
		create(t, "alice", 3, "Ivy", nil),
		remove(t, "alice", 9),
	}
	db.commit(ops)
	if ops[0].err != nil || ops[2].err != nil {
		t.Fatalf("good creates failed: %v, %v", ops[0].err, ops[2].err)
	}
	if ops[1].err == nil || errors.Is(ops[1].err, plantstore.ErrUnavailable) {
		t.Fatalf("bad create: err = %v, want a failure of its own", ops[1].err)
	}
	if !errors.Is(ops[3].err, plantstore.ErrNotFound) {
		t.Fatalf("delete of an unknown key alone: err = %v, want ErrNotFound", ops[3].err)
	}
	plants, err := db.ListPlants(t.Context(), plantstore.PlantFilter{Owner: "alice", Limit: 10})
	if err != nil || len(plants) != 2 {
		t.Fatalf("plants = %v, %v; want 2", plants, err)
	}
}

// TestApply_Outbox: the pipelined batch itself writes the outbox rows of the
// creates that inserted, in its transaction, with their events' message
// ids and payloads: none for a key taken or an owner without subscriptions,
// none to a disabled subscription.
func TestApply_Outbox(t *testing.T) {
	db := openBatchDB(t)
	for _, sub := range []*plantstore.Subscription{
		{ID: "whk_1", Owner: "alice", URL: "http://127.0.0.1:9/1", Secret: "whsec_1", CreatedAt: fixedNow},
		{ID: "whk_2", Owner: "alice", URL: "http://127.0.0.1:9/2", Secret: "whsec_2", CreatedAt: fixedNow},
		{ID: "whk_3", Owner: "alice", URL: "http://127.0.0.1:9/3", Secret: "whsec_3", CreatedAt: fixedNow, DisabledAt: &fixedNow},
	} {
		if err := db.InsertSubscription(t.Context(), sub); err != nil {
			t.Fatal(err)
		}
	}
	mustInsert(t, db, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", CreatedAt: fixedNow})
	if n, _, _ := db.OutboxStats(t.Context()); n != 2 {
		t.Fatalf("InsertPlant wrote %d deliveries, want 2", n)
	}
	ops := []*writeOp{
		create(t, "alice", 1, "Fern", nil), // key taken
		create(t, "alice", 1, "Moss", nil), // key taken
		create(t, "alice", 2, "Ivy", ptr("green")),
		create(t, "alice", 3, "Moss", nil),
		create(t, "bob", 2, "Ivy", nil),
	}
	if err := db.apply(t.Context(), ops); err != nil {
		t.Fatalf("apply: %v", err)
	}
	if n, _, _ := db.OutboxStats(t.Context()); n != 2+4 {
		t.Fatalf("%d deliveries after the batch, want 6", n)
	}
	tasks, err := db.ClaimDeliveries(t.Context(), fixedNow, fixedNow.Add(time.Minute), 100)
	if err != nil {
		t.Fatal(err)
	}
	events := map[int64]*plantstore.Event{2: ops[2].event, 3: ops[3].event}
	subs := map[int64][]string{}
	for _, task := range tasks {
		subs[task.PlantID] = append(subs[task.PlantID], task.SubscriptionID)
		ev := events[task.PlantID]
		if ev == nil {
			continue // plant 1's, from InsertPlant
		}
		if task.MessageID != ev.MessageID || string(task.Payload) != string(ev.Payload) || task.Owner != "alice" {
			t.Fatalf("delivery %+v, want event %+v of alice", task, ev)
		}
	}
	for id := int64(1); id <= 3; id++ {
		slices.Sort(subs[id])
		if got, want := subs[id], []string{"whk_1", "whk_2"}; !slices.Equal(got, want) {
			t.Fatalf("plant %d went to %v, want %v", id, got, want)
		}
	}
}

// TestWrite_LeftBeforeTurn: a write whose caller left before its batch
// began is not applied.
func TestWrite_LeftBeforeTurn(t *testing.T) {
	db := openBatchDB(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	p := &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", CreatedAt: fixedNow}
	if _, _, err := db.InsertPlant(ctx, p, event(t, p)); !errors.Is(err, context.Canceled) {
		t.Fatalf("InsertPlant with a cancelled context: err = %v, want context.Canceled", err)
	}
	if _, err := db.FindPlant(t.Context(), "alice", 1); !errors.Is(err, plantstore.ErrNotFound) {
		t.Fatalf("the abandoned write was applied: %v", err)
	}
}

// TestGroupCommit_Batches: writes queued while both committers are busy
// share a transaction, and each gets its own outcome.
func TestGroupCommit_Batches(t *testing.T) {
	sizes := make(chan int, 100)
	db := NewDB(pgtest.NewDatabase(t))
	db.OnCommit = func(n int, _ time.Duration) { sizes <- n }
	OpenMigrated(t, db)

	// Hold both committers: their inserts wait on a row another
	// transaction inserted and has not committed.
	blocker, err := db.pool.BeginTx(t.Context(), pgx.TxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Rollback(context.Background())
	if _, err := blocker.Exec(t.Context(), qInsertPlant, "alice", int64(0), "Blocker", nil, fixedNow); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range committers {
		held := &plantstore.Plant{Owner: "alice", ID: 0, Name: "Held", CreatedAt: fixedNow}
		wg.Go(func() {
			if _, _, err := db.InsertPlant(t.Context(), held, event(t, held)); err != nil {
				t.Error(err)
			}
		})
		waitFor(t, "a committer blocked", func() bool {
			var waiting int
			err := db.pool.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
				WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting)
			return err == nil && waiting == i+1
		})
	}

	const queued = 20
	results := make([]error, queued)
	for i := range queued {
		wg.Go(func() {
			p := &plantstore.Plant{Owner: "bob", ID: int64(i % 10), Name: "Ivy", CreatedAt: fixedNow}
			_, _, results[i] = db.InsertPlant(t.Context(), p, event(t, p))
		})
	}
	waitFor(t, "writes queued", func() bool { return db.queue.Queued() == queued })
	if err := blocker.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i, err := range results {
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	plants, err := db.ListPlants(t.Context(), plantstore.PlantFilter{Owner: "bob", Limit: 100})
	if err != nil || len(plants) != 10 {
		t.Fatalf("bob's plants: %d, %v; want 10", len(plants), err)
	}
	db.Close() // no more batches
	close(sizes)
	total, largest := 0, 0
	var all []int
	for n := range sizes {
		all = append(all, n)
		total += n
		largest = max(largest, n)
	}
	if total != committers+queued || largest < 2 {
		t.Fatalf("batch sizes %v: want %d writes, some sharing a batch", all, committers+queued)
	}
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); runtime.Gosched() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
