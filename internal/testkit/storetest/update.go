package storetest

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/service"
)

// testUpdatePlantStore: the row stores' UpdatePlant and DeletePlantIf, the
// conditional writes of PATCH and DELETE with If-Match: a merge patch of
// name and tag that keeps the rest of the row, applied only while the row
// has the expected content (else ErrChanged, nothing written); ErrNotFound
// for a missing row or another owner's.
func testUpdatePlantStore(t *testing.T, bs Backends) {
	b := bs.Open(t)
	ctx := t.Context()
	fern := &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", Tag: ptr("green"), CreatedAt: fixedNow}
	mustInsert(t, b, fern)
	mustInsert(t, b, &plantstore.Plant{Owner: "bob", ID: 1, Name: "Fern", Tag: ptr("green"), CreatedAt: fixedNow})
	check := func(t *testing.T, want *plantstore.Plant) {
		t.Helper()
		if diff := cmp.Diff(want, findPlant(t, b, want.Owner, want.ID), equateTime); diff != "" {
			t.Fatalf("stored plant (-want +got):\n%s", diff)
		}
	}
	update := func(t *testing.T, upd plantstore.PlantUpdate, expect *plantstore.Plant, want *plantstore.Plant) {
		t.Helper()
		res, err := b.UpdatePlant(ctx, "alice", 1, upd, expect, nil)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, res.Plant, equateTime); diff != "" {
			t.Fatalf("UpdatePlant answered (-want +got):\n%s", diff)
		}
		check(t, want)
	}
	cur := *fern
	// Each update happens a minute after the one before: a change sets
	// UpdatedAt to its At, a patch that changes nothing leaves it.
	step := 0
	next := func() time.Time {
		step++
		return fixedNow.Add(time.Duration(step) * time.Minute)
	}

	t.Run("Name", func(t *testing.T) {
		at := next()
		cur.Name, cur.UpdatedAt = "Boston fern", at
		update(t, plantstore.PlantUpdate{Name: ptr("Boston fern"), At: at}, nil, &cur)
	})
	t.Run("RemoveTag", func(t *testing.T) {
		at := next()
		cur.Tag, cur.UpdatedAt = nil, at
		update(t, plantstore.PlantUpdate{SetTag: true, At: at}, nil, &cur)
	})
	t.Run("SetTag", func(t *testing.T) {
		at := next()
		cur.Tag, cur.UpdatedAt = ptr("shade"), at
		update(t, plantstore.PlantUpdate{SetTag: true, Tag: ptr("shade"), At: at}, nil, &cur)
	})
	t.Run("Nothing", func(t *testing.T) {
		update(t, plantstore.PlantUpdate{At: next()}, nil, &cur)
	})
	// A patch that leaves name and tag as they are writes nothing: not
	// the row (UpdatedAt stays), not the event, with or without the
	// expected plant.
	t.Run("NoChange", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			upd    plantstore.PlantUpdate
			expect bool
		}{
			{"SameName", plantstore.PlantUpdate{Name: ptr(cur.Name), At: next()}, false},
			{"SameTag", plantstore.PlantUpdate{SetTag: true, Tag: cur.Tag, At: next()}, false},
			{"SameBoth", plantstore.PlantUpdate{Name: ptr(cur.Name), SetTag: true, Tag: cur.Tag, At: next()}, false},
			{"SameBothExpected", plantstore.PlantUpdate{Name: ptr(cur.Name), SetTag: true, Tag: cur.Tag, At: next()}, true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var expect *plantstore.Plant
				if tc.expect {
					expect = &cur
				}
				ev := updateEvent(t, 1)
				res, err := b.UpdatePlant(ctx, "alice", 1, tc.upd, expect, ev)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(&cur, res.Plant, equateTime); diff != "" {
					t.Fatalf("UpdatePlant answered (-want +got):\n%s", diff)
				}
				if res.Seq != 0 || res.Deliveries != 0 {
					t.Fatalf("an event was written: seq %d, %d deliveries", res.Seq, res.Deliveries)
				}
				events, err := b.ListEvents(ctx, plantstore.EventFilter{Owner: "alice", Limit: plantstore.MaxPageSize})
				if err != nil || len(events) != 1 || events[0].Type != plantstore.EventPlantCreated {
					t.Fatalf("%d events (%v); want the create's alone", len(events), err)
				}
				check(t, &cur)
			})
		}
		// A tag given, none stored (and the other way round) is a change.
		ev := updateEvent(t, 1)
		at := next()
		cur.Tag, cur.UpdatedAt = ptr(""), at
		update(t, plantstore.PlantUpdate{SetTag: true, Tag: ptr(""), At: at}, nil, &cur)
		at = next()
		cur.Tag, cur.UpdatedAt = nil, at
		if res, err := b.UpdatePlant(ctx, "alice", 1, plantstore.PlantUpdate{SetTag: true, At: at}, nil, ev); err != nil || res.Seq == 0 {
			t.Fatalf("removing an empty tag: seq %d, %v; want an event", res.Seq, err)
		}
		check(t, &cur)
	})
	t.Run("Expected", func(t *testing.T) {
		expect := cur
		at := next()
		cur.Name, cur.Tag, cur.UpdatedAt = "Fern", nil, at
		update(t, plantstore.PlantUpdate{Name: ptr("Fern"), SetTag: true, At: at}, &expect, &cur)
	})
	t.Run("ErrChanged", func(t *testing.T) {
		// cur is Fern with no tag: every other content is not it.
		for _, expect := range []*plantstore.Plant{
			{Owner: "alice", ID: 1, Name: "Boston fern"},                    // other name
			{Owner: "alice", ID: 1, Name: "Fern", Tag: ptr("")},             // a tag, empty
			{Owner: "alice", ID: 1, Name: "Fern", Tag: ptr("green")},        // a tag
			{Owner: "alice", ID: 1, Name: "fern", Tag: nil},                 // case differs
			{Owner: "alice", ID: 1, Name: "Boston fern", Tag: ptr("shade")}, // an older version
		} {
			_, err := b.UpdatePlant(ctx, "alice", 1, plantstore.PlantUpdate{Name: ptr("Lost"), At: next()}, expect, nil)
			checkIs(t, "UpdatePlant", err, plantstore.ErrChanged)
			checkIs(t, "DeletePlantIf", errOnly(b.DeletePlantIf(ctx, "alice", 1, expect, nil)), plantstore.ErrChanged)
			check(t, &cur)
		}
		// With a tag stored, an expected plant without one is not it.
		expect := cur
		at := next()
		cur.Tag, cur.UpdatedAt = ptr("green"), at
		update(t, plantstore.PlantUpdate{SetTag: true, Tag: ptr("green"), At: at}, &expect, &cur)
		_, err := b.UpdatePlant(ctx, "alice", 1, plantstore.PlantUpdate{Name: ptr("Lost"), At: next()}, &expect, nil)
		checkIs(t, "UpdatePlant, tag expected absent", err, plantstore.ErrChanged)
		check(t, &cur)
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		for _, key := range []struct {
			owner string
			id    int64
		}{{"alice", 2}, {"carol", 1}} {
			for _, expect := range []*plantstore.Plant{nil, &cur} {
				_, err := b.UpdatePlant(ctx, key.owner, key.id, plantstore.PlantUpdate{Name: ptr("x"), At: next()}, expect, nil)
				checkIs(t, "UpdatePlant", err, plantstore.ErrNotFound)
			}
			checkIs(t, "DeletePlantIf", errOnly(b.DeletePlantIf(ctx, key.owner, key.id, &cur, nil)), plantstore.ErrNotFound)
		}
		// bob's plant, same id, is untouched by alice's writes.
		check(t, &plantstore.Plant{Owner: "bob", ID: 1, Name: "Fern", Tag: ptr("green"), CreatedAt: fixedNow, UpdatedAt: fixedNow})
	})
	t.Run("DeletePlantIf", func(t *testing.T) {
		if err := errOnly(b.DeletePlantIf(ctx, "alice", 1, &cur, nil)); err != nil {
			t.Fatal(err)
		}
		_, err := b.FindPlant(ctx, "alice", 1)
		checkIs(t, "FindPlant after DeletePlantIf", err, plantstore.ErrNotFound)
		checkIs(t, "DeletePlantIf again", errOnly(b.DeletePlantIf(ctx, "alice", 1, &cur, nil)), plantstore.ErrNotFound)
	})
}

