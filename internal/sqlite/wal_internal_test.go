//go:build cgo

package sqlite

import (
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
)

// TestWALAutocheckpoint: DB.WALAutocheckpoint is the write connection's
// PRAGMA wal_autocheckpoint: 0 keeps SQLite's default, negative is off.
func TestWALAutocheckpoint(t *testing.T) {
	for _, tt := range []struct{ set, want int }{{0, 1000}, {-1, 0}, {50, 50}} {
		t.Run(fmt.Sprint(tt.set), func(t *testing.T) {
			db := openInternal(t, func(db *DB) { db.WALAutocheckpoint = tt.set })
			var got int
			if err := db.write.QueryRow("PRAGMA wal_autocheckpoint").Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("wal_autocheckpoint = %d, want %d", got, tt.want)
			}
		})
	}
}

// TestWriteTempStore: the write connection keeps its statement journals
// (and any temporary table) in memory, whatever DB.WALAutocheckpoint says;
// the readers keep SQLite's default, files.
func TestWriteTempStore(t *testing.T) {
	for _, set := range []int{0, -1, 50} {
		t.Run(fmt.Sprint(set), func(t *testing.T) {
			db := openInternal(t, func(db *DB) { db.WALAutocheckpoint = set })
			var write, read int
			if err := db.write.QueryRow("PRAGMA temp_store").Scan(&write); err != nil {
				t.Fatal(err)
			}
			if err := db.read.QueryRow("PRAGMA temp_store").Scan(&read); err != nil {
				t.Fatal(err)
			}
			if write != 2 || read != 0 {
				t.Fatalf("temp_store: write connection %d, readers %d; want 2 (MEMORY) and 0 (DEFAULT)", write, read)
			}
		})
	}
}

// TestWALInfo: WALInfo reports the WAL file's size, and moves
// LastCheckpoint only when a checkpoint completed since the last call, by
// another connection here (as Litestream's): a TRUNCATE checkpoint (the file
// shrinks), or a PASSIVE one followed by a commit that starts the WAL over
// (a new header). Writes alone do not move it.
func TestWALInfo(t *testing.T) {
	ctx := t.Context()
	before := time.Now()
	// Automatic checkpoints off: only the other connection's count.
	db := openInternal(t, func(db *DB) { db.WALAutocheckpoint = -1 })
	next := int64(0)
	write := func() {
		t.Helper()
		next++
		if _, err := db.BulkInsertPlants(ctx, []*plantstore.Plant{{Owner: "alice", ID: next, Name: "Fern"}}); err != nil {
			t.Fatal(err)
		}
	}
	info := func() WALInfo {
		t.Helper()
		i, err := db.WALInfo()
		if err != nil {
			t.Fatal(err)
		}
		return i
	}
	other, err := sql.Open("sqlite3", "file:"+db.Path+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	checkpoint := func(mode string) {
		t.Helper()
		var busy, log, done int
		if err := other.QueryRow("PRAGMA wal_checkpoint("+mode+")").Scan(&busy, &log, &done); err != nil {
			t.Fatal(err)
		}
		if busy != 0 || log != done {
			t.Fatalf("checkpoint %s: busy %d, %d of %d frames", mode, busy, done, log)
		}
	}

	opened := info().LastCheckpoint
	if opened.Before(before) {
		t.Fatalf("LastCheckpoint before any = %v, want the open time (after %v)", opened, before)
	}
	write()
	write()
	i := info()
	if i.Bytes <= 32 {
		t.Fatalf("WAL bytes after writes = %d, want frames", i.Bytes)
	}
	if !i.LastCheckpoint.Equal(opened) {
		t.Fatalf("writes moved LastCheckpoint: %v, was %v", i.LastCheckpoint, opened)
	}

	checkpoint("TRUNCATE")
	i = info()
	if i.Bytes != 0 {
		t.Fatalf("WAL bytes after a TRUNCATE checkpoint = %d, want 0", i.Bytes)
	}
	truncated := i.LastCheckpoint
	if !truncated.After(opened) {
		t.Fatalf("LastCheckpoint after a TRUNCATE checkpoint = %v, want after %v", truncated, opened)
	}
	write() // a new header on an empty file: no checkpoint
	if got := info().LastCheckpoint; !got.Equal(truncated) {
		t.Fatalf("a write after the truncation moved LastCheckpoint: %v, was %v", got, truncated)
	}

	checkpoint("PASSIVE")
	if got := info().LastCheckpoint; !got.Equal(truncated) {
		t.Fatalf("LastCheckpoint moved before the WAL started over: %v, was %v", got, truncated)
	}
	write() // every frame is in the database: this commit starts the WAL over
	if got := info().LastCheckpoint; !got.After(truncated) {
		t.Fatalf("LastCheckpoint after the WAL started over = %v, want after %v", got, truncated)
	}
}

// TestWALInfo_Memory: a memory database has no WAL.
func TestWALInfo_Memory(t *testing.T) {
	db := openInternal(t, func(db *DB) { db.Memory = true })
	if _, err := db.WALInfo(); err == nil {
		t.Fatal("WALInfo of a memory database: no error")
	}
}
