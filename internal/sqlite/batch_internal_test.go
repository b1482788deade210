package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/groupcommit"
	"github.com/plantstore/plantstore/internal/service"
)

func openTestDB(t *testing.T) (*DB, *[]int) {
	t.Helper()
	db := NewDB(filepath.Join(t.TempDir(), "batch.db"))
	var mu sync.Mutex
	var batches []int
	db.OnCommit = func(n int, _ time.Duration) {
		mu.Lock()
		batches = append(batches, n)
		mu.Unlock()
	}
	if err := db.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return db, &batches
}

// holdCommitter occupies the committer with a write that waits until the
// returned release is called, so the writes queued meanwhile form one batch.
func holdCommitter(t *testing.T, db *DB) (release func()) {
	t.Helper()
	started, unblock := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- db.update(context.Background(), "test", func(context.Context, *Tx) error {
			close(started)
			<-unblock
			return nil
		})
	}()
	<-started
	return func() {
		close(unblock)
		if err := <-done; err != nil {
			t.Errorf("holding write: %v", err)
		}
	}
}

// queued waits until n writes are queued behind the held committer.
func queued(db *DB, n int) {
	for db.queue.Queued() < n {
		runtimeGosched()
	}
}

func tag(s string) *string { return &s }

// plants is the plant service over db, for tests of what it asks of db.
func plants(db *DB) *service.PlantService { return service.New(db, service.Config{}).Plants }

// TestGroupCommit_OneBatch: writes queued while a commit runs share the next
// commit; replays and conflicts inside that batch behave as if serial.
func TestGroupCommit_OneBatch(t *testing.T) {
	db, batches := openTestDB(t)
	release := holdCommitter(t, db)

	type result struct {
		stored  *plantstore.Plant
		created bool
		err     error
	}
	writes := []*plantstore.Plant{
		{Owner: "alice", ID: 1, Name: "Fern", Tag: tag("green")},
		{Owner: "alice", ID: 1, Name: "Fern", Tag: tag("green")}, // replay in the same batch
		{Owner: "alice", ID: 1, Name: "Moss"},                    // conflict in the same batch
		{Owner: "alice", ID: 2, Name: "Ivy"},
		{Owner: "bob", ID: 1, Name: "Cactus"},
	}
	results := make([]result, len(writes))
	var wg sync.WaitGroup
	for i, p := range writes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stored, created, err := plants(db).CreatePlant(context.Background(), p)
			results[i] = result{stored, created, err}
		}()
		queued(db, i+1) // keep the order of the batch
	}
	release()
	wg.Wait()

	if got, want := *batches, []int{1, len(writes)}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("batch sizes = %v, want %v", got, want)
	}
	for i, want := range []struct {
		created bool
		code    int32
	}{{true, 0}, {false, 0}, {false, plantstore.CodeConflict}, {true, 0}, {true, 0}} {
		if got := plantstore.ErrorCode(results[i].err); got != want.code {
			t.Fatalf("write %d: error %v, want code %d", i, results[i].err, want.code)
		}
		if results[i].created != want.created {
			t.Fatalf("write %d: created = %v, want %v", i, results[i].created, want.created)
		}
	}
	got, _, err := plants(db).FindPlants(context.Background(), plantstore.PlantFilter{Owner: "alice", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "Fern" || *got[0].Tag != "green" || got[1].Name != "Ivy" {
		t.Fatalf("alice's plants = %+v", got)
	}
}

// TestGroupCommit_FailingWriteAlone: a write whose SQL fails is rolled back
// to its savepoint; the others in its batch commit.
func TestGroupCommit_FailingWriteAlone(t *testing.T) {
	db, batches := openTestDB(t)
	release := holdCommitter(t, db)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i == 1 {
				errs[i] = db.update(context.Background(), "test", func(ctx context.Context, tx *Tx) error {
					if _, err := tx.ExecContext(ctx, `INSERT INTO plants (owner, id, name, created_at) VALUES ('alice', 99, 'half', 0)`); err != nil {
						return err
					}
					_, err := tx.ExecContext(ctx, `INSERT INTO no_such_table VALUES (1)`)
					return err
				})
				return
			}
			_, _, errs[i] = plants(db).CreatePlant(context.Background(), &plantstore.Plant{Owner: "alice", ID: int64(i), Name: "ok"})
		}()
		queued(db, i+1)
	}
	release()
	wg.Wait()
	if fmt.Sprint(*batches) != "[1 3]" {
		t.Fatalf("batch sizes = %v, want [1 3]", *batches)
	}
	if errs[0] != nil || errs[2] != nil || errs[1] == nil {
		t.Fatalf("errors = %v, want only the middle one", errs)
	}
	if _, err := plants(db).FindPlantByID(context.Background(), "alice", 99); plantstore.ErrorCode(err) != plantstore.CodeNotFound {
		t.Fatalf("the failing write's first insert was kept: %v", err)
	}
	for _, id := range []int64{0, 2} {
		if _, err := plants(db).FindPlantByID(context.Background(), "alice", id); err != nil {
			t.Fatalf("plant %d: %v", id, err)
		}
	}
}

