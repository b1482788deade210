package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"sync"
	"time"
)

// The WAL and its checkpoints, for continuous replication (Litestream) and
// for the metrics of the WAL.
//
// SQLite's automatic checkpoint runs in the connection that commits: after a
// commit that leaves DB.WALAutocheckpoint pages or more in the WAL, it copies
// the frames into the database file (a PASSIVE checkpoint). When every frame
// is copied and no reader needs them, the next commit starts the WAL over
// from its beginning: its header gets a new checkpoint sequence number and
// salt (https://sqlite.org/fileformat2.html#walformat). That restart is what
// bounds the WAL; a TRUNCATE checkpoint (Litestream's, past a size) cuts the
// file to nothing instead.

// walConnector opens the write connection and runs the pragmas that the
// driver's DSN cannot carry (PRAGMA wal_autocheckpoint) on every new
// connection, so a connection database/sql opens again has them too.
type walConnector struct {
	drv     driver.Driver
	dsn     string
	pragmas []string
}

func (c walConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.drv.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	ex, ok := conn.(driver.ExecerContext)
	if !ok && len(c.pragmas) > 0 {
		conn.Close()
		return nil, errors.New("sqlite: the driver cannot run pragmas")
	}
	for _, p := range c.pragmas {
		if _, err := ex.ExecContext(ctx, p, nil); err != nil {
			conn.Close()
			return nil, fmt.Errorf("sqlite: %s: %w", p, err)
		}
	}
	return conn, nil
}

func (c walConnector) Driver() driver.Driver { return c.drv }

// openWrite opens the write pool on dsn, with PRAGMA wal_autocheckpoint set
// as DB.WALAutocheckpoint says, and the statement journals in memory.
//
// A statement that writes several rows and may fail half-way (a multi-row
// INSERT whose triggers write the full-text index) keeps a statement
// journal: a copy of each page it changes that existed when it began, to
// undo the statement alone. SQLite writes that journal
// to a temporary file once it passes 64 KiB, which a batch of creates
// does: a file opened and some forty pwrite calls per commit that nothing
// ever reads back. temp_store = MEMORY keeps statement journals in memory
// (measured in BenchmarkCommit, batches of 31: 4-5 µs of CPU less per
// create, a sixth of the committer's). The write connection's statements
// are bounded (LIMIT) and the migrations have their own pool, so no large
// sort or temporary table moves into memory with them.
func (db *DB) openWrite(dsn string) (*sql.DB, error) {
	pragmas := []string{"PRAGMA temp_store = MEMORY"}
	switch n := db.WALAutocheckpoint; {
	case n < 0:
		pragmas = append(pragmas, "PRAGMA wal_autocheckpoint = 0")
	case n > 0:
		pragmas = append(pragmas, "PRAGMA wal_autocheckpoint = "+strconv.Itoa(n))
	}
	probe, err := sql.Open("sqlite3", "") // only for its driver: opens nothing
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(walConnector{drv: probe.Driver(), dsn: dsn, pragmas: pragmas}), nil
}

// WALInfo is what the WAL of a database file shows at one moment.
type WALInfo struct {
	// Bytes is the size of the WAL file (0 when there is none). SQLite
	// writes the WAL over from its beginning after a checkpoint restarts
	// it, so this is the largest the WAL grew since the file was last
	// truncated or deleted: it grows for good only while no checkpoint
	// completes.
	Bytes int64
	// LastCheckpoint is the last time this process saw that a checkpoint
	// had completed, that is the WAL header's checkpoint sequence number
	// or salt changed (the WAL started over), or the file shrank or
	// disappeared (a TRUNCATE checkpoint, or the last connection closed),
	// by whichever connection or process ran it (this process's automatic
	// checkpoint, Litestream's). It is observed when WALInfo is called, so
	// it is at most one call late; before the first checkpoint seen it is
	// the time the database was opened.
	LastCheckpoint time.Time
}

// walWatch is what WALInfo compares with.
type walWatch struct {
	mu   sync.Mutex
	last time.Time // LastCheckpoint
	hdr  walHeader
}

// walHeader is the part of the WAL file that changes when it starts over.
type walHeader struct {
	size      int64
	seq       uint32 // checkpoint sequence number
	salt1     uint32
	hasHeader bool // the file holds a header (32 bytes or more)
}

// readWALHeader reads the size and the header of the WAL at path; a missing
// file is a zero walHeader.
func readWALHeader(path string) (walHeader, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return walHeader{}, nil
	} else if err != nil {
		return walHeader{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return walHeader{}, err
	}
	h := walHeader{size: fi.Size()}
	var b [32]byte
	if _, err := f.ReadAt(b[:], 0); errors.Is(err, io.EOF) {
		return h, nil // no header yet
	} else if err != nil {
		return walHeader{}, err
	}
	// Header: magic, format version, page size, checkpoint sequence number,
	// salt-1, salt-2, checksums; all big-endian.
	h.seq, h.salt1, h.hasHeader = binary.BigEndian.Uint32(b[12:16]), binary.BigEndian.Uint32(b[16:20]), true
	return h, nil
}

// startWALWatch records the WAL's state at Open.
func (db *DB) startWALWatch() error {
	h, err := readWALHeader(db.Path + "-wal")
	if err != nil {
		return fmt.Errorf("sqlite: read the WAL header: %w", err)
	}
	db.wal.mu.Lock()
	defer db.wal.mu.Unlock()
	db.wal.hdr, db.wal.last = h, time.Now()
	return nil
}

// WALInfo returns the size of the WAL file and the time this process last
// saw a checkpoint complete (see WALInfo). It reads the WAL's size and its
// 32-byte header; it takes no lock of SQLite's. A memory database has no
// WAL: an error.
func (db *DB) WALInfo() (WALInfo, error) {
	if db.Memory {
		return WALInfo{}, errors.New("sqlite: a memory database has no WAL")
	}
	h, err := readWALHeader(db.Path + "-wal")
	if err != nil {
		return WALInfo{}, fmt.Errorf("sqlite: read the WAL header: %w", err)
	}
	w := &db.wal
	w.mu.Lock()
	defer w.mu.Unlock()
	prev := w.hdr
	restarted := prev.hasHeader && h.hasHeader && (h.seq != prev.seq || h.salt1 != prev.salt1)
	if restarted || h.size < prev.size {
		w.last = time.Now()
	}
	w.hdr = h
	return WALInfo{Bytes: h.size, LastCheckpoint: w.last}, nil
}
