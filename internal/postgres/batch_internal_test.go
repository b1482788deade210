package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/eventjson"
	"github.com/plantstore/plantstore/internal/service"
	"github.com/plantstore/plantstore/internal/testkit/pgtest"
)

// TestMain stops the shared test cluster when the tests are done (the
// external tests of this package share this binary).
func TestMain(m *testing.M) {
	code := pgtest.Run(m)
	dropTemplate()
	os.Exit(code)
}

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

func openBatchDB(t *testing.T) *DB { return OpenMigrated(t, NewDB(NewMigratedDatabase(t))) }

func ptr[T any](v T) *T { return &v }

// event returns p's webhook event, as the service makes it.
func event(t *testing.T, p *plantstore.Plant) *plantstore.Event {
	t.Helper()
	id, err := plantstore.NewEventID()
	if err != nil {
		t.Fatal(err)
	}
	return &plantstore.Event{Owner: p.Owner, Type: plantstore.EventPlantCreated, ID: id, PlantID: p.ID, Name: p.Name, Tag: p.Tag, CreatedAt: p.CreatedAt}
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
	if existing, _, err := insert3(db.InsertPlant(t.Context(), p, event(t, p))); err != nil || existing != nil {
		t.Fatalf("InsertPlant(%+v) = %+v, %v; want it stored", p, existing, err)
	}
}

