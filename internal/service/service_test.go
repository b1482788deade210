package service_test

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/service"
	"github.com/plantstore/plantstore/internal/sqlite"
)

// These tests hold the rules that are the service's alone (notifying the
// dispatcher, the injected clock, the token cache, CompleteDelivery's checks),
// over a real SQLite file. What every backend must do through the service
// is storetest's.

// MustOpenDB returns a new, migrated SQLite database in a temporary
// directory, closed at the end of the test.
func MustOpenDB(t *testing.T) *sqlite.DB {
	t.Helper()
	db := sqlite.NewDB(filepath.Join(t.TempDir(), "plantstore.db"))
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

// countingDB counts the token lookups that reach the database.
type countingDB struct {
	*sqlite.DB
	lookups atomic.Int32
}

func (db *countingDB) FindTokenByHash(ctx context.Context, hash []byte) (*plantstore.Token, error) {
	db.lookups.Add(1)
	return db.DB.FindTokenByHash(ctx, hash)
}

// clock is a clock the test sets (Config.Now).
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

// start is where the tests' clocks start: nanoseconds (SQLite keeps them)
// in a zone other than UTC (the service stores UTC).
var start = time.Date(2025, 3, 1, 17, 30, 0, 123456789, time.FixedZone("UTC+05:30", 5*3600+1800))

func ptr[T any](v T) *T { return &v }

// checkTime fails unless got is the instant want, in UTC.
func checkTime(t *testing.T, what string, got, want time.Time) {
	t.Helper()
	if !got.Equal(want) || got.Location() != time.UTC {
		t.Fatalf("%s = %v, want %v in UTC", what, got, want.UTC())
	}
}

func checkCode(t *testing.T, what string, err error, want int32) {
	t.Helper()
	if got := plantstore.ErrorCode(err); got != want {
		t.Fatalf("%s: error %v (code %d), want code %d", what, err, got, want)
	}
}

// The Notifier wakes the dispatcher after a create that stored a plant (and
// with it the webhook event), and after nothing else.
func TestNotify(t *testing.T) {
	t.Run("CreatePlant", func(t *testing.T) {
		db := MustOpenDB(t)
		ctx := t.Context()
		var calls atomic.Int32
		var visible atomic.Bool
		visible.Store(true)
		svc := service.New(db, service.Config{})
		svc.Notifier.OnDue(func() {
			// The plant is committed by the time the dispatcher is woken.
			if _, err := db.FindPlant(context.Background(), "alice", int64(calls.Add(1))); err != nil {
				visible.Store(false)
			}
		})
		check := func(what string, want int32) {
			t.Helper()
			if got := calls.Load(); got != want {
				t.Fatalf("after %s: Notify called %d times, want %d", what, got, want)
			}
		}
		if _, err := svc.Webhooks.CreateSubscription(ctx, "alice", "http://127.0.0.1:9/hooks", ""); err != nil {
			t.Fatal(err)
		}
		check("a subscription", 0)
		if _, _, err := svc.Plants.CreatePlant(ctx, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern"}); err != nil {
			t.Fatal(err)
		}
		check("a create", 1)
		if _, created, err := svc.Plants.CreatePlant(ctx, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern"}); err != nil || created {
			t.Fatalf("replay: created %v, err %v", created, err)
		}
		check("a replay", 1)
		_, _, err := svc.Plants.CreatePlant(ctx, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Moss"})
		checkCode(t, "conflict", err, plantstore.CodeConflict)
		check("a conflict", 1)
		_, _, err = svc.Plants.CreatePlant(ctx, &plantstore.Plant{Owner: "alice", ID: 2, Name: ""})
		checkCode(t, "invalid plant", err, plantstore.CodeInvalidBody)
		check("an invalid plant", 1)
		if _, err := svc.Plants.ImportPlants(ctx, []*plantstore.Plant{{Owner: "alice", ID: 5, Name: "Ivy"}}); err != nil {
			t.Fatal(err)
		}
		check("an import (no events)", 1)
		if err := svc.Plants.DeletePlant(ctx, "alice", 5); err != nil {
			t.Fatal(err)
		}
		check("a delete", 1)
		// A new plant of the same owner again, without a subscription too.
		if _, _, err := svc.Plants.CreatePlant(ctx, &plantstore.Plant{Owner: "alice", ID: 2, Name: "Ivy"}); err != nil {
			t.Fatal(err)
		}
		check("a second create", 2)
		if !visible.Load() {
			t.Fatal("Notify was called before the plant could be read")
		}
	})

	// A create whose owner has no subscription wrote no delivery: there is
	// nothing to wake the dispatcher for.
	t.Run("NoSubscriber", func(t *testing.T) {
		var calls atomic.Int32
		svc := service.New(MustOpenDB(t), service.Config{})
		svc.Notifier.OnDue(func() { calls.Add(1) })
		if _, created, err := svc.Plants.CreatePlant(t.Context(), &plantstore.Plant{Owner: "bob", ID: 1, Name: "Fern"}); err != nil || !created {
			t.Fatalf("create: created %v, err %v", created, err)
		}
		if got := calls.Load(); got != 0 {
			t.Fatalf("Notify called %d times for an owner without subscriptions, want 0", got)
		}
	})

	// Of identical concurrent creates, only the one that stored notifies.
	t.Run("ConcurrentIdentical", func(t *testing.T) {
		const n = 16
		var calls atomic.Int32
		svc := service.New(MustOpenDB(t), service.Config{})
		svc.Notifier.OnDue(func() { calls.Add(1) })
		if _, err := svc.Webhooks.CreateSubscription(t.Context(), "alice", "http://127.0.0.1:9/hooks", ""); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				_, _, errs[i] = svc.Plants.CreatePlant(t.Context(), &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern"})
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("create %d: %v", i, err)
			}
		}
		if got, want := calls.Load(), int32(1); got != want {
			t.Fatalf("Notify called %d times, want %d", got, want)
		}
	})
}

// Every timestamp the service sets comes from Config.Now, in UTC.
func TestClock(t *testing.T) {
	c := &clock{now: start}
	db := MustOpenDB(t)
	svc := service.New(db, service.Config{Now: c.Now})
	ctx := t.Context()

	t.Run("Plants", func(t *testing.T) {
		sub, err := svc.Webhooks.CreateSubscription(ctx, "alice", "http://127.0.0.1:9/hooks", "")
		if err != nil {
			t.Fatal(err)
		}
		checkTime(t, "subscription CreatedAt", sub.CreatedAt, start)

		at := c.Add(time.Minute)
		p, _, err := svc.Plants.CreatePlant(ctx, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", CreatedAt: start.Add(-time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		// Plant times are kept to the microsecond on every backend.
		checkTime(t, "CreatePlant CreatedAt", p.CreatedAt, plantstore.TruncateTime(at))
		checkTime(t, "CreatePlant UpdatedAt", p.UpdatedAt, plantstore.TruncateTime(at))
		stored, err := svc.Plants.FindPlantByID(ctx, "alice", 1)
		if err != nil {
			t.Fatal(err)
		}
		checkTime(t, "stored CreatedAt", stored.CreatedAt, plantstore.TruncateTime(at))
		_, oldest, err := svc.Outbox.OutboxStats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		checkTime(t, "event CreatedAt", oldest, plantstore.TruncateTime(at))

		importedAt := c.Add(time.Minute)
		if _, err := svc.Plants.ImportPlants(ctx, []*plantstore.Plant{{Owner: "alice", ID: 2, Name: "Ivy"}}); err != nil {
			t.Fatal(err)
		}
		imported, err := svc.Plants.FindPlantByID(ctx, "alice", 2)
		if err != nil {
			t.Fatal(err)
		}
		checkTime(t, "imported CreatedAt", imported.CreatedAt, plantstore.TruncateTime(importedAt))

		rotatedAt := c.Add(time.Minute)
		rotated, err := svc.Webhooks.RotateSecret(ctx, "alice", sub.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		if rotated.PreviousSecretUntil == nil {
			t.Fatal("PreviousSecretUntil = nil after a rotation")
		}
		checkTime(t, "PreviousSecretUntil", *rotated.PreviousSecretUntil, rotatedAt.Add(plantstore.SecretRotationGrace))
	})

	t.Run("Tokens", func(t *testing.T) {
		at := c.Add(time.Minute)
		tok, _, err := svc.Tokens.CreateToken(ctx, plantstore.TokenRequest{Owner: "alice", TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		checkTime(t, "token CreatedAt", tok.CreatedAt, at)
		if tok.ExpiresAt == nil {
			t.Fatal("ExpiresAt = nil with a TTL")
		}
		checkTime(t, "token ExpiresAt", *tok.ExpiresAt, at.Add(time.Hour))
		supplied, _, err := svc.Tokens.CreateToken(ctx, plantstore.TokenRequest{Owner: "bob", TTL: time.Hour, Secret: "a-supplied-secret-of-32-characters-or-more"})
		if err != nil {
			t.Fatal(err)
		}
		checkTime(t, "supplied token CreatedAt", supplied.CreatedAt, at)
		checkTime(t, "supplied token ExpiresAt", *supplied.ExpiresAt, at.Add(time.Hour))

		revokedAt := c.Add(time.Minute)
		if err := svc.Tokens.RevokeToken(ctx, tok.ID); err != nil {
			t.Fatal(err)
		}
		tokens, err := svc.Tokens.FindTokens(ctx)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(tokens, func(x *plantstore.Token) bool { return x.ID == tok.ID })
		if i < 0 || tokens[i].RevokedAt == nil {
			t.Fatalf("FindTokens = %+v, want the revoked token among them", tokens)
		}
		checkTime(t, "RevokedAt", *tokens[i].RevokedAt, revokedAt)

		first := &clock{now: start}
		firstSvc := service.New(MustOpenDB(t), service.Config{Now: first.Now})
		ftok, _, created, err := firstSvc.Tokens.CreateFirstToken(ctx, plantstore.TokenRequest{Owner: "admin"})
		if err != nil || !created {
			t.Fatalf("CreateFirstToken: created %v, err %v", created, err)
		}
		checkTime(t, "first token CreatedAt", ftok.CreatedAt, start)
	})
}

// Authenticate trusts a token it verified for TokenCacheTTL: a revocation
// takes effect within the TTL, expiry at once.
func TestTokenCache(t *testing.T) {
	t.Run("RevokedPassesWithinTTL", func(t *testing.T) {
		c := &clock{now: start}
		db := &countingDB{DB: MustOpenDB(t)}
		var hits []bool
		svc := service.New(db, service.Config{Now: c.Now, TokenCacheTTL: time.Minute, OnTokenCache: func(hit bool) { hits = append(hits, hit) }})
		ctx := t.Context()
		tok, secret, err := svc.Tokens.CreateToken(ctx, plantstore.TokenRequest{Owner: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			got, err := svc.Tokens.Authenticate(ctx, secret)
			if err != nil {
				t.Fatalf("Authenticate %d: %v", i, err)
			}
			if got.ID != tok.ID {
				t.Fatalf("Authenticate %d returned token %s, want %s", i, got.ID, tok.ID)
			}
		}
		if err := svc.Tokens.RevokeToken(ctx, tok.ID); err != nil {
			t.Fatal(err)
		}
		c.Add(59 * time.Second)
		if _, err := svc.Tokens.Authenticate(ctx, secret); err != nil {
			t.Fatalf("revoked token within the cache TTL: %v, want it still trusted", err)
		}
		c.Add(time.Second) // the TTL since the lookup has passed
		_, err = svc.Tokens.Authenticate(ctx, secret)
		checkCode(t, "revoked token after the cache TTL", err, plantstore.CodeTokenInvalid)
		_, err = svc.Tokens.Authenticate(ctx, secret)
		checkCode(t, "revoked token again", err, plantstore.CodeTokenInvalid)

		if diff := cmp.Diff([]bool{false, true, true, false, false}, hits); diff != "" {
			t.Fatalf("OnTokenCache hits (-want +got):\n%s", diff)
		}
		if got, want := db.lookups.Load(), int32(3); got != want {
			t.Fatalf("%d lookups, want %d (one per miss)", got, want)
		}
	})

	t.Run("TTLZeroLooksUpEveryTime", func(t *testing.T) {
		db := &countingDB{DB: MustOpenDB(t)}
		told := 0
		svc := service.New(db, service.Config{OnTokenCache: func(bool) { told++ }})
		ctx := t.Context()
		tok, secret, err := svc.Tokens.CreateToken(ctx, plantstore.TokenRequest{Owner: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if _, err := svc.Tokens.Authenticate(ctx, secret); err != nil {
				t.Fatalf("Authenticate %d: %v", i, err)
			}
		}
		if err := svc.Tokens.RevokeToken(ctx, tok.ID); err != nil {
			t.Fatal(err)
		}
		_, err = svc.Tokens.Authenticate(ctx, secret)
		checkCode(t, "revoked token without a cache", err, plantstore.CodeTokenInvalid)
		if got, want := db.lookups.Load(), int32(4); got != want {
			t.Fatalf("%d lookups, want %d (every call)", got, want)
		}
		if told != 0 {
			t.Fatalf("OnTokenCache called %d times with the cache off, want 0", told)
		}
	})

	t.Run("ExpiryNotCached", func(t *testing.T) {
		c := &clock{now: start}
		svc := service.New(MustOpenDB(t), service.Config{Now: c.Now, TokenCacheTTL: time.Hour})
		ctx := t.Context()
		_, secret, err := svc.Tokens.CreateToken(ctx, plantstore.TokenRequest{Owner: "alice", TTL: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Tokens.Authenticate(ctx, secret); err != nil {
			t.Fatal(err)
		}
		c.Add(29 * time.Second)
		if _, err := svc.Tokens.Authenticate(ctx, secret); err != nil {
			t.Fatalf("before expiry: %v", err)
		}
		c.Add(time.Second)
		_, err = svc.Tokens.Authenticate(ctx, secret)
		checkCode(t, "expired token in the cache", err, plantstore.CodeTokenInvalid)
	})

	// A refusal is not cached: a token created after its secret was refused
	// passes at once.
	t.Run("RefusalNotCached", func(t *testing.T) {
		db := &countingDB{DB: MustOpenDB(t)}
		svc := service.New(db, service.Config{TokenCacheTTL: time.Hour})
		ctx := t.Context()
		const secret = "an-operator-supplied-secret-0123456789"
		_, err := svc.Tokens.Authenticate(ctx, secret)
		checkCode(t, "unknown token", err, plantstore.CodeTokenInvalid)
		if _, _, err := svc.Tokens.CreateToken(ctx, plantstore.TokenRequest{Owner: "alice", Secret: secret}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Tokens.Authenticate(ctx, secret); err != nil {
			t.Fatalf("a token created after a refusal of its secret: %v", err)
		}
	})

	// A secret that cannot be a token is refused without a lookup.
	t.Run("MalformedNoLookup", func(t *testing.T) {
		db := &countingDB{DB: MustOpenDB(t)}
		told := 0
		svc := service.New(db, service.Config{TokenCacheTTL: time.Hour, OnTokenCache: func(bool) { told++ }})
		for _, secret := range []string{"", "short", "pst_0123", "with space and long enough to be a supplied secret"} {
			_, err := svc.Tokens.Authenticate(t.Context(), secret)
			checkCode(t, "secret "+secret, err, plantstore.CodeTokenInvalid)
		}
		if got := db.lookups.Load(); got != 0 || told != 0 {
			t.Fatalf("%d lookups and %d cache checks for malformed secrets, want none", got, told)
		}
	})
}

func TestCompleteTask(t *testing.T) {
	// setup returns the services over a new database with one claimed task
	// of a subscription.
	setup := func(t *testing.T, c *clock) (*service.Services, *plantstore.Task, *plantstore.Subscription) {
		t.Helper()
		svc := service.New(MustOpenDB(t), service.Config{Now: c.Now})
		sub, err := svc.Webhooks.CreateSubscription(t.Context(), "alice", "http://127.0.0.1:9/hooks", "")
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := svc.Plants.CreatePlant(t.Context(), &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern"}); err != nil {
			t.Fatal(err)
		}
		tasks, err := svc.Outbox.ClaimDeliveries(t.Context(), plantstore.Claim{Lease: time.Minute, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(tasks) != 1 {
			t.Fatalf("claimed %d tasks, want 1", len(tasks))
		}
		return svc, tasks[0], sub
	}

	t.Run("ErrPendingWithoutNextAttempt", func(t *testing.T) {
		c := &clock{now: start}
		svc, task, sub := setup(t, c)
		ctx := t.Context()
		err := svc.Outbox.CompleteDelivery(ctx, task, plantstore.AttemptResult{AttemptedAt: start, StatusCode: 500, State: plantstore.DeliveryPending})
		if err == nil {
			t.Fatal("CompleteDelivery of a pending result without NextAttemptAt succeeded")
		}
		// Nothing was written: no attempt, and the delivery is still leased.
		attempts, _, err := svc.Webhooks.FindAttempts(ctx, plantstore.AttemptFilter{Owner: "alice", SubscriptionID: sub.ID})
		if err != nil {
			t.Fatal(err)
		}
		if len(attempts) != 0 {
			t.Fatalf("%d attempts recorded by a refused CompleteDelivery, want 0", len(attempts))
		}
		tasks, err := svc.Outbox.ClaimDeliveries(ctx, plantstore.Claim{Lease: time.Minute, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(tasks) != 0 {
			t.Fatalf("claimed %d tasks during the lease, want 0", len(tasks))
		}
	})

	t.Run("ZeroAttemptedAtIsNow", func(t *testing.T) {
		c := &clock{now: start}
		svc, task, sub := setup(t, c)
		ctx := t.Context()
		at := c.Add(time.Second)
		next := start.Add(time.Hour)
		if err := svc.Outbox.CompleteDelivery(ctx, task, plantstore.AttemptResult{StatusCode: 503, State: plantstore.DeliveryPending, NextAttemptAt: &next}); err != nil {
			t.Fatal(err)
		}
		attempts, _, err := svc.Webhooks.FindAttempts(ctx, plantstore.AttemptFilter{Owner: "alice", SubscriptionID: sub.ID})
		if err != nil {
			t.Fatal(err)
		}
		if len(attempts) != 1 {
			t.Fatalf("%d attempts, want 1", len(attempts))
		}
		checkTime(t, "AttemptedAt", attempts[0].AttemptedAt, at)
	})

	// A result that is not pending has no next attempt, whatever it says.
	t.Run("NextAttemptDroppedWhenDone", func(t *testing.T) {
		c := &clock{now: start}
		svc, task, sub := setup(t, c)
		ctx := t.Context()
		if err := svc.Outbox.CompleteDelivery(ctx, task, plantstore.AttemptResult{AttemptedAt: start, StatusCode: 204,
			State: plantstore.DeliverySucceeded, NextAttemptAt: ptr(start.Add(time.Hour))}); err != nil {
			t.Fatal(err)
		}
		attempts, _, err := svc.Webhooks.FindAttempts(ctx, plantstore.AttemptFilter{Owner: "alice", SubscriptionID: sub.ID})
		if err != nil {
			t.Fatal(err)
		}
		if len(attempts) != 1 || attempts[0].NextAttemptAt != nil {
			t.Fatalf("attempts = %+v, want one without NextAttemptAt", attempts)
		}
	})
}
