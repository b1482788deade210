// Package storetest is the conformance suite of plantstore.Store: every
// storage backend runs it and must pass it unchanged, so the service behaves
// the same on each. It covers plant CRUD, ownership, pagination edges,
// idempotent replay and conflicts, tokens (lookup by hash, listing,
// revocation, expiry, counting, the atomic first token), the concurrency
// rules (identical concurrent creates store one row; different ones give
// one success and conflicts), webhook subscriptions and the transactional
// outbox (fan-out on create only, leases, completion, disabling, concurrent
// claims getting disjoint deliveries).
//
// A backend plugs in with one test that hands Run a function opening a
// fresh, empty, migrated store and registering its Close with t.Cleanup:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) plantstore.Store {
//			db := postgres.NewDB(pgtest.NewDatabase(t)) // or a new SQLite file in t.TempDir()
//			if err := db.Open(); err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { db.Close() })
//			if _, err := db.Migrate(t.Context()); err != nil {
//				t.Fatal(err)
//			}
//			return db
//		})
//	}
//
// The store must use the real clock: the suite checks that timestamps the
// store sets fall between the times just before and just after the call.
// Timestamps are compared to the microsecond, the precision of PostgreSQL.
// open is called once per subtest (some subtests share a store); it must be
// safe to call while earlier stores are still open.
package storetest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
)

// Run runs the conformance suite against the stores that open returns. Each
// call of open must return a new, empty, migrated store, closed by the
// cleanup of the t it is given.
func Run(t *testing.T, open func(t *testing.T) plantstore.Store) {
	t.Run("Ping", func(t *testing.T) {
		if err := open(t).Ping(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("CreatePlant", func(t *testing.T) { testCreatePlant(t, open) })
	t.Run("FindPlantByID", func(t *testing.T) { testFindPlantByID(t, open) })
	t.Run("FindPlants", func(t *testing.T) { testFindPlants(t, open) })
	t.Run("DeletePlant", func(t *testing.T) { testDeletePlant(t, open) })
	t.Run("CreateToken", func(t *testing.T) { testCreateToken(t, open) })
	t.Run("FindTokenByHash", func(t *testing.T) { testFindTokenByHash(t, open) })
	t.Run("FindTokens", func(t *testing.T) { testFindTokens(t, open) })
	t.Run("RevokeToken", func(t *testing.T) { testRevokeToken(t, open) })
	t.Run("CountTokens", func(t *testing.T) { testCountTokens(t, open) })
	t.Run("CreateFirstToken", func(t *testing.T) { testCreateFirstToken(t, open) })
	t.Run("Subscriptions", func(t *testing.T) { testSubscriptions(t, open) })
	t.Run("Outbox", func(t *testing.T) { testOutbox(t, open) })
}

// fixedNow is the creation time of the tokens the suite makes itself
// (plantstore.NewToken takes the time as an argument). It has nanoseconds,
// which a backend may round to microseconds.
var fixedNow = time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC)

// equateTime makes cmp treat times less than a microsecond apart as equal:
// PostgreSQL keeps microseconds, and a store may return the time it wrote
// (with nanoseconds) from one call and the stored one from another.
var equateTime = cmp.Comparer(func(a, b time.Time) bool {
	d := a.Sub(b)
	return -time.Microsecond < d && d < time.Microsecond
})

// checkTimeBetween fails unless got, a timestamp the store set during a call,
// lies between before and after (taken around the call), to the microsecond.
func checkTimeBetween(t *testing.T, what string, got, before, after time.Time) {
	t.Helper()
	if got.Before(before.Add(-time.Microsecond)) || got.After(after.Add(time.Microsecond)) {
		t.Fatalf("%s = %v, want between %v and %v (the time of the call)", what, got, before.Round(0), after.Round(0))
	}
}

// waitPast returns once the clock reads more than a millisecond past tm, so a
// timestamp taken afterwards differs from tm even at microsecond precision.
func waitPast(tm time.Time) {
	for !time.Now().After(tm.Add(time.Millisecond)) {
		time.Sleep(time.Millisecond)
	}
}

func ptr[T any](v T) *T { return &v }