// updateEvent returns a plant.updated event of plant id, as the service
// makes it.
func updateEvent(t *testing.T, id int64) *plantstore.Event {
	t.Helper()
	evID, err := plantstore.NewEventID()
	if err != nil {
		t.Fatal(err)
	}
	return &plantstore.Event{Owner: "alice", ID: evID, PlantID: id, CreatedAt: fixedNow, Type: plantstore.EventPlantUpdated}
}

// testUpdatePlant: PlantService.UpdatePlant and DeletePlantIf, the rules of
// PATCH and DELETE with If-Match over each backend.
func testUpdatePlant(t *testing.T, bs Backends) {
	t.Run("MergePatch", func(t *testing.T) {
		c := newClock(fixedNow)
		_, svc := open(t, bs, service.Config{Now: c.Now})
		created := mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", Tag: ptr("green")})
		checkTime(t, "CreatedAt", created.CreatedAt, plantstore.TruncateTime(fixedNow))
		checkTime(t, "UpdatedAt of a new plant", created.UpdatedAt, created.CreatedAt)
		// A change an hour later is the plant's UpdatedAt.
		at := plantstore.TruncateTime(c.Add(time.Hour))
		got, err := svc.Plants.UpdatePlant(t.Context(), "alice", 1, plantstore.PlantUpdate{SetTag: true}, "")
		if err != nil {
			t.Fatal(err)
		}
		want := &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", CreatedAt: created.CreatedAt, UpdatedAt: at}
		if diff := cmp.Diff(want, got, equateTime); diff != "" {
			t.Fatalf("(-want +got):\n%s", diff)
		}
		if got, err := svc.Plants.FindPlantByID(t.Context(), "alice", 1); err != nil || !cmp.Equal(want, got, equateTime) {
			t.Fatalf("stored: %+v, %v; want %+v", got, err, want)
		}
		// A patch that changes nothing, later still, leaves UpdatedAt.
		c.Add(time.Hour)
		for _, upd := range []plantstore.PlantUpdate{{}, {Name: ptr("Fern")}, {SetTag: true}} {
			got, err = svc.Plants.UpdatePlant(t.Context(), "alice", 1, upd, "")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got, equateTime); diff != "" {
				t.Fatalf("patch %+v that changes nothing (-want +got):\n%s", upd, diff)
			}
		}
	})
	t.Run("Invalid", func(t *testing.T) {
		svc := openServices(t, bs)
		mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern"})
		for _, upd := range []plantstore.PlantUpdate{
			{Name: ptr("")},
			{Name: ptr("a\x00b")},
			{SetTag: true, Tag: ptr(strings.Repeat("x", plantstore.MaxTagLength+1))},
		} {
			_, err := svc.Plants.UpdatePlant(t.Context(), "alice", 1, upd, "")
			checkCode(t, "UpdatePlant", err, plantstore.CodeInvalidBody)
		}
		if p, _ := svc.Plants.FindPlantByID(t.Context(), "alice", 1); p.Name != "Fern" {
			t.Fatalf("an invalid patch changed the plant: %+v", p)
		}
	})
	t.Run("IfMatch", func(t *testing.T) {
		svc := openServices(t, bs)
		v1 := mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern"}).ETag()
		p, err := svc.Plants.UpdatePlant(t.Context(), "alice", 1, plantstore.PlantUpdate{Name: ptr("Moss")}, v1)
		if err != nil {
			t.Fatal(err)
		}
		v2 := p.ETag()
		_, err = svc.Plants.UpdatePlant(t.Context(), "alice", 1, plantstore.PlantUpdate{Name: ptr("Lost")}, v1)
		checkCode(t, "UpdatePlant with a stale ETag", err, plantstore.CodePreconditionFailed)
		checkCode(t, "DeletePlantIf with a stale ETag", svc.Plants.DeletePlantIf(t.Context(), "alice", 1, v1), plantstore.CodePreconditionFailed)
		_, err = svc.Plants.UpdatePlant(t.Context(), "alice", 2, plantstore.PlantUpdate{Name: ptr("x")}, v2)
		checkCode(t, "UpdatePlant of a missing plant", err, plantstore.CodeNotFound)
		checkCode(t, "DeletePlantIf of a missing plant", svc.Plants.DeletePlantIf(t.Context(), "alice", 2, "*"), plantstore.CodeNotFound)
		if _, err := svc.Plants.UpdatePlant(t.Context(), "alice", 1, plantstore.PlantUpdate{SetTag: true, Tag: ptr("x")}, "*"); err != nil {
			t.Fatalf("If-Match *: %v", err)
		}
		p, _ = svc.Plants.FindPlantByID(t.Context(), "alice", 1)
		if err := svc.Plants.DeletePlantIf(t.Context(), "alice", 1, `"other", `+p.ETag()); err != nil {
			t.Fatalf("DeletePlantIf with the current ETag in a list: %v", err)
		}
		_, err = svc.Plants.FindPlantByID(t.Context(), "alice", 1)
		checkCode(t, "FindPlantByID after DeletePlantIf", err, plantstore.CodeNotFound)
	})
	// Writers that all read the same version and change it with If-Match:
	// exactly one wins, the others get 412 (no lost update).
	t.Run("ConcurrentIfMatch", func(t *testing.T) {
		svc := openServices(t, bs)
		v1 := mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern"}).ETag()
		const writers = 8
		errs := make([]error, writers)
		var wg sync.WaitGroup
		for i := range writers {
			wg.Go(func() {
				_, errs[i] = svc.Plants.UpdatePlant(t.Context(), "alice", 1, plantstore.PlantUpdate{Name: ptr(string(rune('A' + i)))}, v1)
			})
		}
		wg.Wait()
		won := -1
		for i, err := range errs {
			switch code := plantstore.ErrorCode(err); {
			case err == nil && won >= 0:
				t.Fatalf("writers %d and %d both won", won, i)
			case err == nil:
				won = i
			case code != plantstore.CodePreconditionFailed:
				t.Fatalf("writer %d: %v, want 412", i, err)
			}
		}
		if won < 0 {
			t.Fatal("no writer won")
		}
		p, _ := svc.Plants.FindPlantByID(t.Context(), "alice", 1)
		if want := string(rune('A' + won)); p.Name != want {
			t.Fatalf("name %q, want the winner's %q", p.Name, want)
		}
	})
	// A PATCH that changes nothing writes nothing, with or without
	// If-Match: no plant.updated event, no typed delivery.
	t.Run("NoChangeWritesNothing", func(t *testing.T) {
		b, svc := open(t, bs, service.Config{})
		ctx := t.Context()
		sub, err := plantstore.NewSubscription("alice", "http://127.0.0.1:9/hooks/alice", "", fixedNow)
		if err != nil {
			t.Fatal(err)
		}
		sub.Types = []string{plantstore.EventPlantUpdated}
		if err := b.InsertSubscription(ctx, sub, plantstore.MaxMaxSubscriptions); err != nil {
			t.Fatal(err)
		}
		p := mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", Tag: ptr("green")})
		etag := p.ETag()
		for _, tc := range []struct {
			upd     plantstore.PlantUpdate
			ifMatch string
		}{
			{plantstore.PlantUpdate{Name: ptr("Fern")}, ""},
			{plantstore.PlantUpdate{SetTag: true, Tag: ptr("green")}, ""},
			{plantstore.PlantUpdate{Name: ptr("Fern"), SetTag: true, Tag: ptr("green")}, ""},
			{plantstore.PlantUpdate{Name: ptr("Fern"), SetTag: true, Tag: ptr("green")}, "*"},
			{plantstore.PlantUpdate{Name: ptr("Fern")}, etag},
			{plantstore.PlantUpdate{}, ""},
		} {
			got, err := svc.Plants.UpdatePlant(ctx, "alice", 1, tc.upd, tc.ifMatch)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(p, got, equateTime); diff != "" {
				t.Fatalf("%+v, If-Match %q: answered (-want +got):\n%s", tc.upd, tc.ifMatch, diff)
			}
		}
		events, _, err := svc.Events.FindEvents(ctx, plantstore.EventFilter{Owner: "alice"})
		if err != nil || len(events) != 1 || events[0].Type != plantstore.EventPlantCreated {
			t.Fatalf("%d events (%v); want the create's alone", len(events), err)
		}
		if pending, _ := storeOutboxStats(t, b); pending != 0 {
			t.Fatalf("%d pending deliveries after patches that change nothing, want 0", pending)
		}
		// A change is written, with its typed delivery.
		if _, err := svc.Plants.UpdatePlant(ctx, "alice", 1, plantstore.PlantUpdate{Name: ptr("Moss")}, ""); err != nil {
			t.Fatal(err)
		}
		events, _, _ = svc.Events.FindEvents(ctx, plantstore.EventFilter{Owner: "alice"})
		if pending, _ := storeOutboxStats(t, b); len(events) != 2 || pending != 1 {
			t.Fatalf("after a change: %d events, %d pending deliveries; want 2 and 1", len(events), pending)
		}
	})
	// A change sends no webhook delivery: deliveries announce new plants.
	t.Run("NoEvent", func(t *testing.T) {
		b, svc := open(t, bs, service.Config{})
		if _, err := svc.Webhooks.CreateSubscription(t.Context(), "alice", "http://127.0.0.1:9/hook", ""); err != nil {
			t.Fatal(err)
		}
		mustCreate(t, svc, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern"})
		before, _ := storeOutboxStats(t, b)
		if before != 1 {
			t.Fatalf("%d pending deliveries after the create, want 1", before)
		}
		if _, err := svc.Plants.UpdatePlant(t.Context(), "alice", 1, plantstore.PlantUpdate{Name: ptr("Moss")}, ""); err != nil {
			t.Fatal(err)
		}
		if after, _ := storeOutboxStats(t, b); after != before {
			t.Fatalf("%d pending deliveries after the change, want %d", after, before)
		}
	})
}
