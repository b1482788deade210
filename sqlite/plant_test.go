package sqlite_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/sqlite"
)

func ptr[T any](v T) *T { return &v }

// mustCreate stores p and fails the test unless it was newly created.
func mustCreate(t *testing.T, db *sqlite.DB, p *plantstore.Plant) *plantstore.Plant {
	t.Helper()
	stored, created, err := db.CreatePlant(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if !created {
		t.Fatalf("CreatePlant(%+v): created = false, want true", p)
	}
	return stored
}

func TestCreatePlant(t *testing.T) {
	ctx := context.Background()

	t.Run("OK", func(t *testing.T) {
		db := openDB(t)
		stored, created, err := db.CreatePlant(ctx, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", Tag: ptr("green")})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := created, true; got != want {
			t.Fatalf("created = %v, want %v", got, want)
		}
		want := &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", Tag: ptr("green"), CreatedAt: fixedNow}
		if diff := cmp.Diff(want, stored); diff != "" {
			t.Fatalf("returned plant (-want +got):\n%s", diff)
		}
		got, err := db.FindPlantByID(ctx, "alice", 1)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("stored plant (-want +got):\n%s", diff)
		}
	})

	t.Run("NoTag", func(t *testing.T) {
		db := openDB(t)
		mustCreate(t, db, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern"})
		got, err := db.FindPlantByID(ctx, "alice", 1)
		if err != nil {
			t.Fatal(err)
		}
		if got.Tag != nil {
			t.Fatalf("Tag = %q, want nil", *got.Tag)
		}
	})

	t.Run("EmptyTagIsNotNoTag", func(t *testing.T) {
		db := openDB(t)
		mustCreate(t, db, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", Tag: ptr("")})
		got, err := db.FindPlantByID(ctx, "alice", 1)
		if err != nil {
			t.Fatal(err)
		}
		if got.Tag == nil || *got.Tag != "" {
			t.Fatalf("Tag = %v, want pointer to empty string", got.Tag)
		}
	})

	t.Run("Extremes", func(t *testing.T) {
		db := openDB(t)
		for _, id := range []int64{-1 << 63, -1, 0, 1<<63 - 1} {
			name := fmt.Sprintf("plant %d 🌿 é", id)
			mustCreate(t, db, &plantstore.Plant{Owner: "alice", ID: id, Name: name})
			got, err := db.FindPlantByID(ctx, "alice", id)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := got.Name, name; got != want {
				t.Fatalf("id %d: Name = %q, want %q", id, got, want)
			}
		}
	})

	t.Run("IdempotentReplay", func(t *testing.T) {
		for _, tt := range []struct {
			name string
			tag  *string
		}{
			{"NoTag", nil},
			{"Tag", ptr("green")},
			{"EmptyTag", ptr("")},
		} {
			t.Run(tt.name, func(t *testing.T) {
				db := openDB(t)
				first := mustCreate(t, db, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", Tag: tt.tag})
				stored, created, err := db.CreatePlant(ctx, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", Tag: tt.tag})
				if err != nil {
					t.Fatal(err)
				}
				if got, want := created, false; got != want {
					t.Fatalf("created = %v, want %v", got, want)
				}
				if diff := cmp.Diff(first, stored); diff != "" {
					t.Fatalf("replay returned (-want +got):\n%s", diff)
				}
				plants, _, err := db.FindPlants(ctx, plantstore.PlantFilter{Owner: "alice", Limit: 10})
				if err != nil {
					t.Fatal(err)
				}
				if got, want := len(plants), 1; got != want {
					t.Fatalf("%d plants stored, want %d", got, want)
				}
			})
		}
	})

	for _, tt := range []struct {
		name          string
		stored, retry plantstore.Plant
	}{
		{"ErrConflictName", plantstore.Plant{ID: 1, Name: "Fern"}, plantstore.Plant{ID: 1, Name: "Cactus"}},
		{"ErrConflictNameCase", plantstore.Plant{ID: 1, Name: "Fern"}, plantstore.Plant{ID: 1, Name: "fern"}},
		{"ErrConflictTagAdded", plantstore.Plant{ID: 1, Name: "Fern"}, plantstore.Plant{ID: 1, Name: "Fern", Tag: ptr("green")}},
		{"ErrConflictEmptyTagAdded", plantstore.Plant{ID: 1, Name: "Fern"}, plantstore.Plant{ID: 1, Name: "Fern", Tag: ptr("")}},
		{"ErrConflictTagRemoved", plantstore.Plant{ID: 1, Name: "Fern", Tag: ptr("green")}, plantstore.Plant{ID: 1, Name: "Fern"}},
		{"ErrConflictTagChanged", plantstore.Plant{ID: 1, Name: "Fern", Tag: ptr("green")}, plantstore.Plant{ID: 1, Name: "Fern", Tag: ptr("red")}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			db := openDB(t)
			tt.stored.Owner, tt.retry.Owner = "alice", "alice"
			first := mustCreate(t, db, &tt.stored)
			stored, created, err := db.CreatePlant(ctx, &tt.retry)
			if got, want := plantstore.ErrorCode(err), plantstore.CodeConflict; got != want {
				t.Fatalf("ErrorCode(%v) = %d, want %d", err, got, want)
			}
			if stored != nil || created {
				t.Fatalf("conflict returned plant %+v, created %v", stored, created)
			}
			got, err := db.FindPlantByID(ctx, "alice", 1)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(first, got); diff != "" {
				t.Fatalf("stored plant changed by a conflict (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("SameIDTwoOwners", func(t *testing.T) {
		db := openDB(t)
		a := mustCreate(t, db, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern"})
		b := mustCreate(t, db, &plantstore.Plant{Owner: "bob", ID: 1, Name: "Cactus", Tag: ptr("spiky")})
		for _, want := range []*plantstore.Plant{a, b} {
			got, err := db.FindPlantByID(ctx, want.Owner, 1)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("%s's plant (-want +got):\n%s", want.Owner, diff)
			}
		}
	})
}

func TestCreatePlantConcurrent(t *testing.T) {
	ctx := context.Background()
	const n = 16

	t.Run("Identical", func(t *testing.T) {
		db := openDB(t)
		type result struct {
			stored  *plantstore.Plant
			created bool
			err     error
		}
		results := make([]result, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				p, created, err := db.CreatePlant(ctx, &plantstore.Plant{Owner: "alice", ID: 42, Name: "Fern", Tag: ptr("green")})
				results[i] = result{p, created, err}
			})
		}
		close(start)
		wg.Wait()

		createdCount := 0
		for i, r := range results {
			if r.err != nil {
				t.Fatalf("create %d: %v", i, r.err)
			}
			if r.created {
				createdCount++
			}
			if got, want := r.stored.Name, "Fern"; got != want {
				t.Fatalf("create %d: Name = %q, want %q", i, got, want)
			}
		}
		if got, want := createdCount, 1; got != want {
			t.Fatalf("%d creates reported created=true, want %d", got, want)
		}
		plants, _, err := db.FindPlants(ctx, plantstore.PlantFilter{Owner: "alice", Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := len(plants), 1; got != want {
			t.Fatalf("%d rows, want %d", got, want)
		}
	})

	t.Run("DifferentNames", func(t *testing.T) {
		db := openDB(t)
		errs := make([]error, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				_, _, errs[i] = db.CreatePlant(ctx, &plantstore.Plant{Owner: "alice", ID: 42, Name: fmt.Sprintf("Fern %d", i)})
			})
		}
		close(start)
		wg.Wait()

		ok, conflicts, winner := 0, 0, -1
		for i, err := range errs {
			switch plantstore.ErrorCode(err) {
			case 0:
				ok++
				winner = i
			case plantstore.CodeConflict:
				conflicts++
			default:
				t.Fatalf("create %d: unexpected error %v", i, err)
			}
		}
		if got, want := ok, 1; got != want {
			t.Fatalf("%d creates succeeded, want %d", got, want)
		}
		if got, want := conflicts, n-1; got != want {
			t.Fatalf("%d conflicts, want %d", got, want)
		}
		got, err := db.FindPlantByID(ctx, "alice", 42)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := got.Name, fmt.Sprintf("Fern %d", winner); got != want {
			t.Fatalf("stored Name = %q, want the winner's %q", got, want)
		}
	})
}

func TestFindPlantByID(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	mustCreate(t, db, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern"})

	t.Run("OK", func(t *testing.T) {
		got, err := db.FindPlantByID(ctx, "alice", 1)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := got.Name, "Fern"; got != want {
			t.Fatalf("Name = %q, want %q", got, want)
		}
	})

	for _, tt := range []struct {
		name  string
		owner string
		id    int64
	}{
		{"ErrNotFound", "alice", 2},
		{"ErrOtherOwner", "bob", 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := db.FindPlantByID(ctx, tt.owner, tt.id)
			if got, want := plantstore.ErrorCode(err), plantstore.CodeNotFound; got != want {
				t.Fatalf("ErrorCode(%v) = %d, want %d", err, got, want)
			}
			if p != nil {
				t.Fatalf("got plant %+v with an error", p)
			}
		})
	}
}

func TestFindPlants(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	// alice has ids 1..10, inserted out of order; even ids are tagged "even",
	// id 5 is tagged "five". bob has ids 1..3.
	for _, id := range []int64{7, 3, 10, 1, 9, 5, 2, 8, 4, 6} {
		p := &plantstore.Plant{Owner: "alice", ID: id, Name: fmt.Sprintf("A%d", id)}
		if id%2 == 0 {
			p.Tag = ptr("even")
		} else if id == 5 {
			p.Tag = ptr("five")
		}
		mustCreate(t, db, p)
	}
	for id := int64(1); id <= 3; id++ {
		mustCreate(t, db, &plantstore.Plant{Owner: "bob", ID: id, Name: fmt.Sprintf("B%d", id)})
	}

	for _, tt := range []struct {
		name     string
		filter   plantstore.PlantFilter
		wantIDs  []int64
		wantMore bool
	}{
		{"All", plantstore.PlantFilter{Owner: "alice", Limit: 100}, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, false},
		{"Limit", plantstore.PlantFilter{Owner: "alice", Limit: 3}, []int64{1, 2, 3}, true},
		{"LimitOne", plantstore.PlantFilter{Owner: "alice", Limit: 1}, []int64{1}, true},
		{"FullPageNothingFollows", plantstore.PlantFilter{Owner: "alice", Limit: 10}, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, false},
		{"OneFollows", plantstore.PlantFilter{Owner: "alice", Limit: 9}, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9}, true},
		{"AfterExclusive", plantstore.PlantFilter{Owner: "alice", After: ptr(int64(3)), Limit: 3}, []int64{4, 5, 6}, true},
		{"AfterLastPageFull", plantstore.PlantFilter{Owner: "alice", After: ptr(int64(7)), Limit: 3}, []int64{8, 9, 10}, false},
		{"AfterMissingID", plantstore.PlantFilter{Owner: "alice", After: ptr(int64(-100)), Limit: 2}, []int64{1, 2}, true},
		{"AfterLast", plantstore.PlantFilter{Owner: "alice", After: ptr(int64(10)), Limit: 3}, []int64{}, false},
		{"Tag", plantstore.PlantFilter{Owner: "alice", Tag: ptr("even"), Limit: 100}, []int64{2, 4, 6, 8, 10}, false},
		{"TagLimit", plantstore.PlantFilter{Owner: "alice", Tag: ptr("even"), Limit: 2}, []int64{2, 4}, true},
		{"TagAfter", plantstore.PlantFilter{Owner: "alice", Tag: ptr("even"), After: ptr(int64(4)), Limit: 2}, []int64{6, 8}, true},
		{"TagAfterFullLastPage", plantstore.PlantFilter{Owner: "alice", Tag: ptr("even"), After: ptr(int64(6)), Limit: 2}, []int64{8, 10}, false},
		{"TagSingle", plantstore.PlantFilter{Owner: "alice", Tag: ptr("five"), Limit: 1}, []int64{5}, false},
		{"TagUnknown", plantstore.PlantFilter{Owner: "alice", Tag: ptr("odd"), Limit: 100}, []int64{}, false},
		{"TagEmptyMatchesNothing", plantstore.PlantFilter{Owner: "alice", Tag: ptr(""), Limit: 100}, []int64{}, false},
		{"OtherOwner", plantstore.PlantFilter{Owner: "bob", Limit: 100}, []int64{1, 2, 3}, false},
		{"UnknownOwner", plantstore.PlantFilter{Owner: "carol", Limit: 100}, []int64{}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			plants, more, err := db.FindPlants(ctx, tt.filter)
			if err != nil {
				t.Fatal(err)
			}
			if plants == nil {
				t.Fatal("FindPlants returned a nil slice, want non-nil")
			}
			ids := make([]int64, 0, len(plants))
			for _, p := range plants {
				if got, want := p.Owner, tt.filter.Owner; got != want {
					t.Fatalf("plant %d has Owner %q, want %q", p.ID, got, want)
				}
				ids = append(ids, p.ID)
			}
			if diff := cmp.Diff(tt.wantIDs, ids); diff != "" {
				t.Fatalf("ids (-want +got):\n%s", diff)
			}
			if got, want := more, tt.wantMore; got != want {
				t.Fatalf("more = %v, want %v", got, want)
			}
		})
	}

	t.Run("Content", func(t *testing.T) {
		plants, _, err := db.FindPlants(ctx, plantstore.PlantFilter{Owner: "alice", After: ptr(int64(4)), Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		want := []*plantstore.Plant{
			{Owner: "alice", ID: 5, Name: "A5", Tag: ptr("five"), CreatedAt: fixedNow},
			{Owner: "alice", ID: 6, Name: "A6", Tag: ptr("even"), CreatedAt: fixedNow},
		}
		if diff := cmp.Diff(want, plants); diff != "" {
			t.Fatalf("plants (-want +got):\n%s", diff)
		}
	})

	// Following pages with After visits every plant once, in order.
	t.Run("Paging", func(t *testing.T) {
		var ids []int64
		f := plantstore.PlantFilter{Owner: "alice", Limit: 4}
		for pages := 0; ; pages++ {
			if pages > 10 {
				t.Fatal("paging does not end")
			}
			plants, more, err := db.FindPlants(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range plants {
				ids = append(ids, p.ID)
			}
			if !more {
				break
			}
			f.After = ptr(plants[len(plants)-1].ID)
		}
		if diff := cmp.Diff([]int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, ids); diff != "" {
			t.Fatalf("ids over all pages (-want +got):\n%s", diff)
		}
	})

	t.Run("ExtremeIDs", func(t *testing.T) {
		db := openDB(t)
		for _, id := range []int64{1<<63 - 1, 0, -1 << 63, -1} {
			mustCreate(t, db, &plantstore.Plant{Owner: "alice", ID: id, Name: "x"})
		}
		plants, more, err := db.FindPlants(ctx, plantstore.PlantFilter{Owner: "alice", After: ptr(int64(-1 << 63)), Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		ids := []int64{}
		for _, p := range plants {
			ids = append(ids, p.ID)
		}
		if diff := cmp.Diff([]int64{-1, 0}, ids); diff != "" {
			t.Fatalf("ids (-want +got):\n%s", diff)
		}
		if got, want := more, true; got != want {
			t.Fatalf("more = %v, want %v", got, want)
		}
	})
}

func TestDeletePlant(t *testing.T) {
	ctx := context.Background()

	t.Run("OK", func(t *testing.T) {
		db := openDB(t)
		mustCreate(t, db, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern"})
		mustCreate(t, db, &plantstore.Plant{Owner: "alice", ID: 2, Name: "Cactus"})
		if err := db.DeletePlant(ctx, "alice", 1); err != nil {
			t.Fatal(err)
		}
		_, err := db.FindPlantByID(ctx, "alice", 1)
		if got, want := plantstore.ErrorCode(err), plantstore.CodeNotFound; got != want {
			t.Fatalf("after delete: ErrorCode(%v) = %d, want %d", err, got, want)
		}
		if _, err := db.FindPlantByID(ctx, "alice", 2); err != nil {
			t.Fatalf("the other plant: %v", err)
		}
		// The id can be created again, with other content.
		mustCreate(t, db, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Palm"})
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		db := openDB(t)
		err := db.DeletePlant(ctx, "alice", 1)
		if got, want := plantstore.ErrorCode(err), plantstore.CodeNotFound; got != want {
			t.Fatalf("ErrorCode(%v) = %d, want %d", err, got, want)
		}
	})

	t.Run("ErrTwice", func(t *testing.T) {
		db := openDB(t)
		mustCreate(t, db, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern"})
		if err := db.DeletePlant(ctx, "alice", 1); err != nil {
			t.Fatal(err)
		}
		err := db.DeletePlant(ctx, "alice", 1)
		if got, want := plantstore.ErrorCode(err), plantstore.CodeNotFound; got != want {
			t.Fatalf("ErrorCode(%v) = %d, want %d", err, got, want)
		}
	})

	t.Run("ErrOtherOwner", func(t *testing.T) {
		db := openDB(t)
		mustCreate(t, db, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern"})
		err := db.DeletePlant(ctx, "bob", 1)
		if got, want := plantstore.ErrorCode(err), plantstore.CodeNotFound; got != want {
			t.Fatalf("ErrorCode(%v) = %d, want %d", err, got, want)
		}
		if _, err := db.FindPlantByID(ctx, "alice", 1); err != nil {
			t.Fatalf("alice's plant after bob's delete: %v", err)
		}
	})
}
