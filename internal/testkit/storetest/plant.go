package storetest

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/service"
)

// The cases of this file run through the service (PlantService).

// mustCreate creates p through the service and fails the test unless it was
// newly created.
func mustCreate(t *testing.T, svc *service.Services, p *plantstore.Plant) *plantstore.Plant {
	t.Helper()
	stored, created, err := svc.Plants.CreatePlant(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	if !created {
		t.Fatalf("CreatePlant(%+v): created = false, want true", p)
	}
	return stored
}

// listAll returns every plant of owner through the service.
func listAll(t *testing.T, svc *service.Services, owner string) []*plantstore.Plant {
	t.Helper()
	plants, more, err := svc.Plants.FindPlants(t.Context(), plantstore.PlantFilter{Owner: owner, Limit: plantstore.MaxPageSize})
	if err != nil {
		t.Fatal(err)
	}
	if more {
		t.Fatalf("%s has more than %d plants", owner, plantstore.MaxPageSize)
	}
	return plants
}

func testCreatePlant(t *testing.T, bs Backends) {
	t.Run("OK", func(t *testing.T) {
		svc := openServices(t, bs)
		before := time.Now()
		stored, created, err := svc.Plants.CreatePlant(t.Context(), &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", Tag: ptr("green")})
		after := time.Now()
		if err != nil {
			t.Fatal(err)
		}
		if got, want := created, true; got != want {
			t.Fatalf("created = %v, want %v", got, want)
		}
		checkTimeBetween(t, "CreatedAt", stored.CreatedAt, before, after)
		want := &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", Tag: ptr("green"), CreatedAt: stored.CreatedAt, UpdatedAt: stored.CreatedAt}
		if diff := cmp.Diff(want, stored); diff != "" {
			t.Fatalf("returned plant (-want +got):\n%s", diff)
		}
		got, err := svc.Plants.FindPlantByID(t.Context(), "alice", 1)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got, equateTime); diff != "" {
			t.Fatalf("stored plant (-want +got):\n%s", diff)
		}
	})

	t.Run("NoTag", func(t *testing.T) {
		svc := openServices(t, bs)
		mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern"})
		got, err := svc.Plants.FindPlantByID(t.Context(), "alice", 1)
		if err != nil {
			t.Fatal(err)
		}
		if got.Tag != nil {
			t.Fatalf("Tag = %q, want nil", *got.Tag)
		}
	})

	t.Run("EmptyTagIsNotNoTag", func(t *testing.T) {
		svc := openServices(t, bs)
		mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", Tag: ptr("")})
		got, err := svc.Plants.FindPlantByID(t.Context(), "alice", 1)
		if err != nil {
			t.Fatal(err)
		}
		if got.Tag == nil || *got.Tag != "" {
			t.Fatalf("Tag = %v, want pointer to empty string", got.Tag)
		}
	})

	t.Run("Extremes", func(t *testing.T) {
		svc := openServices(t, bs)
		for _, id := range []int64{math.MinInt64, -1, 0, math.MaxInt64} {
			name := fmt.Sprintf("plant %d 🌿 é", id)
			mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: id, Name: name})
			got, err := svc.Plants.FindPlantByID(t.Context(), "alice", id)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := got.Name, name; got != want {
				t.Fatalf("id %d: Name = %q, want %q", id, got, want)
			}
		}
		// The longest name and tag the contract allows, in 4-byte runes.
		long := &plantstore.Plant{Owner: "alice", ID: 1, Name: strings.Repeat("🌿", plantstore.MaxNameLength), Tag: ptr(strings.Repeat("🌵", plantstore.MaxTagLength))}
		mustCreate(t, svc, long)
		got, err := svc.Plants.FindPlantByID(t.Context(), "alice", 1)
		if err != nil {
			t.Fatal(err)
		}
		if !got.SameContent(long) {
			t.Fatalf("longest plant read back as %q, %v", got.Name, got.Tag)
		}
	})

	t.Run("ErrInvalid", func(t *testing.T) {
		for _, tt := range []struct {
			name string
			p    plantstore.Plant
		}{
			{"EmptyName", plantstore.Plant{ID: 1, Name: ""}},
			{"NameTooLong", plantstore.Plant{ID: 1, Name: strings.Repeat("a", plantstore.MaxNameLength+1)}},
			{"TagTooLong", plantstore.Plant{ID: 1, Name: "Fern", Tag: ptr(strings.Repeat("a", plantstore.MaxTagLength+1))}},
			{"NameNotUTF8", plantstore.Plant{ID: 1, Name: "Fern\xff"}},
			{"TagNotUTF8", plantstore.Plant{ID: 1, Name: "Fern", Tag: ptr("\xc3")}},
			// PostgreSQL cannot store U+0000 in text (SQLite could): no
			// backend takes it.
			{"NameNUL", plantstore.Plant{ID: 1, Name: "Fe\x00rn"}},
			{"TagNUL", plantstore.Plant{ID: 1, Name: "Fern", Tag: ptr("\x00")}},
		} {
			t.Run(tt.name, func(t *testing.T) {
				svc := openServices(t, bs)
				tt.p.Owner = "alice"
				sub := createSubscription(t, svc, "alice")
				stored, created, err := svc.Plants.CreatePlant(t.Context(), &tt.p)
				checkCode(t, "CreatePlant", err, plantstore.CodeInvalidBody)
				if stored != nil || created {
					t.Fatalf("invalid plant returned %+v, created %v", stored, created)
				}
				// The bulk path refuses it too.
				n, err := svc.Plants.ImportPlants(t.Context(), []*plantstore.Plant{&tt.p})
				checkCode(t, "ImportPlants", err, plantstore.CodeInvalidBody)
				if n != 0 {
					t.Fatalf("ImportPlants stored %d invalid plants", n)
				}
				if got := listAll(t, svc, "alice"); len(got) != 0 {
					t.Fatalf("%d plants stored after an invalid create, want 0", len(got))
				}
				if n, _ := outboxStats(t, svc); n != 0 {
					t.Fatalf("%d deliveries of subscription %s after an invalid create, want 0", n, sub.ID)
				}
			})
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
				svc := openServices(t, bs)
				first := mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", Tag: tt.tag})
				stored, created, err := svc.Plants.CreatePlant(t.Context(), &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", Tag: tt.tag})
				if err != nil {
					t.Fatal(err)
				}
				if got, want := created, false; got != want {
					t.Fatalf("created = %v, want %v", got, want)
				}
				if diff := cmp.Diff(first, stored, equateTime); diff != "" {
					t.Fatalf("replay returned (-want +got):\n%s", diff)
				}
				if got, want := len(listAll(t, svc, "alice")), 1; got != want {
					t.Fatalf("%d plants stored, want %d", got, want)
				}
			})
		}
	})

	t.Run("ErrConflict", func(t *testing.T) {
		for _, tt := range []struct {
			name          string
			stored, retry plantstore.Plant
		}{
			{"Name", plantstore.Plant{ID: 1, Name: "Fern"}, plantstore.Plant{ID: 1, Name: "Cactus"}},
			{"NameCase", plantstore.Plant{ID: 1, Name: "Fern"}, plantstore.Plant{ID: 1, Name: "fern"}},
			{"NameTrailingSpace", plantstore.Plant{ID: 1, Name: "Fern"}, plantstore.Plant{ID: 1, Name: "Fern "}},
			{"TagAdded", plantstore.Plant{ID: 1, Name: "Fern"}, plantstore.Plant{ID: 1, Name: "Fern", Tag: ptr("green")}},
			{"EmptyTagAdded", plantstore.Plant{ID: 1, Name: "Fern"}, plantstore.Plant{ID: 1, Name: "Fern", Tag: ptr("")}},
			{"TagRemoved", plantstore.Plant{ID: 1, Name: "Fern", Tag: ptr("green")}, plantstore.Plant{ID: 1, Name: "Fern"}},
			{"EmptyTagRemoved", plantstore.Plant{ID: 1, Name: "Fern", Tag: ptr("")}, plantstore.Plant{ID: 1, Name: "Fern"}},
			{"TagChanged", plantstore.Plant{ID: 1, Name: "Fern", Tag: ptr("green")}, plantstore.Plant{ID: 1, Name: "Fern", Tag: ptr("red")}},
		} {
			t.Run(tt.name, func(t *testing.T) {
				svc := openServices(t, bs)
				tt.stored.Owner, tt.retry.Owner = "alice", "alice"
				first := mustCreate(t, svc, &tt.stored)
				stored, created, err := svc.Plants.CreatePlant(t.Context(), &tt.retry)
				checkCode(t, "conflicting create", err, plantstore.CodeConflict)
				if stored != nil || created {
					t.Fatalf("conflict returned plant %+v, created %v", stored, created)
				}
				got, err := svc.Plants.FindPlantByID(t.Context(), "alice", 1)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(first, got, equateTime); diff != "" {
					t.Fatalf("stored plant changed by a conflict (-want +got):\n%s", diff)
				}
			})
		}
	})

	t.Run("SameIDTwoOwners", func(t *testing.T) {
		svc := openServices(t, bs)
		a := mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern"})
		b := mustCreate(t, svc, &plantstore.Plant{Owner: "bob", ID: 1, Name: "Cactus", Tag: ptr("spiky")})
		for _, want := range []*plantstore.Plant{a, b} {
			got, err := svc.Plants.FindPlantByID(t.Context(), want.Owner, 1)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got, equateTime); diff != "" {
				t.Fatalf("%s's plant (-want +got):\n%s", want.Owner, diff)
			}
		}
	})

	t.Run("Concurrent", func(t *testing.T) { testCreatePlantConcurrent(t, bs) })
}

