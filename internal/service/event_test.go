package service_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/service"
	"github.com/plantstore/plantstore/internal/sqlite"
)

// pruneDB records the limit of every PruneEvents statement and runs between
// after each one, before the pruner's next.
type pruneDB struct {
	*sqlite.DB
	limits  []int
	between func()
}

func (db *pruneDB) PruneEvents(ctx context.Context, before time.Time, limit int) (int, error) {
	n, err := db.DB.PruneEvents(ctx, before, limit)
	db.limits = append(db.limits, limit)
	if db.between != nil {
		db.between()
	}
	return n, err
}

// TestPruneEvents: with a fake clock, a pass deletes exactly the events
// older than the retention, in statements of at most the batch size, and
// writes go through between two statements; the owner's seq continues
// after a prune.
func TestPruneEvents(t *testing.T) {
	ctx := context.Background()
	clk := &clock{now: start}
	db := &pruneDB{DB: MustOpenDB(t)}
	svc := service.New(db, service.Config{Now: clk.Now})
	create := func(id int64) {
		t.Helper()
		if _, _, err := svc.Plants.CreatePlant(ctx, &plantstore.Plant{Owner: "alice", ID: id, Name: fmt.Sprint("P", id)}); err != nil {
			t.Fatal(err)
		}
	}
	seqs := func() []int64 {
		t.Helper()
		events, _, err := svc.Events.FindEvents(ctx, plantstore.EventFilter{Owner: "alice", Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var out []int64
		for _, e := range events {
			out = append(out, e.Seq)
		}
		return out
	}
	for id := int64(1); id <= 5; id++ { // seq 1..5 at start
		create(id)
	}
	clk.Add(2 * time.Hour)
	create(6) // seq 6 at start+2h

	// Retention 3h at start+2h: nothing is old enough.
	if n, err := svc.Events.PruneEventsPass(ctx, 3*time.Hour, 2, 0); err != nil || n != 0 {
		t.Fatalf("pass = %d, %v; want 0", n, err)
	}
	if diff := cmp.Diff([]int64{1, 2, 3, 4, 5, 6}, seqs()); diff != "" {
		t.Fatalf("seqs after a pass with nothing old (-want +got):\n%s", diff)
	}

	// Retention 1h at start+2h: the five events of start go, 2 a
	// statement; a create between two statements is not held up by the
	// pass, and is not pruned (it is new).
	writes := 0
	db.limits, db.between = nil, func() {
		writes++
		create(int64(100 + writes))
	}
	n, err := svc.Events.PruneEventsPass(ctx, time.Hour, 2, 0)
	db.between = nil
	if err != nil || n != 5 {
		t.Fatalf("pass = %d, %v; want 5", n, err)
	}
	if diff := cmp.Diff([]int{2, 2, 2}, db.limits); diff != "" {
		t.Fatalf("statement limits (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int64{6, 7, 8, 9}, seqs()); diff != "" {
		t.Fatalf("seqs after the prune (-want +got):\n%s", diff)
	}
	// The sequence continues after the prune, also once every event is gone.
	clk.Add(3 * time.Hour)
	if n, err := svc.Events.PruneEventsPass(ctx, time.Hour, 500, 0); err != nil || n != 4 {
		t.Fatalf("pass = %d, %v; want 4", n, err)
	}
	create(200)
	if diff := cmp.Diff([]int64{10}, seqs()); diff != "" {
		t.Fatalf("seqs after pruning all (-want +got):\n%s", diff)
	}
}

// TestRunPrunerOff: retention 0 keeps everything; RunPruner returns at once.
func TestRunPrunerOff(t *testing.T) {
	clk := &clock{now: start}
	db := &pruneDB{DB: MustOpenDB(t)}
	svc := service.New(db, service.Config{Now: clk.Now})
	svc.Events.RunPruner(context.Background(), 0, nil) // would block until the context ends otherwise
	if len(db.limits) != 0 {
		t.Fatalf("retention 0 ran %d prune statements", len(db.limits))
	}
}
