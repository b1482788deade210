//go:build cgo

package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/groupcommit"
)

func openInternal(t *testing.T, configure func(*DB)) *DB {
	t.Helper()
	db := NewDB(filepath.Join(t.TempDir(), "plantstore.db"))
	if configure != nil {
		configure(db)
	}
	if err := db.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestWrap: the driver's errors that mean "cannot serve now" are
// plantstore.ErrUnavailable (the service answers 503 50301); the others
// are not. The check is on the driver's typed error codes.
func TestWrap(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		want bool
	}{
		{"DiskFull", sqlite3.Error{Code: sqlite3.ErrFull}, true},
		{"ReadOnlyFileSystem", sqlite3.Error{Code: sqlite3.ErrReadonly, ExtendedCode: sqlite3.ErrReadonlyDbMoved}, true},
		{"IOError", sqlite3.Error{Code: sqlite3.ErrIoErr, ExtendedCode: sqlite3.ErrIoErrFsync}, true},
		{"Busy", sqlite3.Error{Code: sqlite3.ErrBusy}, true},
		{"Locked", sqlite3.Error{Code: sqlite3.ErrLocked}, true},
		{"CannotOpen", sqlite3.Error{Code: sqlite3.ErrCantOpen}, true},
		{"Timeout", fmt.Errorf("query: %w", context.DeadlineExceeded), true},
		{"Closed", groupcommit.ErrClosed, true},
		{"Constraint", sqlite3.Error{Code: sqlite3.ErrConstraint, ExtendedCode: sqlite3.ErrConstraintUnique}, false},
		{"SQL", sqlite3.Error{Code: sqlite3.ErrError}, false},
		{"Corrupt", sqlite3.Error{Code: sqlite3.ErrCorrupt}, false},
		{"Canceled", context.Canceled, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := wrap("op", tt.err)
			if got := errors.Is(err, plantstore.ErrUnavailable); got != tt.want {
				t.Fatalf("errors.Is(wrap(%v), ErrUnavailable) = %v, want %v", tt.err, got, tt.want)
			}
			if !errors.Is(err, tt.err) && !strings.Contains(err.Error(), tt.err.Error()) {
				t.Fatalf("wrap lost the cause: %v", err)
			}
		})
	}
}