// TestGroupCommit_FailingBatch: when the batch's transaction itself fails,
// every write in it gets an error and none is stored; the next batch works.
func TestGroupCommit_FailingBatch(t *testing.T) {
	db, _ := openTestDB(t)
	release := holdCommitter(t, db)
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i == 2 {
				// Ends the shared transaction under the batch's feet.
				errs[i] = db.update(context.Background(), "test", func(ctx context.Context, tx *Tx) error {
					_, err := tx.ExecContext(ctx, `ROLLBACK`)
					return err
				})
				return
			}
			_, _, errs[i] = plants(db).CreatePlant(context.Background(), &plantstore.Plant{Owner: "alice", ID: int64(i), Name: "lost"})
		}()
		queued(db, i+1)
	}
	release()
	wg.Wait()
	for i, err := range errs {
		if i != 2 && err == nil {
			t.Fatalf("write %d succeeded in a failed batch", i)
		}
	}
	n, _, err := plants(db).FindPlants(context.Background(), plantstore.PlantFilter{Owner: "alice", Limit: 10})
	if err != nil || len(n) != 0 {
		t.Fatalf("plants after a failed batch = %v, %v; want none", n, err)
	}
	if _, _, err := plants(db).CreatePlant(context.Background(), &plantstore.Plant{Owner: "alice", ID: 7, Name: "after"}); err != nil {
		t.Fatalf("create after a failed batch: %v", err)
	}
}

// TestGroupCommit_CancelledWhileQueued: a write whose caller gave up before
// its turn is not applied, and does not disturb its batch.
func TestGroupCommit_CancelledWhileQueued(t *testing.T) {
	db, _ := openTestDB(t)
	release := holdCommitter(t, db)
	ctx, cancel := context.WithCancel(context.Background())
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := context.Background()
			if i == 0 {
				c = ctx
			}
			_, _, errs[i] = plants(db).CreatePlant(c, &plantstore.Plant{Owner: "alice", ID: int64(i), Name: "p"})
		}()
		queued(db, i+1)
	}
	cancel()
	release()
	wg.Wait()
	if !errors.Is(errs[0], context.Canceled) || errs[1] != nil {
		t.Fatalf("errors = %v", errs)
	}
	if _, err := plants(db).FindPlantByID(context.Background(), "alice", 0); plantstore.ErrorCode(err) != plantstore.CodeNotFound {
		t.Fatalf("cancelled write was applied: %v", err)
	}
}

