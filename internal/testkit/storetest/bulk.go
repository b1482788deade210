package storetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/service"
)

// testImportPlants runs through the service (PlantService.ImportPlants).
func testImportPlants(t *testing.T, bs Backends) {
	t.Run("OK", func(t *testing.T) {
		c := newClock(fixedNow)
		_, svc := open(t, bs, service.Config{Now: c.Now})
		ctx := t.Context()
		createSubscription(t, svc, "alice")
		fern := mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern"})
		if n, _ := outboxStats(t, svc); n != 1 {
			t.Fatalf("%d pending deliveries after a create, want 1", n)
		}

		at := c.Add(time.Hour)
		plants := []*plantstore.Plant{
			{Owner: "alice", ID: 1, Name: "Not Fern", Tag: ptr("other")}, // exists: skipped
			{Owner: "alice", ID: 2, Name: "Ivy", Tag: ptr("climbing")},
			// CreatedAt is the service's to set.
			{Owner: "alice", ID: 3, Name: "Moss", CreatedAt: fixedNow.Add(-24 * time.Hour)},
			{Owner: "bob", ID: 1, Name: "Cactus"}, // another owner's id 1
		}
		n, err := svc.Plants.ImportPlants(ctx, plants)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := n, 3; got != want {
			t.Fatalf("ImportPlants stored %d, want %d", got, want)
		}
		wantAlice := []*plantstore.Plant{
			fern,
			{Owner: "alice", ID: 2, Name: "Ivy", Tag: ptr("climbing"), CreatedAt: at, UpdatedAt: at},
			{Owner: "alice", ID: 3, Name: "Moss", CreatedAt: at, UpdatedAt: at},
		}
		if diff := cmp.Diff(wantAlice, listAll(t, svc, "alice"), equateTime); diff != "" {
			t.Fatalf("alice's plants (-want +got):\n%s", diff)
		}
		wantBob := []*plantstore.Plant{{Owner: "bob", ID: 1, Name: "Cactus", CreatedAt: at, UpdatedAt: at}}
		if diff := cmp.Diff(wantBob, listAll(t, svc, "bob"), equateTime); diff != "" {
			t.Fatalf("bob's plants (-want +got):\n%s", diff)
		}
		// No webhook events, though alice has a subscription.
		if n, _ := outboxStats(t, svc); n != 1 {
			t.Fatalf("%d pending deliveries after an import, want 1 (the create's)", n)
		}

		// Importing the same plants again stores nothing.
		c.Add(time.Hour)
		n, err = svc.Plants.ImportPlants(ctx, plants)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := n, 0; got != want {
			t.Fatalf("second ImportPlants stored %d, want %d", got, want)
		}
		if diff := cmp.Diff(wantAlice, listAll(t, svc, "alice"), equateTime); diff != "" {
			t.Fatalf("alice's plants after a second import (-want +got):\n%s", diff)
		}
	})

	// One invalid plant stores nothing, the valid ones included.
	t.Run("ErrInvalid", func(t *testing.T) {
		for _, tt := range []struct {
			name string
			bad  plantstore.Plant
		}{
			{"EmptyName", plantstore.Plant{Owner: "alice", ID: 2, Name: ""}},
			{"NameTooLong", plantstore.Plant{Owner: "alice", ID: 2, Name: strings.Repeat("a", plantstore.MaxNameLength+1)}},
			{"TagTooLong", plantstore.Plant{Owner: "alice", ID: 2, Name: "Ivy", Tag: ptr(strings.Repeat("a", plantstore.MaxTagLength+1))}},
			{"NameNotUTF8", plantstore.Plant{Owner: "alice", ID: 2, Name: "Ivy\xff"}},
		} {
			t.Run(tt.name, func(t *testing.T) {
				svc := openServices(t, bs)
				n, err := svc.Plants.ImportPlants(t.Context(), []*plantstore.Plant{
					{Owner: "alice", ID: 1, Name: "Fern"},
					&tt.bad,
					{Owner: "bob", ID: 1, Name: "Cactus"},
				})
				checkCode(t, "ImportPlants", err, plantstore.CodeInvalidBody)
				if n != 0 {
					t.Fatalf("ImportPlants returned %d with an error, want 0", n)
				}
				for _, owner := range []string{"alice", "bob"} {
					if got := listAll(t, svc, owner); len(got) != 0 {
						t.Fatalf("%d of %s's plants stored by a failed import, want 0", len(got), owner)
					}
				}
			})
		}
	})

	t.Run("Empty", func(t *testing.T) {
		svc := openServices(t, bs)
		n, err := svc.Plants.ImportPlants(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := n, 0; got != want {
			t.Fatalf("ImportPlants(nil) = %d, want %d", got, want)
		}
	})
}

// bulkInsert calls BulkInsertPlants and fails the test unless it stored want
// rows. Plants without UpdatedAt get their CreatedAt first (setUpdatedAt).
func bulkInsert(t *testing.T, b plantstore.Backend, plants []*plantstore.Plant, want int) {
	t.Helper()
	for _, p := range plants {
		setUpdatedAt(p)
	}
	n, err := b.BulkInsertPlants(t.Context(), plants)
	if err != nil {
		t.Fatal(err)
	}
	if got := n; got != want {
		t.Fatalf("BulkInsertPlants stored %d, want %d", got, want)
	}
}

// listStore returns every plant of owner from the store, by id.
func listStore(t *testing.T, b plantstore.Backend, owner string) []*plantstore.Plant {
	t.Helper()
	var all []*plantstore.Plant
	f := plantstore.PlantFilter{Owner: owner, Limit: plantstore.MaxPageSize}
	for {
		plants, err := b.ListPlants(t.Context(), f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, plants...)
		if len(plants) < f.Limit {
			return all
		}
		f.After = plantstore.KeyOf(plants[len(plants)-1])
	}
}

// testBulkInsert calls the backend's BulkInsertPlants directly.
func testBulkInsert(t *testing.T, bs Backends) {
	t.Run("StoredAsGiven", func(t *testing.T) {
		b := bs.Open(t)
		rows := []*plantstore.Plant{
			{Owner: "alice", ID: 1, Name: "Fern", Tag: ptr("green"), CreatedAt: fixedNow.In(elsewhere), UpdatedAt: fixedNow.Add(time.Hour).In(elsewhere)},
			{Owner: "alice", ID: 2, Name: "Ivy 🌿", CreatedAt: fixedNow.Add(time.Minute), UpdatedAt: fixedNow.Add(time.Minute)},
			{Owner: "alice", ID: 3, Name: "Moss", Tag: ptr(""), CreatedAt: fixedNow.Add(-time.Hour)},
		}
		bulkInsert(t, b, rows, 3)
		if diff := cmp.Diff(rows, listStore(t, b, "alice"), equateTime); diff != "" {
			t.Fatalf("stored plants (-want +got):\n%s", diff)
		}
	})

	// Rows whose key exists are skipped, the stored row unchanged, and do
	// not count.
	t.Run("SkipsExisting", func(t *testing.T) {
		b := bs.Open(t)
		insertSubscription(t, b, "alice", fixedNow, nil)
		fern := &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", CreatedAt: fixedNow}
		mustInsert(t, b, fern)
		ivy := &plantstore.Plant{Owner: "alice", ID: 2, Name: "Ivy", CreatedAt: fixedNow.Add(time.Hour)}
		bulkInsert(t, b, []*plantstore.Plant{
			{Owner: "alice", ID: 1, Name: "Not Fern", Tag: ptr("x"), CreatedAt: fixedNow.Add(time.Hour)},
			ivy,
		}, 1)
		if diff := cmp.Diff([]*plantstore.Plant{fern, ivy}, listStore(t, b, "alice"), equateTime); diff != "" {
			t.Fatalf("stored plants (-want +got):\n%s", diff)
		}
		// Again: everything exists.
		bulkInsert(t, b, []*plantstore.Plant{fern, ivy}, 0)
		if n, _ := storeOutboxStats(t, b); n != 1 {
			t.Fatalf("%d pending deliveries, want 1 (InsertPlant's)", n)
		}
	})

	t.Run("NoOutbox", func(t *testing.T) {
		b := bs.Open(t)
		insertSubscription(t, b, "alice", fixedNow, nil)
		insertSubscription(t, b, "bob", fixedNow, nil)
		var rows []*plantstore.Plant
		for id := int64(1); id <= 5; id++ {
			rows = append(rows, &plantstore.Plant{Owner: "alice", ID: id, Name: "x", CreatedAt: fixedNow})
		}
		rows = append(rows, &plantstore.Plant{Owner: "bob", ID: 1, Name: "y", CreatedAt: fixedNow})
		bulkInsert(t, b, rows, 6)
		if n, oldest := storeOutboxStats(t, b); n != 0 || !oldest.IsZero() {
			t.Fatalf("OutboxStats after a bulk insert = %d, %v; want 0, zero time", n, oldest)
		}
		tasks, err := claimStore(t.Context(), b, plantstore.Claim{Lease: time.Minute, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(tasks) != 0 {
			t.Fatalf("claimed %d deliveries after a bulk insert, want 0", len(tasks))
		}
	})

	// Keys are per owner: another owner's id is no reason to skip.
	t.Run("PerOwner", func(t *testing.T) {
		b := bs.Open(t)
		fern := &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", CreatedAt: fixedNow}
		mustInsert(t, b, fern)
		cactus := &plantstore.Plant{Owner: "bob", ID: 1, Name: "Cactus", CreatedAt: fixedNow.Add(time.Second)}
		bulkInsert(t, b, []*plantstore.Plant{
			cactus,
			{Owner: "alice", ID: 1, Name: "Not Fern", CreatedAt: fixedNow.Add(time.Second)},
		}, 1)
		if diff := cmp.Diff(fern, findPlant(t, b, "alice", 1), equateTime); diff != "" {
			t.Fatalf("alice's plant (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(cactus, findPlant(t, b, "bob", 1), equateTime); diff != "" {
			t.Fatalf("bob's plant (-want +got):\n%s", diff)
		}
		// Both owners' id 2 in one call.
		bulkInsert(t, b, []*plantstore.Plant{
			{Owner: "alice", ID: 2, Name: "Ivy", CreatedAt: fixedNow},
			{Owner: "bob", ID: 2, Name: "Aloe", CreatedAt: fixedNow},
		}, 2)
		for _, owner := range []string{"alice", "bob"} {
			if got, want := len(listStore(t, b, owner)), 2; got != want {
				t.Fatalf("%s has %d plants, want %d", owner, got, want)
			}
		}
	})

	// A load of about 2000 rows in one call.
	t.Run("Large", func(t *testing.T) {
		const n = 2000
		b := bs.Open(t)
		row := func(id int64) *plantstore.Plant {
			p := &plantstore.Plant{Owner: "alice", ID: id, Name: fmt.Sprintf("plant %d", id), CreatedAt: fixedNow.Add(time.Duration(id) * time.Millisecond)}
			if id%3 == 0 {
				p.Tag = ptr(fmt.Sprintf("tag %d", id%7))
			}
			return p
		}
		var rows []*plantstore.Plant
		for id := range int64(n) {
			rows = append(rows, row(id))
		}
		bulkInsert(t, b, rows, n)
		if diff := cmp.Diff(rows, listStore(t, b, "alice"), equateTime); diff != "" {
			t.Fatalf("stored plants (-want +got):\n%s", diff)
		}
		// 1500..2499: 1500 exist, 500 are new.
		rows = rows[:0]
		for id := int64(1500); id < n+500; id++ {
			rows = append(rows, row(id))
		}
		bulkInsert(t, b, rows, 500)
		if got, want := len(listStore(t, b, "alice")), n+500; got != want {
			t.Fatalf("%d plants stored, want %d", got, want)
		}
	})

	t.Run("Empty", func(t *testing.T) {
		b := bs.Open(t)
		bulkInsert(t, b, nil, 0)
		bulkInsert(t, b, []*plantstore.Plant{}, 0)
	})
}
