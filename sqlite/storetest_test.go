package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/sqlite"
	"github.com/plantstore/plantstore/storetest"
)

// TestConformance runs the storage conformance suite on a new file per store,
// with the real clock (the suite checks timestamps against it).
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) plantstore.Store {
		db := sqlite.NewDB(filepath.Join(t.TempDir(), "plantstore.db"))
		if err := db.Open(); err != nil {
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
	})
}
