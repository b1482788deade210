package sqlite

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strconv"
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

// Plant queries. The owner is the caller's: it is not read back.
const (
	plantRowColumns = `id, name, tag, created_at`
	qReadPlant      = `SELECT ` + plantRowColumns + ` FROM plants WHERE owner = ?1 AND id = ?2`
)

// listQueries are the page queries: [tag filter][after an id]. The tag
// filter goes by the (owner, tag, id) index: without statistics the planner
// would walk the owner's rows by primary key and filter on tag, so a rare
// tag would cost a scan.
var listQueries = func() (q [2][2]string) {
	for tag := range 2 {
		for after := range 2 {
			from, where, n := `plants`, `owner = ?1`, 2
			if tag == 1 {
				n++
				from, where = `plants INDEXED BY plants_owner_tag_id`, where+` AND tag = ?`+strconv.Itoa(n)
			}
			if after == 1 {
				n++
				where += ` AND id > ?` + strconv.Itoa(n)
			}
			q[tag][after] = `SELECT ` + plantRowColumns + ` FROM ` + from + ` WHERE ` + where + ` ORDER BY id LIMIT ?2`
		}
	}
	return q
}()

// reader is one connection of the plant read pool.
type reader struct {
	conn  driver.Conn
	stmts map[string]driver.StmtQueryContext
	args  []driver.NamedValue
	row   []driver.Value
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
		db.readers <- &reader{conn: c, stmts: make(map[string]driver.StmtQueryContext),
			args: make([]driver.NamedValue, 0, 4), row: make([]driver.Value, 4)}
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
			for _, st := range r.stmts {
				errs = append(errs, st.(driver.Stmt).Close())
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
// that no row follows). The call is bounded by OpTimeout.
func (db *DB) queryPlants(ctx context.Context, query string, one bool, each func(row []driver.Value), args ...driver.Value) error {
	if db.readersClosed.Load() {
		return errReadersClosed
	}
	if err := db.health.checkMoved(); err != nil {
		return err
	}
	ctx, cancel := db.readContext(ctx)
	defer cancel()
	var r *reader
	select {
	case r = <-db.readers:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { db.readers <- r }()
	st, ok := r.stmts[query]
	if !ok {
		s, err := r.conn.Prepare(query)
		if err != nil {
			return err
		}
		st = s.(driver.StmtQueryContext)
		r.stmts[query] = st
	}
	r.args = r.args[:0]
	for i, v := range args {
		r.args = append(r.args, driver.NamedValue{Ordinal: i + 1, Value: v})
	}
	rows, err := st.QueryContext(ctx, r.args)
	if err != nil {
		return err
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

// plantRow reads a row of the plant queries (id, name, tag, created_at)
// into p, all but the tag, which it returns.
func plantRow(p *plantstore.Plant, row []driver.Value) (tag string, hasTag bool) {
	p.ID, _ = row[0].(int64)
	p.Name, _ = row[1].(string)
	tag, hasTag = row[2].(string)
	n, _ := row[3].(int64)
	p.CreatedAt = time.Unix(0, n).UTC()
	return tag, hasTag
}

// tagged marks, while a page is read, the plants that have a tag.
var tagged = new(string)

// FindPlant returns the owner's plant with id.
func (db *DB) FindPlant(ctx context.Context, owner string, id int64) (*plantstore.Plant, error) {
	var p *plantstore.Plant
	err := db.queryPlants(ctx, qReadPlant, true, func(row []driver.Value) {
		p = &plantstore.Plant{Owner: owner}
		if tag, ok := plantRow(p, row); ok {
			p.Tag = &tag
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

// ListPlants returns up to f.Limit of the owner's plants by id ascending:
// one range scan of the primary key (or of the tag index). The page's
// plants share one backing array, and their tags another.
func (db *DB) ListPlants(ctx context.Context, f plantstore.PlantFilter) ([]*plantstore.Plant, error) {
	tag, after := 0, 0
	args := []driver.Value{f.Owner, int64(f.Limit)}
	if f.Tag != nil {
		tag, args = 1, append(args, *f.Tag)
	}
	if f.After != nil {
		after, args = 1, append(args, *f.After)
	}
	n := min(f.Limit, 128)
	plants := make([]plantstore.Plant, 0, n)
	tags := make([]string, 0, n)
	err := db.queryPlants(ctx, listQueries[tag][after], false, func(row []driver.Value) {
		plants = append(plants, plantstore.Plant{Owner: f.Owner})
		t, ok := plantRow(&plants[len(plants)-1], row)
		if ok {
			plants[len(plants)-1].Tag = tagged
		}
		tags = append(tags, t)
	}, args...)
	if err != nil {
		return nil, wrap("list plants", err)
	}
	out := make([]*plantstore.Plant, len(plants))
	for i := range plants {
		if plants[i].Tag == tagged {
			plants[i].Tag = &tags[i] // one backing array for the page's tags
		}
		out[i] = &plants[i]
	}
	return out, nil
}
