package sqlite

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pressly/goose/v3"

	"github.com/plantstore/plantstore/internal/testkit/storetest"
)

// TestMigrateEventFacts: rows written under version 8 (JSON payloads and
// event data, types as text) read back after migration 9 as facts that
// render the same bytes (storetest.CheckLegacyRows).
func TestMigrateEventFacts(t *testing.T) {
	db, p := migratedTo(t, 8)
	for _, r := range storetest.LegacyRows() {
		var cols, marks []string
		var args []any
		for c, v := range r.Values {
			if tm, ok := v.(time.Time); ok {
				v = tm.UnixNano()
			}
			cols, marks, args = append(cols, c), append(marks, "?"), append(args, v)
		}
		if _, err := db.write.ExecContext(t.Context(), `INSERT INTO `+r.Table+` (`+strings.Join(cols, ", ")+`) VALUES (`+strings.Join(marks, ", ")+`)`, args...); err != nil {
			t.Fatalf("%s: %v", r.Table, err)
		}
	}
	if _, err := db.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	storetest.CheckLegacyRows(t, db)
	// The way back runs too (its bodies are SQLite's JSON of the facts).
	if _, err := p.DownTo(t.Context(), 8); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// TestMigrateAttemptErrors: attempts' errors written under version 10 name
// the kind of failure only after migration 11 (no address, no name server).
func TestMigrateAttemptErrors(t *testing.T) {
	db, _ := migratedTo(t, 10)
	rows := storetest.LegacyAttemptErrors()
	for i, r := range rows {
		if _, err := db.write.ExecContext(t.Context(), `INSERT INTO webhook_attempts (subscription_id, message_id, plant_id, attempt, attempted_at, error, duration_us, state) VALUES ('whk_1', ?, 1, 1, 0, ?, 0, 'failed')`, fmt.Sprint("msg_", i), r.Old); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		var got string
		if err := db.write.QueryRowContext(t.Context(), `SELECT error FROM webhook_attempts WHERE message_id = ?`, fmt.Sprint("msg_", i)).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != r.Want {
			t.Errorf("%q migrated to %q, want %q", r.Old, got, r.Want)
		}
	}
}

// migratedTo opens a new database file migrated up to version.
func migratedTo(t *testing.T, version int64) (*DB, *goose.Provider) {
	t.Helper()
	db := NewDB(filepath.Join(t.TempDir(), "plantstore.db"))
	if err := db.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	p, err := db.provider()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(t.Context(), version); err != nil {
		t.Fatal(err)
	}
	return db, p
}