// testCreatePlantConcurrent checks the concurrency rules: n identical
// creates of one id store one row, all succeed and exactly one reports
// created; n different creates of one id give one success and n-1 conflicts.
func testCreatePlantConcurrent(t *testing.T, bs Backends) {
	const n = 16

	t.Run("Identical", func(t *testing.T) {
		svc := openServices(t, bs)
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
				p, created, err := svc.Plants.CreatePlant(t.Context(), &plantstore.Plant{Owner: "alice", ID: 42, Name: "Fern", Tag: ptr("green")})
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
			if r.stored == nil {
				t.Fatalf("create %d: nil plant and nil error", i)
			}
			if r.created {
				createdCount++
			}
			want := &plantstore.Plant{Owner: "alice", ID: 42, Name: "Fern", Tag: ptr("green"), CreatedAt: r.stored.CreatedAt, UpdatedAt: r.stored.CreatedAt}
			if diff := cmp.Diff(want, r.stored); diff != "" {
				t.Fatalf("create %d returned (-want +got):\n%s", i, diff)
			}
		}
		if got, want := createdCount, 1; got != want {
			t.Fatalf("%d creates reported created=true, want %d", got, want)
		}
		plants := listAll(t, svc, "alice")
		if got, want := len(plants), 1; got != want {
			t.Fatalf("%d rows, want %d", got, want)
		}
		// Every replay returned the one stored plant.
		for i, r := range results {
			if diff := cmp.Diff(plants[0], r.stored, equateTime); diff != "" {
				t.Fatalf("create %d returned a plant other than the stored one (-stored +returned):\n%s", i, diff)
			}
		}
	})

	t.Run("DifferentNames", func(t *testing.T) {
		svc := openServices(t, bs)
		errs := make([]error, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				_, _, errs[i] = svc.Plants.CreatePlant(t.Context(), &plantstore.Plant{Owner: "alice", ID: 42, Name: fmt.Sprintf("Fern %d", i)})
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
		got, err := svc.Plants.FindPlantByID(t.Context(), "alice", 42)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := got.Name, fmt.Sprintf("Fern %d", winner); got != want {
			t.Fatalf("stored Name = %q, want the winner's %q", got, want)
		}
	})
}

