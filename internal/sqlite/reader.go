package sqlite

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/groupcommit"
)

// The plant reads (FindPlant, ListPlants: GET /plants/{id} and GET /plants)
// take a path of their own: a pool of read-only driver connections used
// without database/sql, each with its statements prepared once and its
// argument and row buffers reused. database/sql costs, per query and per
// row, locks, a context watcher and a conversion of every column; here a
// page of 100 plants costs about half (measured in
// BenchmarkFindPlants), and the allocations left per row are the driver's
// own (a string per text column, a boxed integer per integer column).
// Every other read (tokens, subscriptions, attempts) is cold and stays on
// database/sql's pool.

// plantReaders is the size of the plant read pool.
const plantReaders = 4

// readerCacheKiB is the page cache of each plant reader (SQLite's default
// is 2 MiB). A search among millions of plants reads a few hundred rows
// scattered over the table and the full-text index: with the interior
// pages of those b-trees and the recent leaves kept, a rare word's page
// (644 matches of 10 million plants) took 1.7 ms instead of 6 ms
// (measured; search.go). It is a bound, reached only by a database that
// large: 128 MiB for the pool.
const readerCacheKiB = 32 << 10

// Plant queries. The owner is the caller's: it is not read back.
const (
	plantRowColumns = `id, name, tag, created_at, nullif(updated_at, created_at)` // see readColumns
	qReadPlant      = `SELECT ` + plantRowColumns + ` FROM plants WHERE owner = ?1 AND id = ?2`
)

// readerStmts bounds the statements a reader keeps prepared: filtered
// lists have many shapes (search.go), each a statement of its own.
const readerStmts = 128

// readerStmt is a statement a reader has prepared, and its number of
// columns (0 until its first query).
type readerStmt struct {
	stmt    driver.StmtQueryContext
	columns int
}

// reader is one connection of the plant read pool.
type reader struct {
	conn  driver.Conn
	stmts map[string]*readerStmt
	args  []driver.NamedValue
	row   []driver.Value

	owner  string       // the owner of the last read
	ownerV driver.Value // owner, boxed

	// A query is bounded by OpTimeout without a context and a timer made
	// for it (context.WithTimeout: ~10 allocations and a timer per read,
	// a quarter of a point read's cost): the reader has a context of its
	// own, which timer (re-armed per query) cancels when a query is still
	// running past its deadline; a cancelled one is replaced before the
	// next query. mu guards the rest.
	timer    *time.Timer
	mu       sync.Mutex
	ctx      context.Context
	cancel   context.CancelFunc
	running  bool      // a query is running
	deadline time.Time // of the running query
	expired  bool      // the running query was cancelled at its deadline
}

// begin starts a query bounded by d and returns the context to run it with.
func (r *reader) begin(d time.Duration) context.Context {
	r.mu.Lock()
	if r.ctx == nil || r.ctx.Err() != nil {
		r.ctx, r.cancel = context.WithCancel(context.Background())
	}
	r.running, r.expired, r.deadline = true, false, time.Now().Add(d)
	ctx := r.ctx
	r.mu.Unlock()
	r.timer.Reset(d)
	return ctx
}

// end ends the query begin started; it reports whether the query was
// cancelled at its deadline.
func (r *reader) end() (expired bool) {
	r.timer.Stop()
	r.mu.Lock()
	r.running, expired = false, r.expired
	r.mu.Unlock()
	return expired
}

// expire is the timer's function: it cancels the running query once its
// deadline has passed (a timer that fires late, for a query that has
// ended or for an earlier one, does nothing).
func (r *reader) expire() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running && !time.Now().Before(r.deadline) {
		r.expired = true
		r.cancel()
	}
}

// openReaders opens the plant read pool on dsn (read-only).
func (db *DB) openReaders(dsn string) error {
	drv := db.read.Driver()
	db.readers = make(chan *reader, plantReaders)
	for range plantReaders {
		c, err := drv.Open(dsn)
		if err != nil {
			db.closeReaders()
			return fmt.Errorf("sqlite: open: %w", err)
		}
		r := &reader{conn: c, stmts: make(map[string]*readerStmt),
			args: make([]driver.NamedValue, 0, 8), row: make([]driver.Value, 5)}
		r.timer = time.AfterFunc(time.Hour, r.expire)
		r.timer.Stop()
		db.readers <- r
	}
	return nil
}

// errReadersClosed answers plant reads after Close.
var errReadersClosed = fmt.Errorf("sqlite: database is closed: %w", groupcommit.ErrClosed)

