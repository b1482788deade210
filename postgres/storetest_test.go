package postgres_test

import (
	"testing"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/postgres"
	"github.com/plantstore/plantstore/storetest"
)

// MustOpenDB opens a migrated store on a fresh database.
func MustOpenDB(t *testing.T) *postgres.DB {
	t.Helper()
	db := postgres.NewDB(pgtest.NewDatabase(t))
	if err := db.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	if _, err := db.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestConformance runs the storage conformance suite on a fresh database
// per store.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) plantstore.Store { return MustOpenDB(t) })
}
