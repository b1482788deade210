// Package storetest is the conformance suite of plantstore.Backend: both
// storage backends (sqlite, postgres) run it and must pass it unchanged, so
// that the service behaves the same on each.
//
// Cases run at one of two levels.
//
// Through the service (service.New over the backend, with the real clock,
// or an injected one where a case needs to control time: tokens created at
// different times, expiry, rotation grace), for what a client sees: plant
// CRUD, ownership, validation, pagination edges and the page limit,
// idempotent replay and conflicts with their codes, concurrent identical and
// different creates, ImportPlants (skipping existing ids, no webhook events,
// nothing stored when one plant is invalid), tokens (issuance, listing oldest
// first, revocation, Authenticate refusing malformed, unknown, revoked and
// expired tokens, the atomic first token; the token API's rules: minting
// within the caller's scopes and expiry and at most 100 years, for its own
// owner, a JWT caller's included, pages of an owner's tokens, another
// owner's token not found, a revocation that takes effect at once despite
// the token cache), webhook subscriptions (CRUD,
// ownership, the per-owner cap and its error, time-ordered ids, pages,
// rotation and the secrets that sign during its grace period), the outbox as
// the dispatcher sees it (fan-out on create only, leases timed by the
// database's clock, retries, completion, disabling on 410 and after failing
// for longer than Config.WebhookDisableAfter, deletion, concurrent creates
// and claims), and
// storage unavailability (CodeStorageUnavailable wrapping
// plantstore.ErrUnavailable, within the backend's timeout, nothing partial
// stored, recovery).
//
// On the row stores directly, for the contracts the service relies on
// but cannot show: the sentinel errors (ErrNotFound, ErrExists,
// ErrUnavailable), InsertPlant returning the existing row unchanged and
// writing no outbox rows when the key is taken, ListPlants returning at most
// Limit rows, BulkInsertPlants (skipping existing keys per owner, no outbox
// rows, about 2000 rows in one call), RevokeToken keeping an earlier
// revocation time, every timestamp stored as given (to the microsecond:
// PostgreSQL keeps microseconds), InsertSubscription's cap (ErrLimit, never
// passed by concurrent inserts), ListSubscriptions' pages, claims
// (DueDeliveries and LeaseDeliveries through the service's scheduler: due
// by the database's clock, earliest first, leases of the length asked,
// fair across owners and subscriptions within the bounds, a large backlog
// hiding no other owner's delivery, filling Task.Subscription),
// CompleteDelivery (attempts stored as given, FailingSince kept,
// r.AttemptedAt as the subscription's disabled time) and PruneOutbox. The
// database's clock is not the suite's: a delivery is made due or not by the
// time written with it, and a lease ends when its real duration has
// passed.
// Also the token API's row-store contracts (OwnerTokenStore): Last4 stored
// as given (none for old tokens), ListOwnerTokens' pages oldest first with
// ties broken by id and ErrNotFound for a cursor of another owner,
// FindOwnerToken and RevokeOwnerToken scoped by owner, the first revocation
// time kept.
// Also the bounds on tokens (tokenlimit.go): InsertOwnerToken's cap of live
// tokens (revoked and expired ones not counted, ErrLimit, never passed by
// concurrent inserts), PruneTokens (revoked or expired before the cut-off,
// in batches, never the newest token), and through the service with an
// injected clock, MintToken's CodeTooManyTokens and PruneTokens by the
// retention.
// Also UpdatePlant and DeletePlantIf: a merge patch that keeps the rest of
// the row, written only while the row has the expected content (else
// ErrChanged).
// These are the subtests PlantStore, BulkInsert, UpdatePlantStore,
// TokenStore, WebhookStore, OutboxStore and Unavailable/RowStore, apart
// from the service cases of their areas, so a broken contract is named as
// such. The areas run in parallel: each case opens backends of its own,
// and Open must allow that. UpdatePlant runs PATCH's and If-Match's rules
// through the service, concurrent writers of one version included (one
// wins, the others 412).
//
// A backend plugs in with one test:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, storetest.Backends{
//			Open: func(t *testing.T) portable.Backend {
//				db := sqlite.NewDB(filepath.Join(t.TempDir(), "plantstore.db"))
//				if err := db.Open(t.Context()); err != nil {
//					t.Fatal(err)
//				}
//				t.Cleanup(func() { db.Close() })
//				if _, err := db.Migrate(t.Context()); err != nil {
//					t.Fatal(err)
//				}
//				return db
//			},
//			Unavailable: func(t *testing.T) (plantstore.Backend, func(), func()) {
//				// The same, with a timeout of at most 2 s, on storage the
//				// test can take away and give back (a file system made
//				// read-only, a server stopped behind a proxy).
//				return openBreakable(t)
//			},
//		})
//	}
package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/portable"
	"github.com/plantstore/plantstore/internal/service"
)

// Backends opens fresh backends for the suite.
type Backends struct {
	// Open returns a new, empty, migrated, open backend, closed by t's cleanup.
	// Called once per subtest (some share one); safe while earlier ones are open.
	Open func(t *testing.T) portable.Backend
	// Unavailable returns a new, empty, migrated, open backend and two functions:
	// breakIt makes the storage unavailable (every write fails, and reads too
	// where the backend cannot serve them), restore undoes it. The backend's
	// per-call timeout is short (2 s at most).
	Unavailable func(t *testing.T) (b plantstore.Backend, breakIt, restore func())
	// NoSnapshot says that the backend's Snapshot returns
	// errors.ErrUnsupported (SQLite in memory: without a WAL a read
	// transaction blocks every commit); the suite checks that it does.
	NoSnapshot bool
}