// TestApply_OneTransaction runs one batch by hand (ops in key order):
// creates of a key already taken within the batch find the first one's row
// (the service tells replay from conflict), and a delete of an unknown key
// is ErrNotFound; nothing needs running alone.
func TestApply_OneTransaction(t *testing.T) {
	t.Parallel()
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
		if op.unresolved {
			t.Fatalf("op %d unresolved", i)
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

// TestApply_TakenKeys: in a batch where no key repeats (one round trip
// for its writes), a create whose key is taken finds the row that has it,
// and the other ops keep their outcomes.
func TestApply_TakenKeys(t *testing.T) {
	t.Parallel()
	db := openBatchDB(t)
	mustInsert(t, db, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", CreatedAt: fixedNow})
	mustInsert(t, db, &plantstore.Plant{Owner: "alice", ID: 4, Name: "Rose", CreatedAt: fixedNow})
	ops := []*writeOp{
		parseOp(t, "alice", "+1 Moss"),
		parseOp(t, "alice", "+2 Ivy"),
		parseOp(t, "alice", "-3"),
		parseOp(t, "alice", "-4"),
	}
	if err := db.apply(t.Context(), ops); err != nil {
		t.Fatalf("apply: %v", err)
	}
	var got []string
	for _, op := range ops {
		got = append(got, outcome(op))
	}
	if want := []string{"taken by Fern", "created, 0 deliveries", "not found", "deleted"}; !slices.Equal(got, want) {
		t.Fatalf("outcomes %q, want %q", got, want)
	}
	if got, want := ops[0].existing, (&plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", CreatedAt: fixedNow, UpdatedAt: fixedNow}); *got != *want {
		t.Fatalf("existing %+v, want %+v", got, want)
	}
	if got, want := state(t, db, "alice"), "1:Fern 2:Ivy"; got != want {
		t.Fatalf("plants %q, want %q", got, want)
	}
}

// TestCommit_Contended: a create whose key stays taken by a row its lookup
// never finds is tried in the batch, then alone maxUnresolved times, then
// fails with ErrContended. A trigger stands in for a plant created and
// deleted again and again: it moves every insert of "ghost" onto a key
// that exists.
func TestCommit_Contended(t *testing.T) {
	t.Parallel()
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
INSERT INTO plants (owner, id, name, created_at, updated_at, search) VALUES ('haunt', 1, 'x', now(), now(), '')`)
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
	if got, want := tries, 1+maxUnresolved; got != want {
		t.Fatalf("ghost inserted %d times, want %d (the batch, then alone)", got, want)
	}
}

// TestCommit_FailingWriteAlone: one failing statement aborts PostgreSQL's
// whole transaction; the batch then runs each op alone, so only the bad one
// fails, and the others keep their outcomes.
func TestCommit_FailingWriteAlone(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
	db := openBatchDB(t)
	for _, sub := range []*plantstore.Subscription{
		{ID: "whk_1", Owner: "alice", URL: "http://127.0.0.1:9/1", Secret: "whsec_1", CreatedAt: fixedNow},
		{ID: "whk_2", Owner: "alice", URL: "http://127.0.0.1:9/2", Secret: "whsec_2", CreatedAt: fixedNow},
		{ID: "whk_3", Owner: "alice", URL: "http://127.0.0.1:9/3", Secret: "whsec_3", CreatedAt: fixedNow, DisabledAt: &fixedNow},
	} {
		if err := db.InsertSubscription(t.Context(), sub, plantstore.DefaultMaxSubscriptions); err != nil {
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
	tasks, err := service.New(db, service.Config{}).Outbox.ClaimDeliveries(t.Context(), plantstore.Claim{Lease: time.Minute, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	events := map[int64]*plantstore.Event{2: ops[2].event, 3: ops[3].event}
	subs := map[int64][]string{}
	for _, task := range tasks {
		subs[task.Event.PlantID] = append(subs[task.Event.PlantID], task.SubscriptionID)
		ev := events[task.Event.PlantID]
		if ev == nil {
			continue // plant 1's, from InsertPlant
		}
		if task.MessageID != ev.MessageID() || string(eventjson.Body(task)) != string(eventjson.AppendPlant(nil, ev)) || task.Owner != "alice" {
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
	t.Parallel()
	db := openBatchDB(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	p := &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", CreatedAt: fixedNow}
	if _, _, err := insert3(db.InsertPlant(ctx, p, event(t, p))); !errors.Is(err, context.Canceled) {
		t.Fatalf("InsertPlant with a cancelled context: err = %v, want context.Canceled", err)
	}
	if _, err := db.FindPlant(t.Context(), "alice", 1); !errors.Is(err, plantstore.ErrNotFound) {
		t.Fatalf("the abandoned write was applied: %v", err)
	}
}

// TestGroupCommit_Batches: writes queued while both committers are busy
// share a transaction, and each gets its own outcome.
func TestGroupCommit_Batches(t *testing.T) {
	t.Parallel()
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
	if _, err := blocker.Exec(t.Context(), `INSERT INTO plants (owner, id, name, created_at, updated_at, search) VALUES ('alice', 0, 'Blocker', $1, $1, '')`, fixedNow); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range committers {
		held := &plantstore.Plant{Owner: "alice", ID: 0, Name: "Held", CreatedAt: fixedNow}
		wg.Go(func() {
			if _, _, err := insert3(db.InsertPlant(t.Context(), held, event(t, held))); err != nil {
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
			_, _, results[i] = insert3(db.InsertPlant(t.Context(), p, event(t, p)))
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

// TestRuns: a batch in key order splits into runs of creates and of
// deletes in which each key appears once, and a later op on a key goes to
// a later run.
func TestRuns(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		ops  []*writeOp // in key order
		want [][]int    // the runs, as indexes into ops
	}{
		{"Creates", []*writeOp{create(t, "a", 1, "x", nil), create(t, "a", 2, "x", nil), create(t, "b", 1, "x", nil)}, [][]int{{0, 1, 2}}},
		{"Deletes", []*writeOp{remove(t, "a", 1), remove(t, "a", 2)}, [][]int{{0, 1}}},
		{"OtherKeys", []*writeOp{create(t, "a", 1, "x", nil), remove(t, "a", 2), create(t, "a", 3, "x", nil)}, [][]int{{0, 2}, {1}}},
		{"CreateDelete", []*writeOp{create(t, "a", 1, "x", nil), remove(t, "a", 1)}, [][]int{{0}, {1}}},
		{"DeleteCreate", []*writeOp{remove(t, "a", 1), create(t, "a", 1, "x", nil), create(t, "a", 2, "x", nil)}, [][]int{{2}, {0}, {1}}},
		{"CreateDeleteCreate", []*writeOp{create(t, "a", 1, "x", nil), remove(t, "a", 1), create(t, "a", 1, "y", nil)}, [][]int{{0}, {1}, {2}}},
		{"Twice", []*writeOp{create(t, "a", 1, "x", nil), create(t, "a", 1, "x", nil), remove(t, "a", 2), remove(t, "a", 2)}, [][]int{{0}, {2}, {1}, {3}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got [][]int
			for _, run := range runs(tt.ops) {
				var idx []int
				for _, op := range run {
					idx = append(idx, slices.Index(tt.ops, op))
				}
				got = append(got, idx)
			}
			if !slices.EqualFunc(got, tt.want, slices.Equal) {
				t.Fatalf("runs = %v, want %v", got, tt.want)
			}
		})
	}
}

// parseOp makes an op of owner from "+id name" (a create) or "-id" (a
// delete).
func parseOp(t *testing.T, owner, spec string) *writeOp {
	t.Helper()
	var (
		id   int64
		name string
	)
	if _, err := fmt.Sscanf(spec[1:], "%d %s", &id, &name); spec[0] == '+' && err != nil {
		t.Fatalf("op %q: %v", spec, err)
	}
	if spec[0] == '-' {
		return remove(t, owner, id)
	}
	return create(t, owner, id, name, nil)
}

// outcome describes what op came to.
func outcome(op *writeOp) string {
	switch {
	case op.err != nil:
		return op.err.Error()
	case op.del:
		return "deleted"
	case op.existing != nil:
		return "taken by " + op.existing.Name
	}
	return fmt.Sprintf("created, %d deliveries", op.deliveries)
}

// state describes the owner's plants as "id:name ...".
func state(t *testing.T, db *DB, owner string) string {
	t.Helper()
	plants, err := db.ListPlants(t.Context(), plantstore.PlantFilter{Owner: owner, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var s []string
	for _, p := range plants {
		s = append(s, fmt.Sprintf("%d:%s", p.ID, p.Name))
	}
	return strings.Join(s, " ")
}

// TestCommit_SameKeySerial: a batch holding creates and deletes of the same
// ids, in any order, has the outcome of applying its ops one by one in
// queue order: each op's result, the outbox rows and the rows left are
// those of a second database where each op ran as a batch of its own.
func TestCommit_SameKeySerial(t *testing.T) {
	t.Parallel()
	batched, serial := openBatchDB(t), openBatchDB(t)
	for _, tt := range []struct {
		name   string
		before []string // creates applied first
		ops    []string
		want   []string // each op's outcome
		after  string
	}{
		{"CreateDelete", nil, []string{"+1 Fern", "-1"}, []string{"created, 1 deliveries", "deleted"}, ""},
		{"DeleteCreate", []string{"+1 Fern"}, []string{"-1", "+1 Moss"}, []string{"deleted", "created, 1 deliveries"}, "1:Moss"},
		{"CreateDeleteCreate", nil, []string{"+1 Fern", "-1", "+1 Moss"},
			[]string{"created, 1 deliveries", "deleted", "created, 1 deliveries"}, "1:Moss"},
		{"TakenCreateDelete", []string{"+1 Fern"}, []string{"+1 Moss", "-1"}, []string{"taken by Fern", "deleted"}, ""},
		{"DeleteDeleteCreate", []string{"+1 Fern"}, []string{"-1", "-1", "+1 Moss"},
			[]string{"deleted", "not found", "created, 1 deliveries"}, "1:Moss"},
		{"CreateTwice", nil, []string{"+1 Fern", "+1 Moss"}, []string{"created, 1 deliveries", "taken by Fern"}, "1:Fern"},
		{"Interleaved", []string{"+2 Ivy"}, []string{"+3 Rose", "-2", "+1 Fern", "-3", "+2 Moss", "-9", "+3 Lily", "-1"},
			[]string{"created, 1 deliveries", "deleted", "created, 1 deliveries", "deleted",
				"created, 1 deliveries", "not found", "created, 1 deliveries", "deleted"}, "2:Moss 3:Lily"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			owner := tt.name
			for _, db := range []*DB{batched, serial} {
				sub := &plantstore.Subscription{ID: "whk_" + owner, Owner: owner, URL: "http://127.0.0.1:9/", Secret: "whsec_1", CreatedAt: fixedNow}
				if err := db.InsertSubscription(t.Context(), sub, plantstore.DefaultMaxSubscriptions); err != nil {
					t.Fatal(err)
				}
				for _, spec := range tt.before {
					mustInsert(t, db, parseOp(t, owner, spec).plant)
				}
			}
			var batch []*writeOp
			for _, spec := range tt.ops {
				batch = append(batch, parseOp(t, owner, spec))
				serial.commit([]*writeOp{parseOp(t, owner, spec)})
			}
			batched.commit(batch)
			var got []string
			for _, op := range batch {
				got = append(got, outcome(op))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("outcomes %q, want %q", got, tt.want)
			}
			for _, db := range []*DB{batched, serial} {
				if got := state(t, db, owner); got != tt.after {
					t.Errorf("plants left %q, want %q", got, tt.after)
				}
			}
			nb, _, _ := batched.OutboxStats(t.Context())
			ns, _, _ := serial.OutboxStats(t.Context())
			if nb != ns {
				t.Errorf("%d deliveries after the batch, %d one by one", nb, ns)
			}
		})
	}
}

// TestCommit_ErrorInTheMiddle: an unexpected error of one op in the middle
// of a batch of several runs (here a trigger refusing one name) rolls the
// batch back; each op then runs alone, so only that op fails, and the
// others commit with their serial outcomes and outbox rows, each written
// once.
func TestCommit_ErrorInTheMiddle(t *testing.T) {
	t.Parallel()
	db := openBatchDB(t)
	_, err := db.pool.Exec(t.Context(), `
CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF NEW.name = 'boom' THEN
		RAISE EXCEPTION 'refused';
	END IF;
	RETURN NEW;
END $$;
CREATE TRIGGER refuse BEFORE INSERT ON plants FOR EACH ROW EXECUTE FUNCTION refuse()`)
	if err != nil {
		t.Fatal(err)
	}
	sub := &plantstore.Subscription{ID: "whk_1", Owner: "alice", URL: "http://127.0.0.1:9/", Secret: "whsec_1", CreatedAt: fixedNow}
	if err := db.InsertSubscription(t.Context(), sub, plantstore.DefaultMaxSubscriptions); err != nil {
		t.Fatal(err)
	}
	mustInsert(t, db, &plantstore.Plant{Owner: "alice", ID: 2, Name: "Ivy", CreatedAt: fixedNow})
	var ops []*writeOp
	for _, spec := range []string{"+1 Fern", "-2", "+3 boom", "+4 Moss", "-5", "+2 Rose", "+1 Lily"} {
		ops = append(ops, parseOp(t, "alice", spec))
	}
	db.commit(ops)
	var pgErr *pgconn.PgError
	if bad := ops[2]; !errors.As(bad.err, &pgErr) || pgErr.Message != "refused" {
		t.Fatalf("the refused create: err = %v, want its own error", bad.err)
	}
	var got []string
	for _, op := range slices.Delete(slices.Clone(ops), 2, 3) {
		got = append(got, outcome(op))
	}
	want := []string{"created, 1 deliveries", "deleted", "created, 1 deliveries", "not found", "created, 1 deliveries", "taken by Fern"}
	if !slices.Equal(got, want) {
		t.Fatalf("outcomes %q, want %q", got, want)
	}
	if got, want := state(t, db, "alice"), "1:Fern 2:Rose 4:Moss"; got != want {
		t.Fatalf("plants %q, want %q", got, want)
	}
	if n, _, _ := db.OutboxStats(t.Context()); n != 4 {
		t.Fatalf("%d deliveries, want 4 (Ivy, Fern, Moss, Rose)", n)
	}
}

// TestCommit_TakenConcurrently: a create whose insert waited for another
// transaction's insert of its key, which then committed, returns that
// transaction's row.
func TestCommit_TakenConcurrently(t *testing.T) {
	t.Parallel()
	db := openBatchDB(t)
	other, err := db.pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback(context.Background())
	if _, err := other.Exec(t.Context(), `INSERT INTO plants (owner, id, name, created_at, updated_at, search) VALUES ('alice', 1, 'Other', $1, $1, '')`, fixedNow); err != nil {
		t.Fatal(err)
	}
	fern := create(t, "alice", 1, "Fern", nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		db.commit([]*writeOp{fern})
	}()
	waitFor(t, "the insert waiting for the other transaction", func() bool {
		var waiting int
		err := db.pool.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting)
		return err == nil && waiting == 1
	})
	if err := other.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	<-done
	if fern.err != nil || fern.existing == nil || fern.existing.Name != "Other" {
		t.Fatalf("create: %+v, %v; want the other transaction's row", fern.existing, fern.err)
	}
}
