package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
)

// The cases of this file call the backend's PlantStore directly.

// newEvent returns the webhook event of p at at, as the service makes it.
func newEvent(t *testing.T, p *plantstore.Plant, at time.Time) *plantstore.Event {
	t.Helper()
	id, err := plantstore.NewEventID()
	if err != nil {
		t.Fatal(err)
	}
	return &plantstore.Event{Owner: p.Owner, ID: id, Type: plantstore.EventPlantCreated, PlantID: p.ID, Name: p.Name, Tag: p.Tag, CreatedAt: at}
}

// insertPlant is b.InsertPlant, its result as values. A p without
// UpdatedAt gets its CreatedAt first, as the service makes a new plant.
func insertPlant(ctx context.Context, b plantstore.Backend, p *plantstore.Plant, ev *plantstore.Event) (existing *plantstore.Plant, deliveries int, err error) {
	setUpdatedAt(p)
	res, err := b.InsertPlant(ctx, p, ev)
	return res.Existing, res.Deliveries, err
}

// setUpdatedAt sets p.UpdatedAt to p.CreatedAt if it has none: a new
// plant's, as the service makes it.
func setUpdatedAt(p *plantstore.Plant) {
	if p.UpdatedAt.IsZero() {
		p.UpdatedAt = p.CreatedAt
	}
}

// errOnly returns the error of a call that returns a result too.
func errOnly[T any](_ T, err error) error { return err }

// mustInsert inserts p with its event at p.CreatedAt and fails the test
// unless it was stored. It returns the event.
func mustInsert(t *testing.T, b plantstore.Backend, p *plantstore.Plant) *plantstore.Event {
	t.Helper()
	ev := newEvent(t, p, p.CreatedAt)
	existing, _, err := insertPlant(t.Context(), b, p, ev)
	if err != nil {
		t.Fatal(err)
	}
	if existing != nil {
		t.Fatalf("InsertPlant(%+v) found %+v, want it stored", p, existing)
	}
	return ev
}

// findPlant returns the owner's plant from the store.
func findPlant(t *testing.T, b plantstore.Backend, owner string, id int64) *plantstore.Plant {
	t.Helper()
	p, err := b.FindPlant(t.Context(), owner, id)
	if err != nil {
		t.Fatalf("FindPlant(%s, %d): %v", owner, id, err)
	}
	return p
}

// storeOutboxStats returns the store's count of pending deliveries and the
// creation time of the oldest.
func storeOutboxStats(t *testing.T, b plantstore.Backend) (int, time.Time) {
	t.Helper()
	n, oldest, err := b.OutboxStats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return n, oldest
}

