package sqlite_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
)

// The PlantService contract is tested by the conformance suite
// (storetest_test.go); this file keeps what is SQLite's own.

func ptr[T any](v T) *T { return &v }

// TestPlantCreatedAtFromNow checks that a plant's CreatedAt is the DB's Now
// at the create, stored to the nanosecond.
func TestPlantCreatedAtFromNow(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	want := &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", Tag: ptr("green"), CreatedAt: fixedNow}
	stored, created, err := db.CreatePlant(ctx, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", Tag: ptr("green")})
	if err != nil {
		t.Fatal(err)
	}
	if !created {
		t.Fatal("created = false, want true")
	}
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
	plants, _, err := db.FindPlants(ctx, plantstore.PlantFilter{Owner: "alice", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]*plantstore.Plant{want}, plants); diff != "" {
		t.Fatalf("listed plants (-want +got):\n%s", diff)
	}
}
