//go:build cgo

package sqlite

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
)

// TestPing_LastWriteFailed: a batch that failed for the storage (here:
// another process holds the write lock past OpTimeout) makes Ping fail;
// once the storage serves again Ping passes by itself, through its probe
// write, with no client write in between.
func TestPing_LastWriteFailed(t *testing.T) {
	ctx := t.Context()
	db := openInternal(t, func(db *DB) { db.OpTimeout = 300 * time.Millisecond })
	if err := db.Ping(ctx); err != nil {
		t.Fatalf("Ping before: %v", err)
	}
	other := NewDB(db.Path)
	if err := other.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	tx, err := other.write.Begin() // BEGIN IMMEDIATE: holds the write lock
	if err != nil {
		t.Fatal(err)
	}
	if err := db.RevokeToken(ctx, "tok_x", time.Now()); !errors.Is(err, plantstore.ErrUnavailable) {
		t.Fatalf("write while locked: err = %v, want ErrUnavailable", err)
	}
	err = db.Ping(ctx)
	if !errors.Is(err, plantstore.ErrUnavailable) || !errors.Is(err, errWriteFailed) {
		t.Fatalf("Ping after a failed write: err = %v, want ErrUnavailable (the last write failed)", err)
	}
	if err := db.Ping(ctx); err == nil {
		t.Fatal("Ping passed while the lock is still held")
	}
	tx.Rollback()
	if err := db.Ping(ctx); err != nil {
		t.Fatalf("Ping once the lock is free: %v", err)
	}
	if db.health.lastFailure() != nil {
		t.Fatal("the probe write did not clear the last failure")
	}
}

// TestPing_Stalled: while the oldest write being committed has waited
// longer than OpTimeout plus stallGrace (a hung fsync, a frozen file
// system), Ping fails; once it is committed, Ping passes.
func TestPing_Stalled(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := openInternal(t, func(db *DB) { db.OpTimeout = 200 * time.Millisecond })
	release := holdCommitter(t, db)
	if err := db.Ping(ctx); err != nil {
		release()
		t.Fatalf("Ping while a write has just begun: %v", err)
	}
	wait := db.OpTimeout + stallGrace + 100*time.Millisecond
	// As if wait passed: the held write's recorded enqueue time moves back
	// by wait (the committer must have recorded one).
	if db.health.waited(time.Now()) <= 0 {
		release()
		t.Fatal("no write recorded as being committed")
	}
	db.health.oldest.Add(-int64(wait))
	err := db.Ping(ctx)
	if !errors.Is(err, plantstore.ErrUnavailable) || !errors.Is(err, errStalled) {
		release()
		t.Fatalf("Ping while a write has waited %v (OpTimeout 200ms): err = %v, want ErrUnavailable (stalled)", wait, err)
	}
	release()
	if err := db.Ping(ctx); err != nil {
		t.Fatalf("Ping once the write committed: %v", err)
	}
}

// TestPing_ProbeBoundedByContext: Ping waits for its probe write no longer
// than its context allows.
func TestPing_ProbeBoundedByContext(t *testing.T) {
	db := openInternal(t, nil)
	db.health.fail(errors.New("test: a failed batch"))
	release := holdCommitter(t, db)
	defer release()
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := db.Ping(ctx)
	if !errors.Is(err, plantstore.ErrUnavailable) {
		t.Fatalf("Ping with a probe stuck behind a held commit: err = %v, want ErrUnavailable", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("Ping took %v, want about its context's 100ms", took)
	}
}

// BenchmarkCheckFiles is what every batch pays for the moved-file check:
// two stat(2) calls (the database and its WAL).
func BenchmarkCheckFiles(b *testing.B) {
	path := filepath.Join(b.TempDir(), "plantstore.db")
	for _, p := range []string{path, path + "-wal"} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	var h health
	if err := h.watch(path, path+"-wal"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := h.checkFiles(); err != nil {
			b.Fatal(err)
		}
	}
}
