package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/postgres"
	"github.com/plantstore/plantstore/internal/service"
)

var fixedNow = time.Date(2025, 3, 1, 12, 0, 0, 123456000, time.UTC)

func ptr[T any](v T) *T { return &v }

func newToken(t *testing.T) *plantstore.Token {
	t.Helper()
	tok, _, err := plantstore.NewToken("alice", nil, 0, fixedNow)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// BulkInsertPlants skips the keys that exist, in the table or earlier in
// the same call, and counts only the rows it stored.
func TestBulkInsertPlants_SkipsExisting(t *testing.T) {
	t.Parallel()
	db := MustOpenDB(t)
	ctx := t.Context()
	fern := &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", CreatedAt: fixedNow}
	if _, _, err := insert3(db.InsertPlant(ctx, fern, nil)); err != nil {
		t.Fatal(err)
	}
	n, err := db.BulkInsertPlants(ctx, []*plantstore.Plant{
		{Owner: "alice", ID: 1, Name: "Not Fern", CreatedAt: fixedNow}, // exists
		{Owner: "alice", ID: 2, Name: "Ivy", Tag: ptr(""), CreatedAt: fixedNow},
		{Owner: "alice", ID: 2, Name: "Ivy again", CreatedAt: fixedNow}, // earlier in the call
		{Owner: "bob", ID: 1, Name: "Cactus", Tag: ptr("spiky"), CreatedAt: fixedNow},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := n, 2; got != want {
		t.Fatalf("stored %d, want %d", got, want)
	}
	for _, want := range []*plantstore.Plant{fern, {Owner: "alice", ID: 2, Name: "Ivy", Tag: ptr("")}} {
		got, err := db.FindPlant(ctx, want.Owner, want.ID)
		if err != nil || !got.SameContent(want) {
			t.Fatalf("stored %+v, %v; want %+v", got, err, want)
		}
	}
	if n, err := db.BulkInsertPlants(ctx, nil); n != 0 || err != nil {
		t.Fatalf("empty bulk insert: %d, %v", n, err)
	}
}

// A batch of 50,000 rows, half of them new, in one call.
func TestBulkInsertPlants_Large(t *testing.T) {
	t.Parallel()
	const n = 50_000
	db := MustOpenDB(t)
	rows := func(from, to int64) []*plantstore.Plant {
		var ps []*plantstore.Plant
		for id := from; id < to; id++ {
			p := &plantstore.Plant{Owner: "alice", ID: id, Name: fmt.Sprintf("plant %d", id), CreatedAt: fixedNow}
			if id%2 == 0 {
				p.Tag = ptr("even")
			}
			ps = append(ps, p)
		}
		return ps
	}
	for _, tt := range []struct {
		from, to int64
		want     int
	}{
		{0, n / 2, n / 2},
		{n / 4, n/4 + n, n * 3 / 4},
	} {
		start := time.Now()
		got, err := db.BulkInsertPlants(t.Context(), rows(tt.from, tt.to))
		if err != nil {
			t.Fatal(err)
		}
		if got != tt.want {
			t.Fatalf("ids %d..%d: stored %d, want %d", tt.from, tt.to, got, tt.want)
		}
		t.Logf("%d rows, %d new: %v", tt.to-tt.from, got, time.Since(start))
	}
}

// A unique violation (SQLSTATE 23505) is plantstore.ErrExists.
func TestErrExists(t *testing.T) {
	t.Parallel()
	db := MustOpenDB(t)
	ctx := t.Context()
	tok := newToken(t)
	if err := db.InsertToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	sameHash := newToken(t)
	sameHash.Hash = tok.Hash
	sameID := newToken(t)
	sameID.ID = tok.ID
	for name, dup := range map[string]*plantstore.Token{"Hash": sameHash, "ID": sameID} {
		if err := db.InsertToken(ctx, dup); !errors.Is(err, plantstore.ErrExists) {
			t.Fatalf("InsertToken of a taken %s: err = %v, want ErrExists", name, err)
		}
	}
	sub := &plantstore.Subscription{ID: "whk_1", Owner: "alice", URL: "http://127.0.0.1:9", Secret: "whsec_1", CreatedAt: fixedNow}
	if err := db.InsertSubscription(ctx, sub, plantstore.DefaultMaxSubscriptions); err != nil {
		t.Fatal(err)
	}
	if err := db.InsertSubscription(ctx, sub, plantstore.DefaultMaxSubscriptions); !errors.Is(err, plantstore.ErrExists) {
		t.Fatalf("InsertSubscription of a taken id: err = %v, want ErrExists", err)
	}
}

// With its cluster stopped, every call fails with ErrUnavailable within
// OpTimeout (and a second for the slack); started again, the store serves
// again without being reopened (Ping once the failed writes are no longer
// fresh: it answers from them until then).
func TestUnavailable(t *testing.T) {
	t.Parallel()
	db, c := openStoppable(t)
	fern := &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", CreatedAt: fixedNow}
	calls := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"Ping", db.Ping},
		{"InsertPlant", func(ctx context.Context) error { _, _, err := insert3(db.InsertPlant(ctx, fern, nil)); return err }},
		{"FindPlant", func(ctx context.Context) error { _, err := db.FindPlant(ctx, "alice", 1); return err }},
		{"ListPlants", func(ctx context.Context) error {
			_, err := db.ListPlants(ctx, plantstore.PlantFilter{Owner: "alice", Limit: 10})
			return err
		}},
		{"DeletePlant", func(ctx context.Context) error { return errOnly(db.DeletePlant(ctx, "alice", 2, nil)) }},
		{"BulkInsertPlants", func(ctx context.Context) error {
			_, err := db.BulkInsertPlants(ctx, []*plantstore.Plant{fern})
			return err
		}},
		{"InsertFirstToken", func(ctx context.Context) error { _, err := db.InsertFirstToken(ctx, newToken(t)); return err }},
		{"ListTokens", func(ctx context.Context) error { _, err := db.ListTokens(ctx); return err }},
		{"ListAttempts", func(ctx context.Context) error {
			_, err := db.ListAttempts(ctx, plantstore.AttemptFilter{Owner: "alice", SubscriptionID: "whk_1", Limit: 10})
			return err
		}},
		{"ClaimDeliveries", func(ctx context.Context) error {
			_, err := service.New(db, service.Config{}).Outbox.ClaimDeliveries(ctx, plantstore.Claim{Lease: time.Minute, Limit: 10})
			return err
		}},
		{"OutboxStats", func(ctx context.Context) error { _, _, err := db.OutboxStats(ctx); return err }},
	}
	c.Stop(t)
	for _, tt := range calls {
		start := time.Now()
		err := tt.call(t.Context())
		took := time.Since(start)
		t.Logf("%s: %v after %v", tt.name, err, took.Round(time.Millisecond))
		if !errors.Is(err, plantstore.ErrUnavailable) {
			t.Errorf("%s: err = %v, want ErrUnavailable", tt.name, err)
		}
		if limit := db.OpTimeout + time.Second; took > limit {
			t.Errorf("%s took %v, more than %v", tt.name, took, limit)
		}
	}
	c.Start(t)
	postgres.AgeWrites(db)
	for _, tt := range calls {
		if err := tt.call(t.Context()); err != nil && !errors.Is(err, plantstore.ErrNotFound) {
			t.Errorf("%s after restart: %v", tt.name, err)
		}
	}
}

// A call that waits past OpTimeout (here, for a table lock another session
// holds) fails with ErrUnavailable about then: the wait in the group commit
// counts.
func TestUnavailable_OpTimeout(t *testing.T) {
	t.Parallel()
	db, _ := openStoppable(t)
	conn, err := pgx.Connect(t.Context(), db.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	if _, err := conn.Exec(t.Context(), `BEGIN; LOCK TABLE plants IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	p := &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", CreatedAt: fixedNow}
	start := time.Now()
	_, _, err = insert3(db.InsertPlant(t.Context(), p, nil))
	took := time.Since(start)
	if !errors.Is(err, plantstore.ErrUnavailable) {
		t.Fatalf("InsertPlant behind a lock: err = %v, want ErrUnavailable", err)
	}
	if took < db.OpTimeout-100*time.Millisecond || took > db.OpTimeout+time.Second {
		t.Fatalf("InsertPlant gave up after %v, want about OpTimeout (%v)", took, db.OpTimeout)
	}
}

// After Close, writes fail with ErrUnavailable.
func TestUnavailable_Closed(t *testing.T) {
	t.Parallel()
	db := MustOpenDB(t)
	db.Close()
	p := &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", CreatedAt: fixedNow}
	if _, _, err := insert3(db.InsertPlant(t.Context(), p, nil)); !errors.Is(err, plantstore.ErrUnavailable) {
		t.Fatalf("InsertPlant after Close: err = %v, want ErrUnavailable", err)
	}
}

// Times are stored as instants, to the microsecond, and read back in UTC.
func TestTimesUTC(t *testing.T) {
	t.Parallel()
	db := MustOpenDB(t)
	zone := time.FixedZone("UTC+05:30", 5*3600+1800)
	tok := newToken(t)
	tok.CreatedAt = fixedNow.In(zone)
	tok.ExpiresAt = ptr(fixedNow.Add(time.Hour).In(zone))
	if err := db.InsertToken(t.Context(), tok); err != nil {
		t.Fatal(err)
	}
	got, err := db.FindTokenByHash(t.Context(), tok.Hash)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ got, want time.Time }{
		{got.CreatedAt, tok.CreatedAt},
		{*got.ExpiresAt, *tok.ExpiresAt},
	} {
		if !tt.got.Equal(tt.want) || tt.got.Location() != time.UTC {
			t.Fatalf("read %v, want %v in UTC", tt.got, tt.want.UTC())
		}
	}
}
