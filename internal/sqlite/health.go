package sqlite

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Storage faults that the driver does not report, and what Ping checks
// besides "the database answers a query":
//
//   - The file moved. SQLite keeps writing into the file it opened even
//     after that file was deleted or renamed (in WAL mode it does not check),
//     so commits would succeed into a file that is gone at the next start.
//     Open records the identity (device and inode) of the database file and
//     of its WAL; the committer after every commit, and Ping, compare them
//     with the files now at those paths. A difference, or a missing file, is
//     ErrMoved for that batch and for every call after it (reads included,
//     at the cost of an atomic load), until the process restarts: the writes
//     of the batch that found it were committed into a file no longer at the
//     path, so they are answered 503, never 200.
//   - The last write failed. A batch that failed for the storage (disk full,
//     read-only, I/O error, busy past the timeout, the file moved) makes Ping
//     fail until a later commit succeeds. Ping itself then tries one small
//     write (a probe through the group commit: PRAGMA user_version rewritten
//     to its value, one page and one fsync), so readiness comes back once
//     writes do even when no client writes.
//   - Writes are stalled. The enqueue time of the first write of the batch
//     being committed is the age of the oldest write waiting (the queue is
//     FIFO). A batch may spend OpTimeout waiting for the file's write lock
//     (the busy timeout) and then fail, which the previous check covers;
//     past OpTimeout plus stallGrace it is stuck (a hung fsync, a frozen
//     file system) and Ping fails.

// ErrMoved is the error of every call once the database file, or its WAL,
// is no longer the file this DB opened at its path (deleted, renamed, or
// replaced; or its file system unmounted). Wrapped by wrap, it is
// plantstore.ErrUnavailable.
var ErrMoved = errors.New("sqlite: the database file was moved or deleted while open")

// ErrNoDatabase is the error of Open when the database file does not exist
// and DB.MustExist is set.
var ErrNoDatabase = errors.New("sqlite: database file does not exist")

// ErrOrphanWAL is the error of Open when the database file does not exist
// but its WAL or shared memory file does: the database was deleted or moved
// (the WAL may hold its last commits). Open never creates a database beside
// them: SQLite would discard that WAL.
var ErrOrphanWAL = errors.New("sqlite: the database file is missing but its WAL is not")

// Errors of Ping that the driver does not give; wrap marks them
// plantstore.ErrUnavailable.
var (
	errStalled     = errors.New("sqlite: writes are stalled")
	errWriteFailed = errors.New("sqlite: the last write failed")
	errFileCheck   = errors.New("sqlite: cannot check the database file")
)

// storageFault reports the errors of this file that mean the storage cannot
// serve now.
func storageFault(err error) bool {
	return errors.Is(err, ErrMoved) || errors.Is(err, errStalled) ||
		errors.Is(err, errWriteFailed) || errors.Is(err, errFileCheck)
}

// stallGrace is how much longer than OpTimeout the oldest write being
// committed may wait before Ping reports the writes stalled.
const stallGrace = time.Second

// epoch is the origin of the write queue's monotonic times (writeOp.queued).
var epoch = time.Now()

// sinceEpoch returns t as nanoseconds since epoch plus one (never zero:
// zero means "none"), on the monotonic clock.
func sinceEpoch(t time.Time) int64 { return int64(t.Sub(epoch)) + 1 }

// watchedFile is a file whose identity must not change while the DB is open.
type watchedFile struct {
	path string
	id   fileID
}

// health is what Ping knows of the writes besides the query it runs.
type health struct {
	files []watchedFile // set by Open, read-only after
	moved atomic.Bool   // latched: a watched file is no longer at its path

	// failed is the error of the last batch that failed for the storage;
	// nil once one commits.
	failed atomic.Pointer[error]
	// oldest is sinceEpoch of the enqueue time of the first write of the
	// batch being committed; zero between batches.
	oldest atomic.Int64

	probeMu sync.Mutex
	probe   *probe // the probe write in flight, if any
}

// probe is one probe write and its outcome (err is set before done closes).
type probe struct {
	done chan struct{}
	err  error
}

// watch records the identity of the files at paths; a path with no file
// is left out (the WAL exists once the database is open in WAL mode).
func (h *health) watch(paths ...string) error {
	for _, p := range paths {
		id, err := statID(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return fmt.Errorf("sqlite: open: %w", err)
		}
		h.files = append(h.files, watchedFile{path: p, id: id})
	}
	return nil
}

