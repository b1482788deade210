package postgres

import (
	"testing"
	"time"

	"github.com/pressly/goose/v3"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/service"
	"github.com/plantstore/plantstore/internal/testkit/pgtest"
)

// TestLeaseByServerClock: a claim's lease ends at the server's now() plus
// the lease, whatever the claiming process's clock says (ClaimDeliveries
// takes no time), and it compares due times with the server's now().
func TestLeaseByServerClock(t *testing.T) {
	t.Parallel()
	db := openBatchDB(t)
	ctx := t.Context()
	sub := &plantstore.Subscription{ID: "whk_1", Owner: "alice", URL: "http://127.0.0.1:9/", Secret: "whsec_1", CreatedAt: fixedNow}
	if err := db.InsertSubscription(ctx, sub, plantstore.DefaultMaxSubscriptions); err != nil {
		t.Fatal(err)
	}
	mustInsert(t, db, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", CreatedAt: fixedNow})
	// Due in an hour by the server's clock.
	mustInsert(t, db, &plantstore.Plant{Owner: "alice", ID: 2, Name: "Ivy", CreatedAt: fixedNow})
	if _, err := db.pool.Exec(ctx, `UPDATE webhook_deliveries SET next_attempt_at = now() + INTERVAL '1 hour' WHERE plant_id = 2`); err != nil {
		t.Fatal(err)
	}
	tasks, err := service.New(db, service.Config{}).Outbox.ClaimDeliveries(ctx, plantstore.Claim{Lease: 10 * time.Minute, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 1 || tasks[0].Event.PlantID != 1 {
		t.Fatalf("claimed %+v, want plant 1's delivery only", tasks)
	}
	var left float64
	if err := db.pool.QueryRow(ctx, `SELECT EXTRACT(EPOCH FROM lease_until - now())::FLOAT8 FROM webhook_deliveries WHERE plant_id = 1`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left > 600 || left < 590 {
		t.Fatalf("the lease ends %.1fs after the server's now, want about 600s", left)
	}
}

// TestMigrateWebhookLimits: migration 3 gives the subscriptions a 410 had
// disabled the reason gone, and every owner with a subscription its lock
// row; down and up again keep the rows.
func TestMigrateWebhookLimits(t *testing.T) {
	t.Parallel()
	db := NewDB(pgtest.NewDatabase(t))
	if err := db.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := t.Context()
	migrate := func(fn func(p *goose.Provider) error) {
		t.Helper()
		if err := db.withMigrations(fn); err != nil {
			t.Fatal(err)
		}
	}
	migrate(func(p *goose.Provider) error { _, err := p.UpTo(ctx, 2); return err })
	if _, err := db.pool.Exec(ctx, `INSERT INTO webhook_subscriptions (id, owner, url, secret, created_at, disabled_at) VALUES
		('whk_1', 'alice', 'http://127.0.0.1:9/', 's', now(), now()), ('whk_2', 'alice', 'http://127.0.0.1:9/', 's', now(), NULL),
		('whk_3', 'bob', 'http://127.0.0.1:9/', 's', now(), NULL)`); err != nil {
		t.Fatal(err)
	}
	migrate(func(p *goose.Provider) error { _, err := p.UpTo(ctx, 3); return err })
	var gone, owners int
	if err := db.pool.QueryRow(ctx, `SELECT (SELECT COUNT(*) FROM webhook_subscriptions WHERE disabled_reason = 'gone'),
		(SELECT COUNT(*) FROM webhook_owners)`).Scan(&gone, &owners); err != nil {
		t.Fatal(err)
	}
	if gone != 1 || owners != 2 {
		t.Fatalf("after migration 3: %d subscriptions gone, %d owners; want 1, 2", gone, owners)
	}
	migrate(func(p *goose.Provider) error { _, err := p.DownTo(ctx, 2); return err })
	migrate(func(p *goose.Provider) error { _, err := p.Up(ctx); return err })
	var n int
	if err := db.pool.QueryRow(ctx, `SELECT COUNT(*) FROM webhook_subscriptions`).Scan(&n); err != nil || n != 3 {
		t.Fatalf("after down and up: %d subscriptions, %v; want 3", n, err)
	}
}
