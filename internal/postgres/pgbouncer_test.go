package postgres_test

import (
	"testing"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/portable"
	"github.com/plantstore/plantstore/internal/postgres"
	"github.com/plantstore/plantstore/internal/testkit/pgtest"
	"github.com/plantstore/plantstore/internal/testkit/storetest"
)

// TestConformancePgBouncer runs the conformance suite through a real
// PgBouncer in transaction pooling mode with its stock
// ignore_startup_parameters: every call of the store, the
// migrations included, works when each transaction may run on another
// server connection that other clients share (four per database), and
// nothing in the startup packet makes PgBouncer refuse the connections.
// Storage is made unavailable by stopping the cluster behind a PgBouncer
// of its own, which stays up. Migrate runs every migration on an empty
// database through the pooler; the suite's other databases are copies of
// the migrated template, on which Migrate only checks the version.
func TestConformancePgBouncer(t *testing.T) {
	t.Parallel()
	bouncer := pgtest.StartPgBouncer(t, pgtest.NewDatabase(t), pgtest.PgBouncerOptions{PoolSize: 4})
	t.Run("Migrate", func(t *testing.T) {
		db := postgres.NewDB(bouncer.Via(t, pgtest.NewDatabase(t)))
		db.Config.TransactionPooler = true
		postgres.OpenMigrated(t, db)
	})
	storetest.Run(t, storetest.Backends{
		Open: func(t *testing.T) portable.Database {
			db := postgres.NewDB(bouncer.Via(t, postgres.NewMigratedDatabase(t)))
			db.Config.TransactionPooler = true
			return postgres.OpenMigrated(t, db)
		},
		Unavailable: func(t *testing.T) (plantstore.Backend, func(), func()) {
			c := pgtest.StartCluster(t)
			b := pgtest.StartPgBouncer(t, c.URL(""), pgtest.PgBouncerOptions{})
			db := postgres.NewDB(b.Via(t, c.CreateDatabase(t, "")))
			db.Config.TransactionPooler = true
			db.OpTimeout = 2 * time.Second
			db.Config.ConnectTimeout = time.Second
			return postgres.OpenMigrated(t, db), func() { c.Stop(t) }, func() { c.Start(t) }
		},
	})
}