// checkFiles returns ErrMoved (and latches it) when a watched path no longer
// names the file that was opened. It costs one stat(2) per watched file
// (two: the database and its WAL), about 1 µs and one small allocation each
// (BenchmarkCheckFiles).
func (h *health) checkFiles() error {
	if h.moved.Load() {
		return ErrMoved
	}
	for _, f := range h.files {
		id, err := statID(f.path)
		switch {
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR), err == nil && !sameFile(id, f.id):
			h.moved.Store(true)
			return fmt.Errorf("%w: %s", ErrMoved, f.path)
		case err != nil:
			return fmt.Errorf("%w: %w", errFileCheck, err)
		}
	}
	return nil
}

// checkMoved is the check of the reads: ErrMoved once it was found, with no
// system call.
func (h *health) checkMoved() error {
	if h.moved.Load() {
		return ErrMoved
	}
	return nil
}

// committed records that a batch committed.
func (h *health) committed() {
	if h.failed.Load() != nil {
		h.failed.Store(nil)
	}
}

// fail records the error of a batch that failed for the storage.
func (h *health) fail(err error) {
	h.failed.Store(&err)
}

// lastFailure returns the error of the last failed batch, nil when a
// commit succeeded since.
func (h *health) lastFailure() error {
	if p := h.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// waited returns how long the oldest write being committed has waited
// since it was queued (zero when no batch is being committed).
func (h *health) waited(now time.Time) time.Duration {
	t := h.oldest.Load()
	if t == 0 {
		return 0
	}
	return time.Duration(sinceEpoch(now) - t)
}

// Ping reports whether the database can serve reads and writes now. It
// fails with plantstore.ErrUnavailable (wrapping the cause) when the
// database file or its WAL was moved or deleted (see ErrMoved), when the
// oldest write being committed has waited longer than OpTimeout plus one
// second, when the
// last batch failed for the storage and a probe write fails too, or when a
// query does not answer within OpTimeout. The checks cost two stat(2)
// calls and a query; the probe write runs only after a failed batch.
func (db *DB) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, db.opTimeout())
	defer cancel()
	if err := db.health.checkFiles(); err != nil {
		return wrap("ping", err)
	}
	if d := db.health.waited(time.Now()); d > db.opTimeout()+stallGrace {
		return wrap("ping", fmt.Errorf("%w: the oldest write has waited %s for its commit", errStalled, d.Round(time.Millisecond)))
	}
	if last := db.health.lastFailure(); last != nil {
		if err := db.probeWrite(ctx); err != nil {
			return wrap("ping", fmt.Errorf("%w (%w); a probe write failed too: %w", errWriteFailed, last, err))
		}
	}
	var one int
	if err := db.read.QueryRowContext(ctx, `SELECT 1`).Scan(&one); err != nil {
		return wrap("ping", err)
	}
	return nil
}

// probeWrite commits one small write through the group commit (it clears
// the last failure when it commits) and waits for it at most until ctx
// ends. Concurrent Pings share one probe; a probe left behind by its Ping
// finishes on its own (its wait for a batch is bounded by OpTimeout).
func (db *DB) probeWrite(ctx context.Context) error {
	db.health.probeMu.Lock()
	p := db.health.probe
	if p == nil {
		p = &probe{done: make(chan struct{})}
		db.health.probe = p
		go func() {
			p.err = db.update(context.Background(), "probe write", rewriteUserVersion)
			db.health.probeMu.Lock()
			db.health.probe = nil
			db.health.probeMu.Unlock()
			close(p.done)
		}()
	}
	db.health.probeMu.Unlock()
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// rewriteUserVersion writes PRAGMA user_version (unused by the schema,
// whose version is goose's table) with the value it has: the header page is
// written and, with DurabilityFull, fsynced, and nothing changes.
func rewriteUserVersion(ctx context.Context, tx *Tx) error {
	var v int64
	if err := tx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, v))
	return err
}

// checkPath is Open's check of the path before anything is created: a
// missing file is created only when MustExist is not set and no file of an
// earlier database (its WAL or shared memory) is beside it.
func (db *DB) checkPath() error {
	_, err := os.Stat(db.Path)
	switch {
	case err == nil:
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("sqlite: open %s: %w", db.Path, err)
	}
	for _, side := range []string{db.Path + "-wal", db.Path + "-shm"} {
		if _, err := os.Lstat(side); err == nil {
			// Another process may have created the database (file, then
			// WAL) between the two checks: then it is there now.
			if _, err := os.Stat(db.Path); err == nil {
				return nil
			}
			return fmt.Errorf("%w: %s does not exist, but %s does: the database was deleted or moved; restore it, or remove %s-wal and %s-shm to start a new one",
				ErrOrphanWAL, db.Path, side, db.Path, db.Path)
		}
	}
	if db.MustExist {
		return fmt.Errorf("%w: %s", ErrNoDatabase, db.Path)
	}
	return nil
}