// TestGroupCommit_CloseFinishesQueued: Close commits what was queued.
func TestGroupCommit_CloseFinishesQueued(t *testing.T) {
	db, _ := openTestDB(t)
	release := holdCommitter(t, db)
	errCh := make(chan error, 1)
	go func() {
		_, _, err := plants(db).CreatePlant(context.Background(), &plantstore.Plant{Owner: "alice", ID: 1, Name: "p"})
		errCh <- err
	}()
	queued(db, 1)
	closed := make(chan error, 1)
	go func() { closed <- db.Close() }()
	release()
	if err := <-errCh; err != nil {
		t.Fatalf("queued write: %v", err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if _, _, err := plants(db).CreatePlant(context.Background(), &plantstore.Plant{Owner: "alice", ID: 2, Name: "p"}); !errors.Is(err, groupcommit.ErrClosed) {
		t.Fatalf("write after Close: %v, want groupcommit.ErrClosed", err)
	}
	reopened := NewDB(db.Path)
	if err := reopened.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer reopened.Close()
	if _, err := plants(reopened).FindPlantByID(context.Background(), "alice", 1); err != nil {
		t.Fatalf("queued write lost at Close: %v", err)
	}
}

func runtimeGosched() { runtime.Gosched() }

// TestBulkInsertPlants: many plants in one write; existing ids are kept as
// they were and not counted; an invalid plant stores nothing.
func TestBulkInsertPlants(t *testing.T) {
	db, batches := openTestDB(t)
	if _, _, err := plants(db).CreatePlant(t.Context(), &plantstore.Plant{Owner: "alice", ID: 3, Name: "kept"}); err != nil {
		t.Fatal(err)
	}
	var batch []*plantstore.Plant
	for id := int64(1); id <= 1000; id++ {
		batch = append(batch, &plantstore.Plant{Owner: "alice", ID: id, Name: fmt.Sprint("p", id), Tag: tag("t")})
	}
	if n, err := plants(db).ImportPlants(t.Context(), batch); err != nil || n != 999 {
		t.Fatalf("ImportPlants = %d, %v; want 999 stored (one id existed)", n, err)
	}
	if got := len(*batches); got != 2 {
		t.Fatalf("commits = %d, want 2 (the create and the bulk insert)", got)
	}
	page, more, err := plants(db).FindPlants(t.Context(), plantstore.PlantFilter{Owner: "alice", Limit: 1000})
	if err != nil || len(page) != 1000 || more {
		t.Fatalf("page: %d plants, more %v, %v", len(page), more, err)
	}
	if page[2].Name != "kept" {
		t.Fatalf("existing plant overwritten: %+v", page[2])
	}
	bad := []*plantstore.Plant{{Owner: "alice", ID: 5000, Name: "ok"}, {Owner: "alice", ID: 5001, Name: ""}}
	if _, err := plants(db).ImportPlants(t.Context(), bad); plantstore.ErrorCode(err) != plantstore.CodeInvalidBody {
		t.Fatalf("invalid plant: %v", err)
	}
	if _, err := plants(db).FindPlantByID(t.Context(), "alice", 5000); plantstore.ErrorCode(err) != plantstore.CodeNotFound {
		t.Fatalf("a rejected bulk insert stored something: %v", err)
	}
}

// createOrDelete queues a create (name != "") or a delete of alice's plant
// id and reports its outcome.
type outcome struct {
	created bool
	code    int32
}

// TestGroupCommit_CreateDeleteSameID: a batch holding a create, a delete
// and a create again of one id behaves as if the writes ran one by one in
// queue order: stored, deleted, stored with the second content.
func TestGroupCommit_CreateDeleteSameID(t *testing.T) {
	db, batches := openTestDB(t)
	svc := plants(db)
	release := holdCommitter(t, db)
	steps := []struct {
		name string // "" deletes
		want outcome
	}{
		{"Fern", outcome{created: true}},
		{"", outcome{}},
		{"", outcome{code: plantstore.CodeNotFound}},
		{"Moss", outcome{created: true}},
		{"Moss", outcome{}}, // a replay of the previous one
		{"Ivy", outcome{code: plantstore.CodeConflict}},
	}
	got := make([]outcome, len(steps))
	var wg sync.WaitGroup
	for i, st := range steps {
		wg.Go(func() {
			if st.name == "" {
				got[i] = outcome{code: plantstore.ErrorCode(svc.DeletePlant(context.Background(), "alice", 7))}
				return
			}
			_, created, err := svc.CreatePlant(context.Background(), &plantstore.Plant{Owner: "alice", ID: 7, Name: st.name})
			got[i] = outcome{created: created, code: plantstore.ErrorCode(err)}
		})
		queued(db, i+1)
	}
	release()
	wg.Wait()
	if fmt.Sprint(*batches) != fmt.Sprint([]int{1, len(steps)}) {
		t.Fatalf("batch sizes = %v, want [1 %d]", *batches, len(steps))
	}
	for i, st := range steps {
		if got[i] != st.want {
			t.Errorf("write %d (%q): %+v, want %+v", i, st.name, got[i], st.want)
		}
	}
	p, err := svc.FindPlantByID(context.Background(), "alice", 7)
	if err != nil || p.Name != "Moss" {
		t.Fatalf("stored: %+v, %v; want Moss", p, err)
	}
}

// TestGroupCommit_ErrorInTheMiddle: an unexpected error of a write in the
// middle of a batch (a statement the database refuses, after the write had
// already written a row) rolls the batch back and runs each write alone:
// the writes before and after it commit, the bad one fails and keeps
// nothing.
func TestGroupCommit_ErrorInTheMiddle(t *testing.T) {
	db, batches := openTestDB(t)
	svc := plants(db)
	release := holdCommitter(t, db)
	errs := make([]error, 5)
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Go(func() {
			if i == 2 {
				errs[i] = db.update(context.Background(), "bad", func(ctx context.Context, tx *Tx) error {
					if _, err := tx.ExecContext(ctx, `INSERT INTO plants (owner, id, name, created_at) VALUES ('alice', 99, 'half', 0)`); err != nil {
						return err
					}
					_, err := tx.ExecContext(ctx, `INSERT INTO plants (owner, id, name, created_at) VALUES ('alice', 1, NULL, 0)`) // NOT NULL
					return err
				})
				return
			}
			_, _, errs[i] = svc.CreatePlant(context.Background(), &plantstore.Plant{Owner: "alice", ID: int64(i), Name: "ok"})
		})
		queued(db, i+1)
	}
	release()
	wg.Wait()
	if fmt.Sprint(*batches) != "[1 5]" {
		t.Fatalf("batch sizes = %v, want [1 5]", *batches)
	}
	for i, err := range errs {
		if (i == 2) != (err != nil) {
			t.Fatalf("errors = %v, want only write 2's", errs)
		}
	}
	for _, id := range []int64{0, 1, 3, 4} {
		if _, err := svc.FindPlantByID(context.Background(), "alice", id); err != nil {
			t.Fatalf("plant %d: %v", id, err)
		}
	}
	if _, err := svc.FindPlantByID(context.Background(), "alice", 99); plantstore.ErrorCode(err) != plantstore.CodeNotFound {
		t.Fatalf("the failed write's first row was kept: %v", err)
	}
}

// TestGroupCommit_RunChunks: a run of creates longer than a chunk, with
// duplicate keys inside and across chunks, stores each key once (the first
// create of it) and answers every later one with the stored row.
func TestGroupCommit_RunChunks(t *testing.T) {
	db, _ := openTestDB(t)
	ops := make([]*writeOp, 0, 300)
	for i := range 300 {
		id := int64(i % 200) // ids 0..99 twice
		ops = append(ops, &writeOp{kind: opInsertPlant, plant: &plantstore.Plant{Owner: "alice", ID: id, Name: fmt.Sprint("p", i), CreatedAt: time.Unix(0, int64(i))},
			event: &plantstore.Event{Type: plantstore.EventPlantCreated, ID: fmt.Sprint("evt_", i), PlantID: id}})
	}
	db.commit(ops)
	for i, w := range ops {
		first := i < 200
		if w.err != nil || w.inserted != first || (w.existing == nil) == !first {
			t.Fatalf("op %d: inserted %v, existing %v, err %v; want inserted %v", i, w.inserted, w.existing, w.err, first)
		}
		if !first && w.existing.Name != fmt.Sprint("p", i-200) {
			t.Fatalf("op %d ran into %q, want p%d", i, w.existing.Name, i-200)
		}
	}
	if got := []int{chunk(1), chunk(3), chunk(64), chunk(65), chunk(200), chunk(256), chunk(300), chunk(1000)}; fmt.Sprint(got) != "[1 3 64 64 128 256 256 256]" {
		t.Fatalf("chunks = %v", got)
	}
}

// TestSubscriptionCounts: the cache of each owner's enabled subscriptions
// that lets a create skip the outbox statement stays exact: through the
// store's own subscription writes, a disabling delivery, a rolled-back
// transaction, and writes by another connection to the same file.
func TestSubscriptionCounts(t *testing.T) {
	ctx := context.Background()
	db, _ := openTestDB(t)
	id := int64(0)
	create := func() int {
		t.Helper()
		id++
		p := &plantstore.Plant{Owner: "alice", ID: id, Name: "p", CreatedAt: time.Now()}
		_, n, err := insert3(db.InsertPlant(ctx, p, &plantstore.Event{Type: plantstore.EventPlantCreated, ID: fmt.Sprint("evt_", id), PlantID: id, CreatedAt: p.CreatedAt}))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	sub := func(sid string) *plantstore.Subscription {
		return &plantstore.Subscription{ID: sid, Owner: "alice", URL: "http://127.0.0.1:9/h", Secret: "whsec_x", CreatedAt: time.Now()}
	}
	check := func(what string, want int) {
		t.Helper()
		if got := create(); got != want {
			t.Fatalf("after %s: a create wrote %d deliveries, want %d", what, got, want)
		}
	}
	check("nothing", 0) // caches alice: 0
	if err := db.InsertSubscription(ctx, sub("whk_1"), plantstore.DefaultMaxSubscriptions); err != nil {
		t.Fatal(err)
	}
	check("a subscription", 1)
	if err := db.InsertSubscription(ctx, sub("whk_2"), plantstore.DefaultMaxSubscriptions); err != nil {
		t.Fatal(err)
	}
	check("two", 2)
	if err := db.DeleteSubscription(ctx, "alice", "whk_1"); err != nil {
		t.Fatal(err)
	}
	check("a delete", 1)

	// A delivery answered 410 disables whk_2.
	tasks, err := service.New(db, service.Config{}).Outbox.ClaimDeliveries(ctx, plantstore.Claim{Lease: time.Minute, Limit: 100})
	if err != nil || len(tasks) == 0 {
		t.Fatalf("claim: %d tasks, %v", len(tasks), err)
	}
	if err := db.CompleteDelivery(ctx, tasks[0], plantstore.AttemptResult{AttemptedAt: time.Now(), StatusCode: 410, State: plantstore.DeliveryFailed, Disable: true}); err != nil {
		t.Fatal(err)
	}
	check("a disable", 0)

	// A transaction that writes a subscription and then fails is rolled
	// back: its count change must not stay.
	bad := db.update(ctx, "bad", func(ctx context.Context, tx *Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO webhook_subscriptions (id, owner, url, secret, created_at) VALUES ('whk_3', 'alice', 'http://127.0.0.1:9/h', 's', 0)`); err != nil {
			return err
		}
		db.subs.add("alice", 1)
		return errors.New("fails after writing")
	})
	if bad == nil {
		t.Fatal("the failing write succeeded")
	}
	check("a rolled-back subscription", 0)

	// Another connection (another process, in real life) adds one.
	other := NewDB(db.Path)
	if err := other.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.InsertSubscription(ctx, sub("whk_4"), plantstore.DefaultMaxSubscriptions); err != nil {
		t.Fatal(err)
	}
	check("another connection's subscription", 1)
}