// closeReaders closes the pool's connections: those in the pool now (Close
// runs after the server has stopped reading); reads from then on fail.
func (db *DB) closeReaders() error {
	if db.readers == nil {
		return nil
	}
	db.readersClosed.Store(true)
	var errs []error
	for {
		select {
		case r := <-db.readers:
			r.timer.Stop()
			for _, st := range r.stmts {
				errs = append(errs, st.stmt.(driver.Stmt).Close())
			}
			errs = append(errs, r.conn.Close())
		default:
			return errors.Join(errs...)
		}
	}
}

// queryPlants runs query with args on a pooled connection and calls each
// for every row (whose values are valid until the next row), or for the
// first only when one is set (a lookup by key: no second step to learn
// that no row follows). owner is the first argument (its box is the
// reader's while consecutive reads are one owner's), args the next. The
// call is bounded by OpTimeout: the wait for a connection, and the query
// (interrupted at its deadline: see reader).
func (db *DB) queryPlants(ctx context.Context, query string, one bool, each func(row []driver.Value), owner string, args ...driver.Value) (err error) {
	if db.readersClosed.Load() {
		return errReadersClosed
	}
	if err := db.health.checkMoved(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	timeout := db.opTimeout()
	var r *reader
	select {
	case r = <-db.readers:
	default: // every connection is busy: wait, within OpTimeout
		start := time.Now()
		t := time.NewTimer(timeout)
		select {
		case r = <-db.readers:
			t.Stop()
			timeout -= time.Since(start)
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
			return context.DeadlineExceeded
		}
	}
	defer func() { db.readers <- r }()
	qctx := r.begin(timeout)
	defer func() {
		if r.end() && err != nil {
			err = fmt.Errorf("%w: %w", context.DeadlineExceeded, err) // interrupted at OpTimeout
		}
	}()
	st, ok := r.stmts[query]
	if !ok {
		if len(r.stmts) >= readerStmts {
			for q, old := range r.stmts { // any one: the map's order
				old.stmt.(driver.Stmt).Close()
				delete(r.stmts, q)
				break
			}
		}
		s, err := r.conn.Prepare(query)
		if err != nil {
			return err
		}
		st = &readerStmt{stmt: s.(driver.StmtQueryContext)}
		r.stmts[query] = st
	}
	if r.owner != owner || r.ownerV == nil {
		r.owner, r.ownerV = owner, owner
	}
	r.args = append(r.args[:0], driver.NamedValue{Ordinal: 1, Value: r.ownerV})
	for i, v := range args {
		r.args = append(r.args, driver.NamedValue{Ordinal: i + 2, Value: v})
	}
	rows, err := st.stmt.QueryContext(qctx, r.args)
	if err != nil {
		return err
	}
	if st.columns == 0 { // the driver's Columns allocates: asked once
		st.columns = len(rows.Columns())
	}
	if n := st.columns; n != len(r.row) {
		if cap(r.row) < n {
			r.row = make([]driver.Value, n)
		}
		r.row = r.row[:n]
	}
	for {
		err := rows.Next(r.row)
		if err == io.EOF {
			break
		} else if err != nil {
			rows.Close()
			return err
		}
		each(r.row)
		if one {
			break
		}
	}
	return rows.Close()
}

// plantRow reads a row of the plant queries (plantRowColumns) into p, all
// but the tag, which it returns. An updated_at of NULL (created_at's, or
// a row written without one) is created_at.
func plantRow(p *plantstore.Plant, row []driver.Value) (tag string, hasTag bool) {
	p.ID, _ = row[0].(int64)
	p.Name, _ = row[1].(string)
	tag, hasTag = row[2].(string)
	n, _ := row[3].(int64)
	p.CreatedAt = time.Unix(0, n).UTC()
	p.UpdatedAt = p.CreatedAt
	if u, ok := row[4].(int64); ok && u != n {
		p.UpdatedAt = time.Unix(0, u).UTC()
	}
	return tag, hasTag
}

// tagged marks, while a page is read, the plants that have a tag.
var tagged = new(string)

// FindPlant returns the owner's plant with id.
func (db *DB) FindPlant(ctx context.Context, owner string, id int64) (*plantstore.Plant, error) {
	var p *plantstore.Plant
	err := db.queryPlants(ctx, qReadPlant, true, func(row []driver.Value) {
		pt := &struct { // one allocation for the plant and its tag
			plantstore.Plant
			tag string
		}{Plant: plantstore.Plant{Owner: owner}}
		p = &pt.Plant
		if tag, ok := plantRow(p, row); ok {
			pt.tag = tag
			p.Tag = &pt.tag
		}
	}, owner, id)
	switch {
	case err != nil:
		return nil, wrap("find plant", err)
	case p == nil:
		return nil, plantstore.ErrNotFound
	}
	return p, nil
}
