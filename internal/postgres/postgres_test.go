package postgres_test

import (
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/postgres"
	"github.com/plantstore/plantstore/internal/testkit/pgtest"
)

// MustOpenDB opens a migrated store on a fresh database of the shared test
// cluster (a copy of the migrated template), closed when t ends.
func MustOpenDB(t *testing.T) *postgres.DB {
	t.Helper()
	return postgres.OpenMigrated(t, postgres.NewDB(postgres.NewMigratedDatabase(t)))
}

// openStoppable opens a migrated store on a cluster of its own, which the
// test may stop and start, with timeouts short enough for tests of
// unavailability: 2 s per call, 1 s per connection attempt.
func openStoppable(t *testing.T) (*postgres.DB, *pgtest.Cluster) {
	t.Helper()
	c := pgtest.StartCluster(t)
	db := postgres.NewDB(c.CreateDatabase(t, ""))
	db.OpTimeout = 2 * time.Second
	db.Config.ConnectTimeout = time.Second
	return postgres.OpenMigrated(t, db), c
}
