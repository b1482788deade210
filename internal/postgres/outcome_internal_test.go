package postgres

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/testkit/pgtest"
)

// The tests of the commit-outcome rule (outcome.go) break a connection
// at a chosen protocol message with faultProxy, or make the server cancel
// a commit's wait for a synchronous standby, and check what the writes
// caught in it are answered: never success on the strength of a read-back
// alone, never run again when they may have committed, and
// plantstore.ErrUnavailable (503) rather than an internal error.

// commandComplete returns a fault that fires on the server's
// CommandComplete with tag: the statement ran (a COMMIT: committed) and the
// client never learns it.
func commandComplete(tag string) faultFunc {
	return func(fromServer bool, typ byte, body []byte) bool {
		return fromServer && typ == 'C' && string(body) == tag+"\x00"
	}
}

// beforeServer returns a fault that fires on the client's first Bind: a
// pipeline (the group commit's, COMMIT included) that the server never
// gets, though the client sent it whole.
func beforeServer() faultFunc {
	return func(fromServer bool, typ byte, _ []byte) bool { return !fromServer && typ == 'B' }
}

// waitFired waits for p's fault to fire.
func waitFired(t *testing.T, p *faultProxy) {
	t.Helper()
	select {
	case <-p.fired:
	case <-time.After(10 * time.Second):
		t.Fatal("the fault did not fire")
	}
}

// openProxied opens a migrated store whose connections go through a
// faultProxy, and returns them with a direct connection to the database.
func openProxied(t *testing.T) (*DB, *faultProxy, *pgx.Conn) {
	t.Helper()
	direct := pgtest.NewDatabase(t)
	p, url := startProxy(t, direct)
	db := NewDB(url)
	db.OpTimeout = 5 * time.Second
	return OpenMigrated(t, db), p, adminConn(t, direct)
}

// TestCommitOutcome_ConnectionLost: the connection breaks while a group
// commit's batch commits, after the server committed it (its COMMIT's
// answer lost) or before the server got it. Either way the client cannot
// tell: every create of the batch fails with ErrUnavailable, none is run
// again (a create redone after its commit would find its own row and be
// answered with it, a replay, on that read alone), and the rows, events
// and outbox rows are there once or not at all. The client's retry of
// each create then answers it: with the row (committed) or by writing it.
func TestCommitOutcome_ConnectionLost(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		fault     faultFunc
		committed bool
	}{
		{"AfterCommit", commandComplete("COMMIT"), true},
		{"BeforeServer", beforeServer(), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			db, proxy, direct := openProxied(t)
			sub := &plantstore.Subscription{ID: "whk_1", Owner: "alice", URL: "http://127.0.0.1:9/", Secret: "whsec_1", CreatedAt: fixedNow}
			if err := db.InsertSubscription(t.Context(), sub, plantstore.DefaultMaxSubscriptions); err != nil {
				t.Fatal(err)
			}
			var ops []*writeOp
			for id := range int64(3) {
				ops = append(ops, create(t, "alice", id+1, fmt.Sprint("Plant ", id+1), nil))
			}
			proxy.arm(tt.fault)
			db.commit(ops)
			waitFired(t, proxy)
			for _, op := range ops {
				err := wrap(op.name(), op.err)
				if !errors.Is(err, plantstore.ErrUnavailable) || !outcomeUnknown(err) || op.existing != nil {
					t.Fatalf("create %d: existing %+v, err %v; want ErrUnavailable, outcome unknown", op.plant.ID, op.existing, err)
				}
			}
			want := 0
			if tt.committed {
				want = 3
			}
			for _, table := range []string{"plants", "events", "webhook_deliveries"} {
				if got := count(t, direct, `SELECT count(*) FROM `+table+` WHERE owner = 'alice'`); got != want {
					t.Fatalf("%d rows in %s, want %d (the batch not run again)", got, table, want)
				}
			}

			// The client retries.
			for _, op := range ops {
				existing, deliveries, err := insert3(db.InsertPlant(t.Context(), op.plant, event(t, op.plant)))
				switch {
				case err != nil:
					t.Fatalf("retry of create %d: %v", op.plant.ID, err)
				case tt.committed && (existing == nil || !existing.SameContent(op.plant)):
					t.Fatalf("retry of create %d: %+v, want the row committed before", op.plant.ID, existing)
				case !tt.committed && (existing != nil || deliveries != 1):
					t.Fatalf("retry of create %d: existing %+v, %d deliveries; want it written now", op.plant.ID, existing, deliveries)
				}
			}
			for _, table := range []string{"plants", "events", "webhook_deliveries"} {
				if got := count(t, direct, `SELECT count(*) FROM `+table+` WHERE owner = 'alice'`); got != 3 {
					t.Fatalf("after the retries: %d rows in %s, want 3", got, table)
				}
			}
		})
	}
}

