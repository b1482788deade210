package postgres_test

import (
	"testing"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/portable"
	"github.com/plantstore/plantstore/storetest"
)

// TestConformance runs the storage conformance suite on a fresh database
// per backend. Storage is made unavailable by stopping a cluster of its
// own (pg_ctl stop -m fast: connections dropped, new ones refused).
func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Backends{
		Open: func(t *testing.T) portable.Backend { return MustOpenDB(t) },
		Unavailable: func(t *testing.T) (plantstore.Backend, func(), func()) {
			db, c := openStoppable(t)
			return db, func() { c.Stop(t) }, func() { c.Start(t) }
		},
	})
}