// Run runs the conformance suite against the backends that b opens.
func Run(t *testing.T, b Backends) {
	if b.Open == nil || b.Unavailable == nil {
		t.Fatal("storetest: Backends.Open and Backends.Unavailable are both required")
	}
	t.Run("Ping", func(t *testing.T) {
		if err := b.Open(t).Ping(t.Context()); err != nil {
			t.Fatal(err)
		}
	})

	// The areas run in parallel (each case opens backends of its own), and
	// each area's row-level contracts have a subtest of their own, apart
	// from what the service makes of them, so a broken contract is named
	// as such.
	for _, area := range []struct {
		name string
		run  func(*testing.T, Backends)
	}{
		{"PlantStore", testPlantStore},
		{"BulkInsert", testBulkInsert},
		{"CreatePlant", testCreatePlant},
		{"FindPlantByID", testFindPlantByID},
		{"FindPlants", testFindPlants},
		{"DeletePlant", testDeletePlant},
		{"UpdatePlantStore", testUpdatePlantStore},
		{"UpdatePlant", testUpdatePlant},
		{"ImportPlants", testImportPlants},
		{"Events", testEvents},

		{"TokenStore", testTokenStore},
		{"CreateToken", testCreateToken},
		{"Authenticate", testAuthenticate},
		{"FindTokens", testFindTokens},
		{"RevokeToken", testRevokeToken},
		{"CreateFirstToken", testCreateFirstToken},
		{"OwnerTokenStore", testOwnerTokenStore},
		{"MintToken", testMintToken},
		{"OwnerTokens", testOwnerTokens},
		{"TokenLimitStore", testTokenLimitStore},
		{"TokenLimits", testTokenLimits},

		{"WebhookStore", testWebhookStore},
		{"OutboxStore", testOutboxStore},
		{"Subscriptions", testSubscriptions},
		{"Outbox", testOutbox},
		{"WebhookOps", testWebhookOps},

		{"TableStore", testTableStore},

		{"Unavailable", testUnavailable},
	} {
		t.Run(area.name, func(t *testing.T) {
			t.Parallel()
			area.run(t, b)
		})
	}
}

// open returns a new backend and the services over it, with the real clock
// unless c sets another.
func open(t *testing.T, bs Backends, c service.Config) (portable.Backend, *service.Services) {
	t.Helper()
	b := bs.Open(t)
	return b, service.New(b, c)
}

// openServices returns the services over a new backend, with the real clock.
func openServices(t *testing.T, bs Backends) *service.Services {
	t.Helper()
	_, svc := open(t, bs, service.Config{})
	return svc
}

// fixedNow is the time the cases that control the clock start from, and
// of rows the suite writes itself. It has nanoseconds, which a backend may
// round to microseconds.
var fixedNow = time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC)

// elsewhere is a zone other than UTC: a backend stores the instant, whatever
// the zone of the time it is given.
var elsewhere = time.FixedZone("UTC+05:30", 5*3600+1800)

// clock is a clock a case sets and advances (service.Config.Now).
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock(now time.Time) *clock { return &clock{now: now} }

// Now returns the clock's time.
func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set sets the clock to now.
func (c *clock) Set(now time.Time) {
	c.mu.Lock()
	c.now = now
	c.mu.Unlock()
}

// Add advances the clock by d and returns the new time.
func (c *clock) Add(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

// equateTime makes cmp treat times less than a microsecond apart as equal:
// PostgreSQL keeps microseconds (rounded), and a time compared may be the
// one given to the store (with nanoseconds) or the one read back.
var equateTime = cmp.Comparer(func(a, b time.Time) bool {
	d := a.Sub(b)
	return -time.Microsecond < d && d < time.Microsecond
})

// checkTimeBetween fails unless got, a timestamp the service set from the
// real clock during a call, lies between before and after (taken around the
// call), to the microsecond.
func checkTimeBetween(t *testing.T, what string, got, before, after time.Time) {
	t.Helper()
	if got.Before(before.Add(-time.Microsecond)) || got.After(after.Add(time.Microsecond)) {
		t.Fatalf("%s = %v, want between %v and %v (the time of the call)", what, got, before.Round(0), after.Round(0))
	}
}

// checkTime fails unless got is want to the microsecond.
func checkTime(t *testing.T, what string, got, want time.Time) {
	t.Helper()
	if d := got.Sub(want); d <= -time.Microsecond || d >= time.Microsecond {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

// checkCode fails unless err is a domain error with code want.
func checkCode(t *testing.T, what string, err error, want int32) {
	t.Helper()
	if got := plantstore.ErrorCode(err); got != want {
		t.Fatalf("%s: error %v (code %d), want code %d", what, err, got, want)
	}
}

// checkIs fails unless errors.Is(err, target).
func checkIs(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: error %v, want one that is %q", what, err, target)
	}
}

func ptr[T any](v T) *T { return &v }