// TestCommitOutcome_OtherWrites: the writes outside the group commit (an
// explicit transaction, a pipeline that is an implicit one) whose
// connection breaks once the server committed fail with ErrUnavailable
// (503, not an internal error), and are not run again.
func TestCommitOutcome_OtherWrites(t *testing.T) {
	t.Parallel()
	db, proxy, direct := openProxied(t)
	ctx := t.Context()
	fern := &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", CreatedAt: fixedNow}
	mustInsert(t, db, fern)

	// DeletePlant with its event: BEGIN ... COMMIT.
	proxy.arm(commandComplete("COMMIT"))
	ev := &plantstore.Event{ID: "evt_del", PlantID: 1, CreatedAt: fixedNow, Type: plantstore.EventPlantDeleted}
	err := errOnly(db.DeletePlant(ctx, "alice", 1, ev))
	waitFired(t, proxy)
	if !errors.Is(err, plantstore.ErrUnavailable) {
		t.Fatalf("DeletePlant whose COMMIT's answer was lost: err = %v, want ErrUnavailable", err)
	}
	if n := count(t, direct, `SELECT count(*) FROM plants WHERE owner = 'alice'`); n != 0 {
		t.Fatalf("%d plants, want the delete committed", n)
	}

	// InsertToken: one statement in an implicit transaction, committed at
	// the pipeline's end, before its ReadyForQuery.
	var inserted atomic.Bool
	proxy.arm(func(fromServer bool, typ byte, body []byte) bool {
		if fromServer && typ == 'C' && string(body) == "INSERT 0 1\x00" {
			inserted.Store(true)
		}
		return fromServer && typ == 'Z' && inserted.Load()
	})
	tok := newTestToken(t)
	err = db.InsertToken(ctx, tok)
	waitFired(t, proxy)
	if !errors.Is(err, plantstore.ErrUnavailable) {
		t.Fatalf("InsertToken whose commit's answer was lost: err = %v, want ErrUnavailable", err)
	}
	if n := count(t, direct, `SELECT count(*) FROM tokens WHERE id = $1`, tok.ID); n != 1 {
		t.Fatalf("%d tokens, want the insert committed once", n)
	}
}

