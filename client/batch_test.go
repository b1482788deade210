package client_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore/client"
)

func TestCreatePlants(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	c := ts.client(t, ts.token(t, "alice"))
	ctx := context.Background()
	fern, err := c.CreatePlant(ctx, client.NewPlant{ID: 1, Name: "Fern", Tag: ptr("green")})
	if err != nil {
		t.Fatal(err)
	}

	got, err := c.CreatePlants(ctx, []client.NewPlant{{ID: 3, Name: "Moss"}, {ID: 1, Name: "Fern", Tag: ptr("green")}, {ID: 2, Name: "Ivy", Tag: ptr("climbing")}})
	if err != nil {
		t.Fatal(err)
	}
	want := []*client.Plant{{ID: 3, Name: "Moss"}, {ID: 1, Name: "Fern", Tag: ptr("green")}, {ID: 2, Name: "Ivy", Tag: ptr("climbing")}}
	if diff := cmp.Diff(want, got, ignoreTimes); diff != "" {
		t.Fatalf("CreatePlants (-want +got):\n%s", diff)
	}
	checkTimes(t, "batch create", got[0])
	if !got[1].CreatedAt.Equal(fern.CreatedAt) {
		t.Errorf("the replayed plant has created_at %v, want the stored %v", got[1].CreatedAt, fern.CreatedAt)
	}

	// A refused batch: the error names the item, and nothing is stored.
	for _, tt := range []struct {
		name   string
		plants []client.NewPlant
		want   client.Error // Message is not compared
		index  int          // -1: none
	}{
		{"conflict", []client.NewPlant{{ID: 10, Name: "New"}, {ID: 1, Name: "Not Fern"}}, client.Error{Status: 409, Code: 40901}, 1},
		{"invalid item", []client.NewPlant{{ID: 10, Name: "New"}, {ID: 11, Name: "B"}, {ID: 12, Name: ""}}, client.Error{Status: 400, Code: 40002}, 2},
		{"same id twice", []client.NewPlant{{ID: 10, Name: "New"}, {ID: 10, Name: "New"}}, client.Error{Status: 400, Code: 40002}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.CreatePlants(ctx, tt.plants)
			e := apiError(t, err)
			if e.Message == "" {
				t.Error("empty Message")
			}
			if diff := cmp.Diff(tt.want, client.Error{Status: e.Status, Code: e.Code}); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if e.Index == nil || *e.Index != tt.index {
				t.Errorf("Index = %v, want %d", e.Index, tt.index)
			}
		})
	}
	if _, err := c.GetPlant(ctx, 10, client.GetPlantOptions{}); apiError(t, err).Code != 40401 {
		t.Fatalf("plant 10 of a refused batch: %v, want 40401", err)
	}
}
