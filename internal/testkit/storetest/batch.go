package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/service"
)

// testCreatePlants runs batches through the service
// (PlantService.CreatePlants), which stores them with the backend's
// InsertPlants.
func testCreatePlants(t *testing.T, bs Backends) {
	// A batch stores its new plants with their events and deliveries, in
	// the batch's order, and answers a replayed item with the stored plant.
	t.Run("OK", func(t *testing.T) {
		c := newClock(fixedNow)
		_, svc := open(t, bs, service.Config{Now: c.Now})
		ctx := t.Context()
		createSubscription(t, svc, "alice")
		fern := mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", Tag: ptr("green")})
		at := c.Add(time.Hour)
		got, err := svc.Plants.CreatePlants(ctx, []*plantstore.Plant{
			{Owner: "alice", ID: 3, Name: "Moss"},
			{Owner: "alice", ID: 1, Name: "Fern", Tag: ptr("green")}, // a replay
			{Owner: "alice", ID: 2, Name: "Ivy", Tag: ptr("climbing")},
		})
		if err != nil {
			t.Fatal(err)
		}
		moss := &plantstore.Plant{Owner: "alice", ID: 3, Name: "Moss", CreatedAt: at, UpdatedAt: at}
		ivy := &plantstore.Plant{Owner: "alice", ID: 2, Name: "Ivy", Tag: ptr("climbing"), CreatedAt: at, UpdatedAt: at}
		if diff := cmp.Diff([]*plantstore.Plant{moss, fern, ivy}, got, equateTime); diff != "" {
			t.Fatalf("CreatePlants answer (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]*plantstore.Plant{fern, ivy, moss}, listAll(t, svc, "alice"), equateTime); diff != "" {
			t.Fatalf("alice's plants (-want +got):\n%s", diff)
		}
		// One event and one delivery each for the two created, in id
		// order; none for the replay.
		evs, _, err := svc.Events.FindEvents(ctx, plantstore.EventFilter{Owner: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		var plants []int64
		for i, e := range evs {
			if e.Seq != int64(i+1) || e.Type != plantstore.EventPlantCreated {
				t.Errorf("event %d: seq %d type %s, want seq %d %s", i, e.Seq, e.Type, i+1, plantstore.EventPlantCreated)
			}
			plants = append(plants, e.PlantID)
		}
		if diff := cmp.Diff([]int64{1, 2, 3}, plants); diff != "" {
			t.Fatalf("events' plants (-want +got):\n%s", diff)
		}
		if n, _ := outboxStats(t, svc); n != 3 {
			t.Fatalf("%d pending deliveries, want 3", n)
		}
	})

	// A batch that fails stores nothing: no plant, no event, no delivery.
	for _, tt := range []struct {
		name   string
		plants []*plantstore.Plant
		code   int32
		index  int
	}{
		{"Conflict", []*plantstore.Plant{{ID: 10, Name: "New"}, {ID: 11, Name: "New too"}, {ID: 1, Name: "Not Fern"}}, plantstore.CodeConflict, 2},
		{"ConflictTag", []*plantstore.Plant{{ID: 10, Name: "New"}, {ID: 1, Name: "Fern", Tag: ptr("other")}}, plantstore.CodeConflict, 1},
		{"Invalid", []*plantstore.Plant{{ID: 10, Name: "New"}, {ID: 11, Name: ""}}, plantstore.CodeInvalidBody, 1},
		{"SameID", []*plantstore.Plant{{ID: 10, Name: "New"}, {ID: 11, Name: "B"}, {ID: 10, Name: "New"}}, plantstore.CodeInvalidBody, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, svc := open(t, bs, service.Config{})
			ctx := t.Context()
			createSubscription(t, svc, "alice")
			fern := mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", Tag: ptr("green")})
			for _, p := range tt.plants {
				p.Owner = "alice"
			}
			got, err := svc.Plants.CreatePlants(ctx, tt.plants)
			var e *plantstore.Error
			if !errors.As(err, &e) || e.Code != tt.code || e.Index == nil || *e.Index != tt.index {
				t.Fatalf("CreatePlants = %v, %v; want code %d about item %d", got, err, tt.code, tt.index)
			}
			if want := fmt.Sprintf("plants[%d]: ", tt.index); len(e.Message) < len(want) || e.Message[:len(want)] != want {
				t.Errorf("message %q does not start with %q", e.Message, want)
			}
			if diff := cmp.Diff([]*plantstore.Plant{fern}, listAll(t, svc, "alice"), equateTime); diff != "" {
				t.Fatalf("alice's plants (-want +got):\n%s", diff)
			}
			if evs, _, err := svc.Events.FindEvents(ctx, plantstore.EventFilter{Owner: "alice"}); err != nil || len(evs) != 1 {
				t.Fatalf("FindEvents = %d events, %v; want fern's alone", len(evs), err)
			}
			if n, _ := outboxStats(t, svc); n != 1 {
				t.Fatalf("%d pending deliveries, want fern's 1", n)
			}
		})
	}

	t.Run("Empty", func(t *testing.T) {
		_, svc := open(t, bs, service.Config{})
		if _, err := svc.Plants.CreatePlants(t.Context(), nil); plantstore.ErrorCode(err) != plantstore.CodeInvalidBody {
			t.Fatalf("CreatePlants(nil) = %v, want code %d", err, plantstore.CodeInvalidBody)
		}
	})

	// A batch larger than the stores' statements (chunks of up to 256
	// rows on SQLite) is still one transaction, its events numbered in id
	// order whatever the batch's.
	t.Run("Large", func(t *testing.T) {
		_, svc := open(t, bs, service.Config{})
		ctx := t.Context()
		const n = 1000
		plants := make([]*plantstore.Plant, n)
		for i := range plants {
			plants[i] = &plantstore.Plant{Owner: "alice", ID: int64(n - i), Name: fmt.Sprint("plant ", n-i)}
		}
		got, err := svc.Plants.CreatePlants(ctx, plants)
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range got {
			if p.ID != int64(n-i) || p.Name != fmt.Sprint("plant ", n-i) {
				t.Fatalf("answer %d is plant %d %q, want %d", i, p.ID, p.Name, n-i)
			}
		}
		var seqs, ids []int64
		for after := int64(0); ; {
			evs, more, err := svc.Events.FindEvents(ctx, plantstore.EventFilter{Owner: "alice", After: after, Limit: plantstore.MaxPageSize})
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range evs {
				seqs, ids, after = append(seqs, e.Seq), append(ids, e.PlantID), e.Seq
			}
			if !more {
				break
			}
		}
		if len(seqs) != n {
			t.Fatalf("%d events, want %d", len(seqs), n)
		}
		for i := range seqs {
			if seqs[i] != int64(i+1) || ids[i] != int64(i+1) {
				t.Fatalf("event %d: seq %d plant %d, want seq %d plant %d", i, seqs[i], ids[i], i+1, i+1)
			}
		}
	})

	// Batches that fail share their transactions with the creates queued
	// beside them (the group commit) and leave those alone: every single
	// create is stored, no plant of a failing batch is.
	t.Run("ConflictAmongOthers", func(t *testing.T) {
		_, svc := open(t, bs, service.Config{})
		ctx := t.Context()
		mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern"})
		const singles, batches = 24, 6
		var wg sync.WaitGroup
		errs := make(chan error, singles+batches)
		for i := range singles {
			wg.Go(func() {
				_, created, err := svc.Plants.CreatePlant(ctx, &plantstore.Plant{Owner: "alice", ID: int64(100 + i), Name: "single"})
				if err == nil && !created {
					err = fmt.Errorf("single %d: not created", i)
				}
				errs <- err
			})
		}
		for i := range batches {
			wg.Go(func() {
				_, err := svc.Plants.CreatePlants(ctx, []*plantstore.Plant{
					{Owner: "alice", ID: int64(200 + i), Name: "batch"},
					{Owner: "alice", ID: 1, Name: "Not Fern"},
				})
				if plantstore.ErrorCode(err) != plantstore.CodeConflict {
					err = fmt.Errorf("batch %d: %v, want a conflict", i, err)
				} else {
					err = nil
				}
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
		got := listAll(t, svc, "alice")
		if len(got) != 1+singles {
			t.Fatalf("alice has %d plants, want %d", len(got), 1+singles)
		}
		for _, p := range got[1:] {
			if p.Name != "single" {
				t.Fatalf("plant %d %q stored, want only the single creates", p.ID, p.Name)
			}
		}
	})
}