// TestDiskFull fills the database up to a size limit (PRAGMA
// max_page_count on the write connection: SQLite then fails as on a full
// disk, SQLITE_FULL): writes fail with ErrUnavailable, nothing of the
// failed write is stored, what was stored stays, and writes work again once
// there is room.
func TestDiskFull(t *testing.T) {
	ctx := t.Context()
	db := openInternal(t, nil)
	var pages int
	if err := db.write.QueryRow(`PRAGMA page_count`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := db.write.Exec(fmt.Sprintf(`PRAGMA max_page_count = %d`, pages+2)); err != nil {
		t.Fatal(err)
	}
	name := strings.Repeat("n", 250)
	var id int64
	var err error
	for id = 1; id <= 1000; id++ {
		p := &plantstore.Plant{Owner: "alice", ID: id, Name: name, CreatedAt: time.Now()}
		if _, _, err = insert3(db.InsertPlant(ctx, p, &plantstore.Event{Type: plantstore.EventPlantCreated, ID: fmt.Sprint("evt_", id), PlantID: id, CreatedAt: p.CreatedAt})); err != nil {
			break
		}
	}
	if !errors.Is(err, plantstore.ErrUnavailable) {
		t.Fatalf("insert %d into a full database: err = %v, want ErrUnavailable", id, err)
	}
	var se sqlite3.Error
	if !errors.As(err, &se) || se.Code != sqlite3.ErrFull {
		t.Fatalf("cause = %v, want SQLITE_FULL", err)
	}
	if _, ferr := db.FindPlant(ctx, "alice", id); !errors.Is(ferr, plantstore.ErrNotFound) {
		t.Fatalf("the failed insert left a row: %v", ferr)
	}
	if _, ferr := db.FindPlant(ctx, "alice", id-1); ferr != nil {
		t.Fatalf("a stored plant is gone after the disk filled: %v", ferr)
	}
	if _, err := db.write.Exec(`PRAGMA max_page_count = 1073741823`); err != nil {
		t.Fatal(err)
	}
	p := &plantstore.Plant{Owner: "alice", ID: id, Name: name, CreatedAt: time.Now()}
	if _, _, err := insert3(db.InsertPlant(ctx, p, &plantstore.Event{Type: plantstore.EventPlantCreated, ID: "evt_again", PlantID: id, CreatedAt: p.CreatedAt})); err != nil {
		t.Fatalf("insert once there is room: %v", err)
	}
}

// TestBusyPastTimeout: with another process holding the write lock, a write
// fails with ErrUnavailable once OpTimeout has passed, not later.
func TestBusyPastTimeout(t *testing.T) {
	db := openInternal(t, func(db *DB) { db.OpTimeout = 300 * time.Millisecond })
	other := NewDB(db.Path)
	if err := other.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	tx, err := other.write.Begin() // BEGIN IMMEDIATE: holds the write lock
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	start := time.Now()
	err = db.RevokeToken(t.Context(), "tok_x", start)
	took := time.Since(start)
	if !errors.Is(err, plantstore.ErrUnavailable) {
		t.Fatalf("write while locked: err = %v, want ErrUnavailable", err)
	}
	if took > 2*time.Second {
		t.Fatalf("write while locked took %v, want about OpTimeout (300ms)", took)
	}
}

// TestSynchronousPragma: each durability mode sets the write connection's
// PRAGMA synchronous (FULL: every commit fsyncs the WAL; NORMAL: only
// checkpoints do).
func TestSynchronousPragma(t *testing.T) {
	for _, tt := range []struct {
		mode Durability
		want int // PRAGMA synchronous: 1 NORMAL, 2 FULL
	}{
		{"", 2},
		{DurabilityFull, 2},
		{DurabilityRelaxed, 1},
	} {
		t.Run(string(tt.mode), func(t *testing.T) {
			db := openInternal(t, func(db *DB) { db.Durability = tt.mode })
			var got int
			if err := db.write.QueryRow(`PRAGMA synchronous`).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("PRAGMA synchronous = %d, want %d", got, tt.want)
			}
		})
	}
	t.Run("Unknown", func(t *testing.T) {
		db := NewDB(filepath.Join(t.TempDir(), "plantstore.db"))
		db.Durability = "sometimes"
		if err := db.Open(t.Context()); err == nil {
			db.Close()
			t.Fatal("Open with an unknown durability succeeded")
		}
	})
}

// TestMigrateTokenTimes: migration 3 turns the TEXT token times of
// version 2 into integer nanoseconds without losing a nanosecond or a NULL.
func TestMigrateTokenTimes(t *testing.T) {
	ctx := context.Background()
	db := NewDB(filepath.Join(t.TempDir(), "plantstore.db"))
	if err := db.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	p, err := db.provider()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 2); err != nil {
		t.Fatal(err)
	}
	created := time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC)
	revoked := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	if _, err := db.write.Exec(`INSERT INTO tokens (id, hash, owner, scopes, created_at, expires_at, revoked_at) VALUES
		('tok_a', x'01', 'alice', 'plants:read', '2025-03-01T12:00:00.123456789Z', NULL, '2026-01-02T03:04:05.000000006Z')`); err != nil {
		t.Fatal(err)
	}
	if res, err := p.UpTo(ctx, 3); err != nil || len(res) != 1 {
		t.Fatalf("UpTo(3) = %d, %v; want 1 migration applied", len(res), err)
	}
	// The store reads the newest schema: migrate the rest of the way, then
	// read (a token issued before the last4 column has none).
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	tok, err := db.FindTokenByHash(ctx, []byte{1})
	if err != nil {
		t.Fatal(err)
	}
	if !tok.CreatedAt.Equal(created) || tok.ExpiresAt != nil || tok.RevokedAt == nil || !tok.RevokedAt.Equal(revoked) || tok.Last4 != "" {
		t.Fatalf("after migration: created %v, expires %v, revoked %v, last4 %q; want %v, nil, %v, none",
			tok.CreatedAt, tok.ExpiresAt, tok.RevokedAt, tok.Last4, created, revoked)
	}
	if _, err := p.DownTo(ctx, 2); err != nil {
		t.Fatalf("down: %v", err)
	}
	var text string
	if err := db.write.QueryRow(`SELECT created_at FROM tokens`).Scan(&text); err != nil {
		t.Fatal(err)
	}
	if want := "2025-03-01T12:00:00.123456789Z"; text != want {
		t.Fatalf("after down: created_at %q, want %q", text, want)
	}
}
