package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/service"
	"github.com/plantstore/plantstore/internal/testkit/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Run(m)) }

// TestPreload: preload stores the ids asked for on both backends, in
// batches, counts only what it stored (ids that exist are skipped), and the
// server's plant service reads them back.
func TestPreload(t *testing.T) {
	for _, tt := range []struct {
		name string
		db   func(t *testing.T) string
	}{
		{"SQLite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "preload.db") }},
		{"PostgreSQL", func(t *testing.T) string { return pgtest.NewDatabase(t) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			o := options{db: tt.db(t), owner: "admin", from: 1, to: 250, batch: 100}
			if n, err := preload(ctx, o); err != nil {
				t.Fatal(err)
			} else if got, want := n, int64(250); got != want {
				t.Fatalf("first preload stored %d, want %d", got, want)
			}
			o.from, o.to = 201, 300 // 201..250 are there already
			if n, err := preload(ctx, o); err != nil {
				t.Fatal(err)
			} else if got, want := n, int64(50); got != want {
				t.Fatalf("second preload stored %d, want %d", got, want)
			}

			db := openBackend(o)
			if err := db.Open(ctx); err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			plants, more, err := service.New(db, service.Config{}).Plants.FindPlants(ctx,
				plantstore.PlantFilter{Owner: "admin", Limit: plantstore.MaxPageSize})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := len(plants), 300; got != want || more {
				t.Fatalf("%d plants stored (more: %v), want %d", got, more, want)
			}
			if p := plants[9]; p.ID != 10 || p.Name != "plant 10" || p.Tag != nil {
				t.Errorf("plant 10 = %+v, want name \"plant 10\" and no tag", p)
			}
			if p := plants[10]; p.Tag == nil || *p.Tag != "bench" {
				t.Errorf("plant 11 tag = %v, want bench", p.Tag)
			}
		})
	}
}
