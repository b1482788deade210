package postgres

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/pressly/goose/v3"

	"github.com/plantstore/plantstore/internal/testkit/pgtest"
	"github.com/plantstore/plantstore/internal/testkit/storetest"
)

// TestMigrateEventFacts: rows written under version 7 (JSON payloads and
// event data, types as text) read back after migration 8 as facts that
// render the same bytes (storetest.CheckLegacyRows).
func TestMigrateEventFacts(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := NewDB(pgtest.NewDatabase(t))
	if err := db.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	to := func(version int64) {
		t.Helper()
		if err := db.withMigrations(func(p *goose.Provider) error {
			current, err := p.GetDBVersion(ctx)
			if err == nil && current > version {
				_, err = p.DownTo(ctx, version)
			} else if err == nil {
				_, err = p.UpTo(ctx, version)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	to(7)
	for _, r := range storetest.LegacyRows() {
		var cols, marks []string
		var args []any
		for c, v := range r.Values {
			cols, marks, args = append(cols, c), append(marks, "$"+strconv.Itoa(len(args)+1)), append(args, v)
		}
		if _, err := db.pool.Exec(context.Background(), `INSERT INTO `+r.Table+` (`+strings.Join(cols, ", ")+`) VALUES (`+strings.Join(marks, ", ")+`)`, args...); err != nil {
			t.Fatalf("%s: %v", r.Table, err)
		}
	}
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	storetest.CheckLegacyRows(t, db)
	// The way back runs too (its bodies are PostgreSQL's JSON of the facts).
	to(7)
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestMigrateAttemptErrors: attempts' errors written under version 9 name
// the kind of failure only after migration 10 (no address, no name server).
func TestMigrateAttemptErrors(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := NewDB(pgtest.NewDatabase(t))
	if err := db.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.withMigrations(func(p *goose.Provider) error { _, err := p.UpTo(ctx, 9); return err }); err != nil {
		t.Fatal(err)
	}
	rows := storetest.LegacyAttemptErrors()
	for i, r := range rows {
		if _, err := db.pool.Exec(ctx, `INSERT INTO webhook_attempts (subscription_id, message_id, plant_id, attempt, attempted_at, error, duration_us, state) VALUES ('whk_1', $1, 1, 1, now(), $2, 0, 'failed')`, "msg_"+strconv.Itoa(i), r.Old); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		var got string
		if err := db.pool.QueryRow(ctx, `SELECT error FROM webhook_attempts WHERE message_id = $1`, "msg_"+strconv.Itoa(i)).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != r.Want {
			t.Errorf("%q migrated to %q, want %q", r.Old, got, r.Want)
		}
	}
}
