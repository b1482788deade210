package sqlite_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
)

// The PlantStore contract is tested by the conformance suite
// (storetest_test.go); this file keeps what is SQLite's own.

func ptr[T any](v T) *T { return &v }

// TestPlantTimeToTheNanosecond checks that a plant's CreatedAt is stored as
// given, to the nanosecond (integer Unix nanoseconds), on every read path.
func TestPlantTimeToTheNanosecond(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	want := &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", Tag: ptr("green"), CreatedAt: fixedNow, UpdatedAt: fixedNow}
	ev := &plantstore.Event{Type: plantstore.EventPlantCreated, ID: "evt_1", PlantID: 1, CreatedAt: fixedNow}
	if existing, _, err := insert3(db.InsertPlant(ctx, want, ev)); err != nil || existing != nil {
		t.Fatalf("InsertPlant = %v, %v; want nil, nil", existing, err)
	}
	got, err := db.FindPlant(ctx, "alice", 1)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("stored plant (-want +got):\n%s", diff)
	}
	plants, err := db.ListPlants(ctx, plantstore.PlantFilter{Owner: "alice", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]*plantstore.Plant{want}, plants); diff != "" {
		t.Fatalf("listed plants (-want +got):\n%s", diff)
	}
}