func testFindPlantByID(t *testing.T, bs Backends) {
	svc := openServices(t, bs)
	mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern"})

	t.Run("OK", func(t *testing.T) {
		got, err := svc.Plants.FindPlantByID(t.Context(), "alice", 1)
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
		{"ErrOwnerCase", "Alice", 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := svc.Plants.FindPlantByID(t.Context(), tt.owner, tt.id)
			checkCode(t, "FindPlantByID", err, plantstore.CodeNotFound)
			if p != nil {
				t.Fatalf("got plant %+v with an error", p)
			}
		})
	}
}

func testFindPlants(t *testing.T, bs Backends) {
	svc := openServices(t, bs)
	// alice has ids 1..10, inserted out of order; even ids are tagged "even",
	// id 5 is tagged "five". bob has ids 1..3.
	stored := map[int64]*plantstore.Plant{}
	for _, id := range []int64{7, 3, 10, 1, 9, 5, 2, 8, 4, 6} {
		p := &plantstore.Plant{Owner: "alice", ID: id, Name: fmt.Sprintf("A%d", id)}
		if id%2 == 0 {
			p.Tag = ptr("even")
		} else if id == 5 {
			p.Tag = ptr("five")
		}
		stored[id] = mustCreate(t, svc, p)
	}
	for id := int64(1); id <= 3; id++ {
		mustCreate(t, svc, &plantstore.Plant{Owner: "bob", ID: id, Name: fmt.Sprintf("B%d", id)})
	}

	for _, tt := range []struct {
		name     string
		filter   plantstore.PlantFilter
		wantIDs  []int64
		wantMore bool
	}{
		{"All", plantstore.PlantFilter{Owner: "alice", Limit: 100}, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, false},
		{"DefaultLimit", plantstore.PlantFilter{Owner: "alice"}, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, false},
		{"Limit", plantstore.PlantFilter{Owner: "alice", Limit: 3}, []int64{1, 2, 3}, true},
		{"LimitOne", plantstore.PlantFilter{Owner: "alice", Limit: 1}, []int64{1}, true},
		{"LimitMax", plantstore.PlantFilter{Owner: "alice", Limit: plantstore.MaxPageSize}, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, false},
		{"FullPageNothingFollows", plantstore.PlantFilter{Owner: "alice", Limit: 10}, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, false},
		{"OneFollows", plantstore.PlantFilter{Owner: "alice", Limit: 9}, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9}, true},
		{"AfterExclusive", plantstore.PlantFilter{Owner: "alice", After: &plantstore.PlantKey{ID: 3}, Limit: 3}, []int64{4, 5, 6}, true},
		{"AfterLastPageFull", plantstore.PlantFilter{Owner: "alice", After: &plantstore.PlantKey{ID: 7}, Limit: 3}, []int64{8, 9, 10}, false},
		{"AfterLastPageShort", plantstore.PlantFilter{Owner: "alice", After: &plantstore.PlantKey{ID: 8}, Limit: 3}, []int64{9, 10}, false},
		{"AfterMissingID", plantstore.PlantFilter{Owner: "alice", After: &plantstore.PlantKey{ID: -100}, Limit: 2}, []int64{1, 2}, true},
		{"AfterZero", plantstore.PlantFilter{Owner: "alice", After: &plantstore.PlantKey{ID: 0}, Limit: 1}, []int64{1}, true},
		{"AfterLast", plantstore.PlantFilter{Owner: "alice", After: &plantstore.PlantKey{ID: 10}, Limit: 3}, []int64{}, false},
		{"AfterMaxInt64", plantstore.PlantFilter{Owner: "alice", After: &plantstore.PlantKey{ID: math.MaxInt64}, Limit: 3}, []int64{}, false},
		{"AfterMinInt64", plantstore.PlantFilter{Owner: "alice", After: &plantstore.PlantKey{ID: math.MinInt64}, Limit: 2}, []int64{1, 2}, true},
		{"Tag", plantstore.PlantFilter{Owner: "alice", Tags: []string{"even"}, Limit: 100}, []int64{2, 4, 6, 8, 10}, false},
		{"TagLimit", plantstore.PlantFilter{Owner: "alice", Tags: []string{"even"}, Limit: 2}, []int64{2, 4}, true},
		{"TagAfter", plantstore.PlantFilter{Owner: "alice", Tags: []string{"even"}, After: &plantstore.PlantKey{ID: 4}, Limit: 2}, []int64{6, 8}, true},
		{"TagAfterFullLastPage", plantstore.PlantFilter{Owner: "alice", Tags: []string{"even"}, After: &plantstore.PlantKey{ID: 6}, Limit: 2}, []int64{8, 10}, false},
		{"TagSingle", plantstore.PlantFilter{Owner: "alice", Tags: []string{"five"}, Limit: 1}, []int64{5}, false},
		{"TagUnknown", plantstore.PlantFilter{Owner: "alice", Tags: []string{"odd"}, Limit: 100}, []int64{}, false},
		{"TagEmptyMatchesNothing", plantstore.PlantFilter{Owner: "alice", Tags: []string{""}, Limit: 100}, []int64{}, false},
		{"TagCase", plantstore.PlantFilter{Owner: "alice", Tags: []string{"Even"}, Limit: 100}, []int64{}, false},
		{"TagOtherOwner", plantstore.PlantFilter{Owner: "bob", Tags: []string{"even"}, Limit: 100}, []int64{}, false},
		{"OtherOwner", plantstore.PlantFilter{Owner: "bob", Limit: 100}, []int64{1, 2, 3}, false},
		{"OwnerCase", plantstore.PlantFilter{Owner: "Alice", Limit: 100}, []int64{}, false},
		{"UnknownOwner", plantstore.PlantFilter{Owner: "carol", Limit: 100}, []int64{}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			plants, more, err := svc.Plants.FindPlants(t.Context(), tt.filter)
			if err != nil {
				t.Fatal(err)
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
		plants, _, err := svc.Plants.FindPlants(t.Context(), plantstore.PlantFilter{Owner: "alice", After: &plantstore.PlantKey{ID: 4}, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		want := []*plantstore.Plant{
			{Owner: "alice", ID: 5, Name: "A5", Tag: ptr("five"), CreatedAt: stored[5].CreatedAt, UpdatedAt: stored[5].CreatedAt},
			{Owner: "alice", ID: 6, Name: "A6", Tag: ptr("even"), CreatedAt: stored[6].CreatedAt, UpdatedAt: stored[6].CreatedAt},
		}
		if diff := cmp.Diff(want, plants, equateTime); diff != "" {
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
			plants, more, err := svc.Plants.FindPlants(t.Context(), f)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range plants {
				ids = append(ids, p.ID)
			}
			if !more {
				break
			}
			f.After = plantstore.KeyOf(plants[len(plants)-1])
		}
		if diff := cmp.Diff([]int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, ids); diff != "" {
			t.Fatalf("ids over all pages (-want +got):\n%s", diff)
		}
	})

	// A limit outside 1..MaxPageSize (0 means DefaultPageSize) is the
	// client's error, not a panic or a silently clamped page.
	t.Run("ErrInvalidLimit", func(t *testing.T) {
		for _, limit := range []int{-1, plantstore.MaxPageSize + 1, math.MinInt, math.MaxInt} {
			plants, more, err := svc.Plants.FindPlants(t.Context(), plantstore.PlantFilter{Owner: "alice", Limit: limit})
			checkCode(t, fmt.Sprintf("limit %d", limit), err, plantstore.CodeInvalidQuery)
			if len(plants) != 0 || more {
				t.Fatalf("limit %d: got %d plants, more %v with an error", limit, len(plants), more)
			}
		}
	})

	// A tag filter that no tag can match, because tags are UTF-8 without
	// U+0000, is the client's error on every backend, 40002 as the same
	// string faults in a body (PostgreSQL would fail on it: it cannot
	// compare such text).
	t.Run("ErrTag", func(t *testing.T) {
		for _, tag := range []string{"\x00", "even\x00", "\x00even", "\xff", "even\xc3"} {
			plants, more, err := svc.Plants.FindPlants(t.Context(), plantstore.PlantFilter{Owner: "alice", Tags: []string{tag}})
			checkCode(t, fmt.Sprintf("tag %q", tag), err, plantstore.CodeInvalidBody)
			if len(plants) != 0 || more {
				t.Fatalf("tag %q: got %d plants, more %v with an error", tag, len(plants), more)
			}
		}
	})

	t.Run("ExtremeIDs", func(t *testing.T) {
		svc := openServices(t, bs)
		for _, id := range []int64{math.MaxInt64, 0, math.MinInt64, -1} {
			mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: id, Name: "x"})
		}
		for _, tt := range []struct {
			name     string
			after    *plantstore.PlantKey
			limit    int
			wantIDs  []int64
			wantMore bool
		}{
			{"All", nil, 10, []int64{math.MinInt64, -1, 0, math.MaxInt64}, false},
			{"First", nil, 1, []int64{math.MinInt64}, true},
			{"AfterMinInt64", &plantstore.PlantKey{ID: math.MinInt64}, 2, []int64{-1, 0}, true},
			{"AfterZero", &plantstore.PlantKey{ID: 0}, 1, []int64{math.MaxInt64}, false},
			{"AfterMaxInt64", &plantstore.PlantKey{ID: math.MaxInt64}, 10, []int64{}, false},
		} {
			t.Run(tt.name, func(t *testing.T) {
				plants, more, err := svc.Plants.FindPlants(t.Context(), plantstore.PlantFilter{Owner: "alice", After: tt.after, Limit: tt.limit})
				if err != nil {
					t.Fatal(err)
				}
				ids := []int64{}
				for _, p := range plants {
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
	})

	// A page of MaxPageSize: exactly that many plants fill it with nothing
	// following; one more and more is true. No limit gives DefaultPageSize.
	t.Run("MaxPage", func(t *testing.T) {
		svc := openServices(t, bs)
		// Eight writers at once (their creates share commits), each
		// taking every eighth id: the pages are in id order, not in the
		// order of the creates.
		const writers = 8
		var wg sync.WaitGroup
		for w := range int64(writers) {
			wg.Go(func() {
				for id := w; id < plantstore.MaxPageSize; id += writers {
					p := &plantstore.Plant{Owner: "alice", ID: id, Name: "x"}
					if _, created, err := svc.Plants.CreatePlant(t.Context(), p); err != nil || !created {
						t.Errorf("CreatePlant(%+v): created = %v, %v; want created", p, created, err)
						return
					}
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		check := func(t *testing.T, limit, wantLen int, wantMore bool) {
			t.Helper()
			plants, more, err := svc.Plants.FindPlants(t.Context(), plantstore.PlantFilter{Owner: "alice", Limit: limit})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := len(plants), wantLen; got != want {
				t.Fatalf("%d plants, want %d", got, want)
			}
			for i, p := range plants {
				if got, want := p.ID, int64(i); got != want {
					t.Fatalf("plant %d has id %d, want %d", i, got, want)
				}
			}
			if got, want := more, wantMore; got != want {
				t.Fatalf("more = %v, want %v", got, want)
			}
		}
		t.Run("Full", func(t *testing.T) { check(t, plantstore.MaxPageSize, plantstore.MaxPageSize, false) })
		t.Run("DefaultLimit", func(t *testing.T) { check(t, 0, plantstore.DefaultPageSize, true) })
		mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: plantstore.MaxPageSize, Name: "x"})
		t.Run("OneFollows", func(t *testing.T) { check(t, plantstore.MaxPageSize, plantstore.MaxPageSize, true) })
	})
}

func testDeletePlant(t *testing.T, bs Backends) {
	t.Run("OK", func(t *testing.T) {
		svc := openServices(t, bs)
		mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern"})
		mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 2, Name: "Cactus"})
		if err := svc.Plants.DeletePlant(t.Context(), "alice", 1); err != nil {
			t.Fatal(err)
		}
		_, err := svc.Plants.FindPlantByID(t.Context(), "alice", 1)
		checkCode(t, "FindPlantByID after delete", err, plantstore.CodeNotFound)
		if _, err := svc.Plants.FindPlantByID(t.Context(), "alice", 2); err != nil {
			t.Fatalf("the other plant: %v", err)
		}
		if got, want := len(listAll(t, svc, "alice")), 1; got != want {
			t.Fatalf("%d plants listed after delete, want %d", got, want)
		}
		// The id can be created again, with other content.
		mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Palm"})
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		svc := openServices(t, bs)
		checkCode(t, "DeletePlant", svc.Plants.DeletePlant(t.Context(), "alice", 1), plantstore.CodeNotFound)
	})

	t.Run("ErrTwice", func(t *testing.T) {
		svc := openServices(t, bs)
		mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern"})
		if err := svc.Plants.DeletePlant(t.Context(), "alice", 1); err != nil {
			t.Fatal(err)
		}
		checkCode(t, "second DeletePlant", svc.Plants.DeletePlant(t.Context(), "alice", 1), plantstore.CodeNotFound)
	})

	t.Run("ErrOtherOwner", func(t *testing.T) {
		svc := openServices(t, bs)
		mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern"})
		checkCode(t, "DeletePlant by bob", svc.Plants.DeletePlant(t.Context(), "bob", 1), plantstore.CodeNotFound)
		if _, err := svc.Plants.FindPlantByID(t.Context(), "alice", 1); err != nil {
			t.Fatalf("alice's plant after bob's delete: %v", err)
		}
	})

	// Deleting one owner's plant leaves another's with the same id.
	t.Run("SameIDTwoOwners", func(t *testing.T) {
		svc := openServices(t, bs)
		mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern"})
		bob := mustCreate(t, svc, &plantstore.Plant{Owner: "bob", ID: 1, Name: "Cactus"})
		if err := svc.Plants.DeletePlant(t.Context(), "alice", 1); err != nil {
			t.Fatal(err)
		}
		got, err := svc.Plants.FindPlantByID(t.Context(), "bob", 1)
		if err != nil {
			t.Fatalf("bob's plant after alice's delete: %v", err)
		}
		if diff := cmp.Diff(bob, got, equateTime); diff != "" {
			t.Fatalf("bob's plant (-want +got):\n%s", diff)
		}
	})
}
