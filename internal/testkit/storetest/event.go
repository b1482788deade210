package storetest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/eventjson"
	"github.com/plantstore/plantstore/internal/service"
)

// testEvents checks the events every plant write records: per owner seqs
// from 1 with no gaps, in the transaction of the change, listed by seq,
// filtered by type, and pruned by age.
func testEvents(t *testing.T, bs Backends) {
	t.Run("SeqPerOwner", func(t *testing.T) {
		_, svc := open(t, bs, service.Config{})
		ctx := t.Context()
		for i := int64(1); i <= 3; i++ {
			mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: i, Name: fmt.Sprint("p", i)})
		}
		mustCreate(t, svc, &plantstore.Plant{Owner: "bob", ID: 1, Name: "b"})
		if _, err := svc.Plants.UpdatePlant(ctx, "alice", 2, plantstore.PlantUpdate{Name: ptr("Moss")}, ""); err != nil {
			t.Fatal(err)
		}
		if err := svc.Plants.DeletePlant(ctx, "alice", 3); err != nil {
			t.Fatal(err)
		}
		// No event: a replay, a conflict, a delete of a missing plant.
		if _, created, err := svc.Plants.CreatePlant(ctx, &plantstore.Plant{Owner: "alice", ID: 1, Name: "p1"}); err != nil || created {
			t.Fatalf("replay: created %v, %v", created, err)
		}
		if _, _, err := svc.Plants.CreatePlant(ctx, &plantstore.Plant{Owner: "alice", ID: 1, Name: "other"}); err == nil {
			t.Fatal("conflicting create: no error")
		}
		if err := svc.Plants.DeletePlant(ctx, "alice", 3); err == nil {
			t.Fatal("second delete: no error")
		}
		got, more, err := svc.Events.FindEvents(ctx, plantstore.EventFilter{Owner: "alice"})
		if err != nil || more {
			t.Fatalf("FindEvents: more %v, %v", more, err)
		}
		want := []struct {
			typ  string
			id   int64
			name string
		}{
			{plantstore.EventPlantCreated, 1, "p1"}, {plantstore.EventPlantCreated, 2, "p2"}, {plantstore.EventPlantCreated, 3, "p3"},
			{plantstore.EventPlantUpdated, 2, "Moss"}, {plantstore.EventPlantDeleted, 3, "p3"},
		}
		if len(got) != len(want) {
			t.Fatalf("got %d events, want %d", len(got), len(want))
		}
		ids := map[string]bool{}
		for i, e := range got {
			if e.Seq != int64(i+1) || e.Type != want[i].typ || e.PlantID != want[i].id || e.Name != want[i].name || e.Owner != "alice" {
				t.Errorf("event %d = seq %d %s plant %d name %s, want seq %d %s plant %d name %s", i, e.Seq, e.Type, e.PlantID, e.Name, i+1, want[i].typ, want[i].id, want[i].name)
			}
			if ids[e.ID] || len(e.ID) != len("evt_")+24 {
				t.Errorf("event %d id %q: repeated or malformed", i, e.ID)
			}
			ids[e.ID] = true
		}
		bobs, _, err := svc.Events.FindEvents(ctx, plantstore.EventFilter{Owner: "bob"})
		if err != nil || len(bobs) != 1 || bobs[0].Seq != 1 {
			t.Fatalf("bob's events: %v, %v", bobs, err)
		}
		// Pages, after, type.
		page, more, err := svc.Events.FindEvents(ctx, plantstore.EventFilter{Owner: "alice", After: 1, Limit: 2})
		if err != nil || !more || len(page) != 2 || page[0].Seq != 2 || page[1].Seq != 3 {
			t.Fatalf("page after 1: %d events, more %v, %v", len(page), more, err)
		}
		upd, _, err := svc.Events.FindEvents(ctx, plantstore.EventFilter{Owner: "alice", Type: plantstore.EventPlantUpdated})
		if err != nil || len(upd) != 1 || upd[0].Seq != 4 {
			t.Fatalf("type filter: %v, %v", upd, err)
		}
		checkCode(t, "FindEvents with a bad type", errOf(svc.Events.FindEvents(ctx, plantstore.EventFilter{Owner: "alice", Type: "x"})), plantstore.CodeInvalidQuery)
	})

	t.Run("NoEventWithoutTheChange", func(t *testing.T) {
		// A change that is not made writes no event and takes no seq:
		// a conditional update that fails, an update of a missing plant.
		_, svc := open(t, bs, service.Config{})
		ctx := t.Context()
		p := mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 1, Name: "a"})
		if _, err := svc.Plants.UpdatePlant(ctx, "alice", 1, plantstore.PlantUpdate{Name: ptr("b")}, `"stale"`); err == nil {
			t.Fatal("update with a stale ETag: no error")
		}
		if _, err := svc.Plants.UpdatePlant(ctx, "alice", 9, plantstore.PlantUpdate{Name: ptr("b")}, ""); err == nil {
			t.Fatal("update of a missing plant: no error")
		}
		if err := svc.Plants.DeletePlantIf(ctx, "alice", 1, p.ETag()); err != nil {
			t.Fatal(err)
		}
		got, _, err := svc.Events.FindEvents(ctx, plantstore.EventFilter{Owner: "alice"})
		if err != nil || len(got) != 2 || got[1].Seq != 2 || got[1].Type != plantstore.EventPlantDeleted {
			t.Fatalf("events: %d, %v", len(got), err)
		}
	})

	t.Run("ConcurrentWritersOfOneOwner", func(t *testing.T) {
		// Writers of one owner at once, through the group commit and
		// around it (updates): distinct seqs 1..n, no gaps.
		_, svc := open(t, bs, service.Config{})
		ctx := t.Context()
		const n = 40
		mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 1000, Name: "u"})
		var wg sync.WaitGroup
		errs := make(chan error, 2*n)
		for i := range n {
			wg.Go(func() {
				_, _, err := svc.Plants.CreatePlant(ctx, &plantstore.Plant{Owner: "alice", ID: int64(i + 1), Name: "c"})
				errs <- err
			})
			wg.Go(func() {
				_, err := svc.Plants.UpdatePlant(ctx, "alice", 1000, plantstore.PlantUpdate{Name: ptr(fmt.Sprint("u", i))}, "")
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		got, _, err := svc.Events.FindEvents(ctx, plantstore.EventFilter{Owner: "alice", Limit: plantstore.MaxPageSize})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2*n+1 {
			t.Fatalf("%d events, want %d", len(got), 2*n+1)
		}
		for i, e := range got {
			if e.Seq != int64(i+1) {
				t.Fatalf("event %d has seq %d", i, e.Seq)
			}
		}
	})

	// An event carries its plant's own times as the change left them, on
	// every write path (a lone create, a run of creates, an update, a
	// delete), in GET /events' reads and in the typed deliveries' bodies;
	// an untyped delivery's body is the seed's NewPlant, without them.
	t.Run("PlantTimes", func(t *testing.T) {
		t0 := time.Date(2025, 1, 2, 3, 4, 5, 123456000, time.UTC) // past: deliveries are due by the database's clock
		clock := t0
		b, svc := open(t, bs, service.Config{Now: func() time.Time { return clock }})
		ctx := t.Context()
		typed, err := plantstore.NewSubscription("alice", "http://127.0.0.1:9/hooks/typed", "", t0)
		if err != nil {
			t.Fatal(err)
		}
		typed.Types = plantstore.EventTypes
		if err := b.InsertSubscription(ctx, typed, plantstore.MaxMaxSubscriptions); err != nil {
			t.Fatal(err)
		}
		createSubscription(t, svc, "alice") // untyped: creates, as NewPlant
		mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", Tag: ptr("green")})
		// Concurrent creates, which the stores write as one run.
		var wg sync.WaitGroup
		for id := int64(2); id <= 9; id++ {
			wg.Go(func() { mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: id, Name: "Ivy"}) })
		}
		wg.Wait()
		clock = t0.Add(time.Minute)
		if _, err := svc.Plants.UpdatePlant(ctx, "alice", 1, plantstore.PlantUpdate{Name: ptr("Moss")}, ""); err != nil {
			t.Fatal(err)
		}
		clock = t0.Add(2 * time.Minute)
		if err := svc.Plants.DeletePlant(ctx, "alice", 1); err != nil {
			t.Fatal(err)
		}
		t1, t2 := t0.Add(time.Minute), t0.Add(2*time.Minute)
		events, _, err := svc.Events.FindEvents(ctx, plantstore.EventFilter{Owner: "alice", Limit: 100})
		if err != nil || len(events) != 11 {
			t.Fatalf("FindEvents: %d events, %v; want 11", len(events), err)
		}
		want := func(e *plantstore.Event) (at, created, updated time.Time) {
			switch e.Type {
			case plantstore.EventPlantUpdated:
				return t1, t0, t1
			case plantstore.EventPlantDeleted:
				return t2, t0, t1 // as it was: last updated by the rename
			}
			return t0, t0, t0
		}
		for _, e := range events {
			at, created, updated := want(e)
			if !e.CreatedAt.Equal(at) || !e.PlantCreatedAt.Equal(created) || !e.PlantUpdatedAt.Equal(updated) {
				t.Errorf("%s of plant %d: at %v, plant created %v, updated %v; want %v, %v, %v", e.Type, e.PlantID,
					e.CreatedAt, e.PlantCreatedAt, e.PlantUpdatedAt, at, created, updated)
			}
		}
		tasks := claim(t, svc, time.Minute, 100)
		if len(tasks) != 9+11 {
			t.Fatalf("claimed %d deliveries, want 20 (9 untyped, 11 typed)", len(tasks))
		}
		for _, task := range tasks {
			body := string(eventjson.Body(task))
			if task.SubscriptionID != typed.ID {
				if strings.Contains(body, "_at") {
					t.Errorf("untyped body %s has times", body)
				}
				continue
			}
			_, created, updated := want(&task.Event)
			times := `"created_at":"` + created.Format(eventjson.PlantTimeFormat) + `","updated_at":"` + updated.Format(eventjson.PlantTimeFormat) + `"}}`
			if !strings.HasSuffix(body, times) {
				t.Errorf("typed body %s\ndoes not end with the plant's times %s", body, times)
			}
		}
	})

	t.Run("Prune", func(t *testing.T) {
		clock := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
		now := func() time.Time { return clock }
		_, svc := open(t, bs, service.Config{Now: now})
		ctx := t.Context()
		for i := int64(1); i <= 5; i++ {
			mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: i, Name: "x"})
		}
		clock = clock.Add(48 * time.Hour)
		mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 6, Name: "x"})
		// 24 h retention: the first five go, two at a time.
		total := 0
		for {
			n, err := svc.Events.PruneEvents(ctx, 24*time.Hour, 2)
			if err != nil {
				t.Fatal(err)
			}
			if n > 2 {
				t.Fatalf("pruned %d, limit 2", n)
			}
			total += n
			if n < 2 {
				break
			}
		}
		if total != 5 {
			t.Fatalf("pruned %d, want 5", total)
		}
		mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 7, Name: "x"})
		got, _, err := svc.Events.FindEvents(ctx, plantstore.EventFilter{Owner: "alice"})
		if err != nil || len(got) != 2 || got[0].Seq != 6 || got[1].Seq != 7 {
			t.Fatalf("after prune: %d events, %v", len(got), err)
		}
	})
}

func errOf[A, B any](_ A, _ B, err error) error { return err }