// TestCommitOutcome_SyncStandbyWarning: under synchronous replication a
// COMMIT commits locally, then waits for the standby; when that wait is
// cancelled (here pg_cancel_backend; also a terminated backend) the COMMIT
// returns with a WARNING, and the write may be on no standby. The store
// answers such a create ErrUnavailable, though the row is there. The
// client's retry finds the row, but its read is answered only once a
// commit after it returned, which waits for the standby too: 503 while
// the standby is missing, the row once it is back.
func TestCommitOutcome_SyncStandbyWarning(t *testing.T) {
	t.Parallel()
	c := pgtest.StartCluster(t)
	url := c.CreateDatabase(t, "")
	db := NewDB(url)
	db.OpTimeout = 10 * time.Second
	OpenMigrated(t, db)
	admin := adminConn(t, url)
	ctx := t.Context()
	setSync := func(names string) {
		t.Helper()
		for _, q := range []string{
			`ALTER SYSTEM SET synchronous_commit = on`,
			`ALTER SYSTEM SET synchronous_standby_names = '` + names + `'`,
			`SELECT pg_reload_conf()`,
		} {
			if _, err := admin.Exec(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		// The postmaster signals every backend with the reload; once this
		// one has read the settings, the others read them at their next
		// statement.
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			var got string
			if err := admin.QueryRow(ctx, `SELECT current_setting('synchronous_standby_names')`).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got == names {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("synchronous_standby_names = %q 10 s after the reload, want %q", got, names)
			}
		}
	}
	// cancelWaits cancels every wait for the standby until done is closed.
	cancelWaits := func(done chan struct{}) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); ; {
			if _, err := admin.Exec(ctx, `SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE wait_event = 'SyncRep'`); err != nil {
				t.Fatal(err)
			}
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatal("the create did not return within 20 s")
			}
		}
	}
	setSync("ghost") // a standby that never comes
	fern := &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", CreatedAt: fixedNow}

	insert := func() (*plantstore.Plant, error) {
		done := make(chan struct{})
		var existing *plantstore.Plant
		var err error
		go func() {
			defer close(done)
			existing, _, err = insert3(db.InsertPlant(ctx, fern, event(t, fern)))
		}()
		cancelWaits(done)
		return existing, err
	}
	existing, err := insert()
	var unknown *outcomeUnknownError
	if !errors.Is(err, plantstore.ErrUnavailable) || !errors.As(err, &unknown) || unknown.warning == nil {
		t.Fatalf("create whose wait for the standby was cancelled: %+v, %v; want ErrUnavailable with the server's warning", existing, err)
	}
	if n := count(t, admin, `SELECT count(*) FROM plants`); n != 1 {
		t.Fatalf("%d plants, want 1: committed locally", n)
	}

	existing, err = insert()
	if !errors.Is(err, plantstore.ErrUnavailable) || existing != nil {
		t.Fatalf("retry (a replay) while the standby is missing: %+v, %v; want ErrUnavailable: its read not confirmed", existing, err)
	}

	setSync("") // no synchronous standby: commits return at once
	existing, _, err = insert3(db.InsertPlant(ctx, fern, event(t, fern)))
	if err != nil || existing == nil || !existing.SameContent(fern) {
		t.Fatalf("retry once commits are confirmed again: %+v, %v; want the stored row", existing, err)
	}
	if n := count(t, admin, `SELECT count(*) FROM events`); n != 1 {
		t.Fatalf("%d events, want 1", n)
	}
}

// TestDropConns: a statement that fails because its server went away
// (here its backend terminated: 57P01) drops every pooled connection at
// once, not one by one as each fails; a second such error on a
// connection made before that drop drops nothing more.
func TestDropConns(t *testing.T) {
	t.Parallel()
	var drops atomic.Int32
	db := NewDB(pgtest.NewDatabase(t))
	db.Config.MaxConns = 4
	db.OnDropConns = func(error) { drops.Add(1) }
	OpenMigrated(t, db)
	ctx := t.Context()
	admin := adminConn(t, db.URL)

	var conns []*pgxpool.Conn
	var pids []int32
	for range 4 {
		c, err := db.pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Release) // before the pool closes, which waits for it (Release twice is no-op)
		conns, pids = append(conns, c), append(pids, int32(c.Conn().PgConn().PID()))
	}
	// Two go back to the pool, idle; two stay out.
	conns[2].Release()
	conns[3].Release()
	for _, pid := range pids[:2] {
		if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend($1)`, pid); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conns[0].Exec(ctx, `SELECT 1`); !serverGone(err) {
		t.Fatalf("statement on a terminated backend: err = %v, want one that says the server is gone", err)
	}
	if got := drops.Load(); got != 1 {
		t.Fatalf("%d drops after the first error, want 1", got)
	}
	if idle := db.pool.Stat().IdleConns(); idle != 0 {
		t.Fatalf("%d idle connections after the drop, want 0", idle)
	}
	waitFor(t, "the idle connections' backends to end", func() bool {
		return count(t, admin, `SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1)`, pids[2:]) == 0
	})
	if _, err := conns[1].Exec(ctx, `SELECT 1`); !serverGone(err) {
		t.Fatalf("statement on the other terminated backend: err = %v", err)
	}
	if got := drops.Load(); got != 1 {
		t.Fatalf("%d drops after an error on a connection older than the drop, want still 1", got)
	}
	conns[0].Release()
	conns[1].Release()
	if err := db.Ping(ctx); err != nil {
		t.Fatalf("Ping after the drop: %v", err)
	}
}

// count returns the number of rows of a query's count(*).
func count(t *testing.T, conn *pgx.Conn, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := conn.QueryRow(t.Context(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
