// Package storetest is the conformance suite of plantstore.Backend: both
// storage backends (sqlite, postgres) run it and must pass it unchanged, so
// that the service behaves the same on each. Cases run at two levels:
// through the service (service.New over the backend), for what a client
// sees, and on the row stores directly, for the contracts the service relies
// on but cannot show. Every case opens a backend of its own, so the areas
// run in parallel. docs/architecture.md ("Tests") lists what each level
// covers.
//
// A backend plugs in with one test:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, storetest.Backends{
//			Open:        openMigrated,  // a migrated database of its own per call
//			Unavailable: openBreakable, // one whose storage the test can take away and give back
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
	Open func(t *testing.T) portable.Database
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
		{"CreatePlants", testCreatePlants},
		{"Search", testSearch},
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
func open(t *testing.T, bs Backends, c service.Config) (portable.Database, *service.Services) {
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