func testPlantStore(t *testing.T, bs Backends) {
	// InsertPlant stores the plant and its event's outbox rows as given.
	t.Run("InsertPlant", func(t *testing.T) {
		b := bs.Open(t)
		ctx := t.Context()
		sub := insertSubscription(t, b, "alice", fixedNow, nil)
		// UpdatedAt is stored as given (a plant restored from a backup
		// keeps its own); the event's time differs from the plant's, to
		// tell them apart.
		p := &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", Tag: ptr("green"), CreatedAt: fixedNow.In(elsewhere), UpdatedAt: fixedNow.Add(time.Minute).In(elsewhere)}
		ev := newEvent(t, p, fixedNow.Add(time.Second).In(elsewhere))
		existing, deliveries, err := insertPlant(ctx, b, p, ev)
		if err != nil {
			t.Fatal(err)
		}
		if existing != nil {
			t.Fatalf("InsertPlant of a new key returned %+v, want nil", existing)
		}
		if got, want := deliveries, 1; got != want {
			t.Fatalf("InsertPlant wrote %d deliveries, want %d", got, want)
		}
		if diff := cmp.Diff(p, findPlant(t, b, "alice", 1), equateTime); diff != "" {
			t.Fatalf("stored plant (-want +got):\n%s", diff)
		}
		n, oldest := storeOutboxStats(t, b)
		if got, want := n, 1; got != want {
			t.Fatalf("%d pending deliveries, want %d", got, want)
		}
		checkTime(t, "oldest pending", oldest, ev.CreatedAt)
		tasks, err := claimStore(ctx, b, plantstore.Claim{Lease: time.Minute, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := len(tasks), 1; got != want {
			t.Fatalf("claimed %d deliveries, want %d", got, want)
		}
		want := &plantstore.Task{MessageID: ev.MessageID(), SubscriptionID: sub.ID, Owner: "alice",
			Event: *ev, CreatedAt: ev.CreatedAt, Subscription: sub}
		// The event's plant times are the plant's, not the event's.
		want.Event.Seq, want.Event.PlantCreatedAt, want.Event.PlantUpdatedAt = 1, p.CreatedAt, p.UpdatedAt
		if diff := cmp.Diff(want, tasks[0], equateTime, ignoreTaskDispatch); diff != "" {
			t.Fatalf("delivery (-want +got):\n%s", diff)
		}

		// bob has no subscription: his plant gets no delivery.
		cactus := &plantstore.Plant{Owner: "bob", ID: 1, Name: "Cactus", CreatedAt: fixedNow}
		if _, deliveries, err := insertPlant(ctx, b, cactus, newEvent(t, cactus, fixedNow)); err != nil || deliveries != 0 {
			t.Fatalf("bob's InsertPlant = %d deliveries, %v; want 0, nil", deliveries, err)
		}
		if n, _ := storeOutboxStats(t, b); n != 1 {
			t.Fatalf("%d pending deliveries after bob's insert, want 1", n)
		}
	})

	// When the key is taken, InsertPlant returns the stored row unchanged,
	// whatever the content, and writes nothing.
	t.Run("KeyTaken", func(t *testing.T) {
		b := bs.Open(t)
		ctx := t.Context()
		insertSubscription(t, b, "alice", fixedNow, nil)
		first := &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", CreatedAt: fixedNow}
		ev := mustInsert(t, b, first)
		for _, p := range []*plantstore.Plant{
			{Owner: "alice", ID: 1, Name: "Fern", CreatedAt: fixedNow.Add(time.Hour)},
			{Owner: "alice", ID: 1, Name: "Moss", Tag: ptr("soft"), CreatedAt: fixedNow.Add(2 * time.Hour)},
		} {
			existing, deliveries, err := insertPlant(ctx, b, p, newEvent(t, p, p.CreatedAt))
			if err != nil {
				t.Fatal(err)
			}
			if deliveries != 0 {
				t.Fatalf("InsertPlant of a taken key wrote %d deliveries", deliveries)
			}
			if diff := cmp.Diff(first, existing, equateTime); diff != "" {
				t.Fatalf("InsertPlant(%+v) returned (-want +got):\n%s", p, diff)
			}
		}
		if diff := cmp.Diff(first, findPlant(t, b, "alice", 1), equateTime); diff != "" {
			t.Fatalf("stored plant (-want +got):\n%s", diff)
		}
		n, oldest := storeOutboxStats(t, b)
		if got, want := n, 1; got != want {
			t.Fatalf("%d pending deliveries, want %d (only the first insert's)", got, want)
		}
		checkTime(t, "oldest pending", oldest, ev.CreatedAt)
		tasks, err := claimStore(ctx, b, plantstore.Claim{Lease: time.Minute, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(tasks) != 1 || tasks[0].MessageID != ev.MessageID() {
			t.Fatalf("claimed %d deliveries, want the first insert's one (%s)", len(tasks), ev.MessageID())
		}
	})

	t.Run("SameIDTwoOwners", func(t *testing.T) {
		b := bs.Open(t)
		alice := &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", CreatedAt: fixedNow}
		bob := &plantstore.Plant{Owner: "bob", ID: 1, Name: "Cactus", Tag: ptr("spiky"), CreatedAt: fixedNow.Add(time.Second)}
		mustInsert(t, b, alice)
		mustInsert(t, b, bob)
		for _, want := range []*plantstore.Plant{alice, bob} {
			if diff := cmp.Diff(want, findPlant(t, b, want.Owner, 1), equateTime); diff != "" {
				t.Fatalf("%s's plant (-want +got):\n%s", want.Owner, diff)
			}
		}
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		b := bs.Open(t)
		ctx := t.Context()
		fern := &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", CreatedAt: fixedNow}
		mustInsert(t, b, fern)
		for _, tt := range []struct {
			name  string
			owner string
			id    int64
		}{
			{"UnknownID", "alice", 2},
			{"OtherOwner", "bob", 1},
			{"OwnerCase", "Alice", 1},
		} {
			t.Run(tt.name, func(t *testing.T) {
				p, err := b.FindPlant(ctx, tt.owner, tt.id)
				checkIs(t, "FindPlant", err, plantstore.ErrNotFound)
				if p != nil {
					t.Fatalf("FindPlant returned %+v with an error", p)
				}
				checkIs(t, "DeletePlant", errOnly(b.DeletePlant(ctx, tt.owner, tt.id, nil)), plantstore.ErrNotFound)
			})
		}
		// alice's plant is untouched.
		if diff := cmp.Diff(fern, findPlant(t, b, "alice", 1), equateTime); diff != "" {
			t.Fatalf("alice's plant (-want +got):\n%s", diff)
		}
	})

	t.Run("DeletePlant", func(t *testing.T) {
		b := bs.Open(t)
		ctx := t.Context()
		mustInsert(t, b, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", CreatedAt: fixedNow})
		mustInsert(t, b, &plantstore.Plant{Owner: "bob", ID: 1, Name: "Cactus", CreatedAt: fixedNow})
		if err := errOnly(b.DeletePlant(ctx, "alice", 1, nil)); err != nil {
			t.Fatal(err)
		}
		_, err := b.FindPlant(ctx, "alice", 1)
		checkIs(t, "FindPlant after delete", err, plantstore.ErrNotFound)
		checkIs(t, "second DeletePlant", errOnly(b.DeletePlant(ctx, "alice", 1, nil)), plantstore.ErrNotFound)
		findPlant(t, b, "bob", 1)
		// The key can be used again.
		mustInsert(t, b, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Palm", CreatedAt: fixedNow.Add(time.Minute)})
		if got, want := findPlant(t, b, "alice", 1).Name, "Palm"; got != want {
			t.Fatalf("Name = %q, want %q", got, want)
		}
	})

	// ListPlants returns at most f.Limit rows: the service asks for one
	// more than the page (up to MaxPageSize+1) to learn whether more follow.
	t.Run("ListPlants", func(t *testing.T) {
		b := bs.Open(t)
		for id := int64(1); id <= 10; id++ {
			p := &plantstore.Plant{Owner: "alice", ID: id, Name: fmt.Sprintf("A%d", id), CreatedAt: fixedNow.Add(time.Duration(id) * time.Second)}
			if id%2 == 0 {
				p.Tag = ptr("even")
			}
			mustInsert(t, b, p)
		}
		for id := int64(1); id <= 3; id++ {
			mustInsert(t, b, &plantstore.Plant{Owner: "bob", ID: id, Name: fmt.Sprintf("B%d", id), CreatedAt: fixedNow})
		}
		for _, tt := range []struct {
			name    string
			filter  plantstore.PlantFilter
			wantIDs []int64
		}{
			{"LimitOne", plantstore.PlantFilter{Owner: "alice", Limit: 1}, []int64{1}},
			{"LimitThree", plantstore.PlantFilter{Owner: "alice", Limit: 3}, []int64{1, 2, 3}},
			{"LimitAll", plantstore.PlantFilter{Owner: "alice", Limit: 10}, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
			{"LimitOver", plantstore.PlantFilter{Owner: "alice", Limit: 11}, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
			{"LimitMaxPageSizePlusOne", plantstore.PlantFilter{Owner: "alice", Limit: plantstore.MaxPageSize + 1}, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
			{"AfterLimit", plantstore.PlantFilter{Owner: "alice", After: &plantstore.PlantKey{ID: 2}, Limit: 3}, []int64{3, 4, 5}},
			{"AfterShort", plantstore.PlantFilter{Owner: "alice", After: &plantstore.PlantKey{ID: 8}, Limit: 5}, []int64{9, 10}},
			{"TagLimit", plantstore.PlantFilter{Owner: "alice", Tags: []string{"even"}, Limit: 2}, []int64{2, 4}},
			{"TagAfterLimit", plantstore.PlantFilter{Owner: "alice", Tags: []string{"even"}, After: &plantstore.PlantKey{ID: 4}, Limit: 2}, []int64{6, 8}},
			{"OtherOwner", plantstore.PlantFilter{Owner: "bob", Limit: 2}, []int64{1, 2}},
			{"UnknownOwner", plantstore.PlantFilter{Owner: "carol", Limit: 2}, []int64{}},
		} {
			t.Run(tt.name, func(t *testing.T) {
				plants, err := b.ListPlants(t.Context(), tt.filter)
				if err != nil {
					t.Fatal(err)
				}
				if len(plants) > tt.filter.Limit {
					t.Fatalf("%d plants, more than the limit %d", len(plants), tt.filter.Limit)
				}
				ids := []int64{}
				for _, p := range plants {
					if got, want := p.Owner, tt.filter.Owner; got != want {
						t.Fatalf("plant %d has Owner %q, want %q", p.ID, got, want)
					}
					ids = append(ids, p.ID)
				}
				if diff := cmp.Diff(tt.wantIDs, ids); diff != "" {
					t.Fatalf("ids (-want +got):\n%s", diff)
				}
			})
		}
		t.Run("Content", func(t *testing.T) {
			plants, err := b.ListPlants(t.Context(), plantstore.PlantFilter{Owner: "alice", After: &plantstore.PlantKey{ID: 4}, Limit: 2})
			if err != nil {
				t.Fatal(err)
			}
			want := []*plantstore.Plant{
				{Owner: "alice", ID: 5, Name: "A5", CreatedAt: fixedNow.Add(5 * time.Second), UpdatedAt: fixedNow.Add(5 * time.Second)},
				{Owner: "alice", ID: 6, Name: "A6", Tag: ptr("even"), CreatedAt: fixedNow.Add(6 * time.Second), UpdatedAt: fixedNow.Add(6 * time.Second)},
			}
			if diff := cmp.Diff(want, plants, equateTime); diff != "" {
				t.Fatalf("plants (-want +got):\n%s", diff)
			}
		})
	})
}
