package postgres_test

import (
	"testing"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/portable"
	"github.com/plantstore/plantstore/internal/testkit/storetest"
)

// TestConformance runs the storage conformance suite on a fresh database
// per backend (MustOpenDB); storage is made unavailable by stopping a
// cluster of its own (stoppable).
func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, storetest.Backends{Open: openConformance, Unavailable: stoppable})
}

func openConformance(t *testing.T) portable.Database { return MustOpenDB(t) }

// stoppable returns a backend on a cluster of its own, and how to stop it
// (pg_ctl stop -m fast: connections dropped, new ones refused) and start
// it again.
func stoppable(t *testing.T) (plantstore.Backend, func(), func()) {
	db, c := openStoppable(t)
	return db, func() { c.Stop(t) }, func() { c.Start(t) }
}
