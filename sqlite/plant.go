package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/plantstore/plantstore"
)

const plantColumns = `owner, id, name, tag, created_at`

// InsertPlant stores p with its event ev, or returns the owner's plant with
// p.ID when there is one. It joins the group commit: consecutive creates of
// a batch share one multi-row INSERT (see insertPlants). Writes are
// serialised, so concurrent inserts of one key cannot both store.
func (db *DB) InsertPlant(ctx context.Context, p *plantstore.Plant, ev *plantstore.Event) (plantstore.InsertResult, error) {
	w := opPool.Get().(*writeOp)
	*w = writeOp{kind: opInsertPlant, plant: p, event: ev}
	if err := db.do(ctx, w); err != nil {
		return plantstore.InsertResult{}, wrap("insert plant", err) // w may still be queued: not recycled
	}
	res, err := plantstore.InsertResult{Existing: w.existing, Seq: w.seq, Deliveries: w.deliveries}, w.err
	*w = writeOp{}
	opPool.Put(w)
	return res, err
}

// maxChunk bounds the rows of one multi-row INSERT; chunks are powers of
// two, so at most 9 such statements are ever prepared.
const maxChunk = 256

// chunk is the size of the next chunk of a run of n creates: the largest
// power of two not above n or maxChunk.
func chunk(n int) int {
	c := 1
	for c*2 <= n && c*2 <= maxChunk {
		c *= 2
	}
	return c
}

// multiInsert builds the multi-row INSERT of n rows, head + n times row,
// comma-separated, + tail; those of the chunk sizes (1, 2, 4, ...
// maxChunk) are built once, so that the same text is prepared and reused.
type multiInsert struct {
	head, row, tail string
	chunks          []string // the INSERT of each chunk size
}

func newMultiInsert(head, row, tail string) *multiInsert {
	m := &multiInsert{head: head, row: row, tail: tail}
	for n := 1; n <= maxChunk; n *= 2 {
		m.chunks = append(m.chunks, m.build(n))
	}
	return m
}

// sql returns the INSERT of n rows.
func (m *multiInsert) sql(n int) string {
	for i := range m.chunks {
		if 1<<i == n {
			return m.chunks[i]
		}
	}
	return m.build(n)
}

func (m *multiInsert) build(n int) string {
	var b strings.Builder
	b.WriteString(m.head)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(m.row)
	}
	b.WriteString(m.tail)
	return b.String()
}

// insertPlantsSQL is the multi-row INSERT of n plants (a chunk size).
// RETURNING names the rows it stored (those whose key was free), in no
// particular order.
var insertPlantsSQL = newMultiInsert(`INSERT INTO plants (owner, id, name, tag, created_at) VALUES `,
	`(?,?,?,?,?)`, ` ON CONFLICT (owner, id) DO NOTHING RETURNING id, owner`).sql

// insertPlants applies a run of consecutive creates of a batch: one
// multi-row INSERT ... ON CONFLICT DO NOTHING per chunk, then for each
// create either the stored row it ran into (its key was taken, possibly by
// an earlier create of the same run: rows are inserted in order) or, when
// its owner has an enabled subscription, its outbox rows. Per-batch work is
// one statement per chunk plus one per conflict or subscribed create.
func (db *DB) insertPlants(ctx context.Context, tx *Tx, run []*writeOp) error {
	for len(run) > 0 {
		n := chunk(len(run))
		if err := db.insertChunk(ctx, tx, run[:n]); err != nil {
			return err
		}
		run = run[n:]
	}
	return nil
}

func (db *DB) insertChunk(ctx context.Context, tx *Tx, ops []*writeOp) error {
	args := make([]any, 0, 5*len(ops))
	for _, w := range ops {
		p := w.plant
		args = append(args, p.Owner, p.ID, p.Name, nullString(p.Tag), p.CreatedAt.UnixNano())
	}
	rows, err := tx.query(ctx, insertPlantsSQL(len(ops)), args...)
	if err != nil {
		return err
	}
	var id int64
	var owner sql.RawBytes
	for rows.Next() {
		if err := rows.Scan(&id, &owner); err != nil {
			rows.Close()
			return err
		}
		// The first create of the chunk with this key is the one stored.
		for _, w := range ops {
			if !w.inserted && w.plant.ID == id && w.plant.Owner == string(owner) {
				w.inserted = true
				break
			}
		}
	}
	if err := errors.Join(rows.Close(), rows.Err()); err != nil {
		return err
	}
	for _, w := range ops {
		if !w.inserted {
			p, err := scanPlant(tx.queryRow(ctx, qFindPlant, w.plant.Owner, w.plant.ID))
			switch {
			case errors.Is(err, sql.ErrNoRows):
				w.err = plantstore.ErrContended // cannot happen: writes are serialised
			case err != nil:
				return err
			}
			w.existing = p
		}
	}
	return db.writeCreateEvents(ctx, tx, ops)
}

// DeletePlant deletes the owner's plant with id, with ev (plant.deleted)
// when set. It joins the group commit.
func (db *DB) DeletePlant(ctx context.Context, owner string, id int64, ev *plantstore.Event) (plantstore.WriteResult, error) {
	w := &writeOp{kind: opDeletePlant, plant: &plantstore.Plant{Owner: owner, ID: id}, event: ev}
	if err := db.do(ctx, w); err != nil {
		return plantstore.WriteResult{}, wrap("delete plant", err)
	}
	if w.err != nil {
		return plantstore.WriteResult{}, w.err
	}
	return plantstore.WriteResult{Plant: w.existing, Seq: w.seq, Deliveries: w.deliveries}, nil
}

// mustAffect returns plantstore.ErrNotFound when res changed no row.
func mustAffect(res sql.Result, op string) error {
	n, err := res.RowsAffected()
	switch {
	case err != nil:
		return wrap(op, err)
	case n == 0:
		return plantstore.ErrNotFound
	}
	return nil
}

func scanPlant(s scanner) (*plantstore.Plant, error) {
	var p plantstore.Plant
	var tag sql.NullString
	var created int64
	if err := s.Scan(&p.Owner, &p.ID, &p.Name, &tag, &created); err != nil {
		return nil, err
	}
	if tag.Valid {
		p.Tag = &tag.String
	}
	p.CreatedAt = fromNanos(created)
	return &p, nil
}

// BulkInsertPlants stores plants in one write transaction, skipping ids that
// exist, with no outbox rows, and returns how many it stored: multi-row
// INSERT ... ON CONFLICT DO NOTHING statements of up to maxChunk rows.
func (db *DB) BulkInsertPlants(ctx context.Context, plants []*plantstore.Plant) (int, error) {
	stored := 0
	err := db.update(ctx, "bulk insert plants", func(ctx context.Context, tx *Tx) error {
		stored = 0
		for rest := plants; len(rest) > 0; {
			n := min(len(rest), maxChunk)
			args := make([]any, 0, 5*n)
			for _, p := range rest[:n] {
				args = append(args, p.Owner, p.ID, p.Name, nullString(p.Tag), p.CreatedAt.UnixNano())
			}
			q := strings.TrimSuffix(insertPlantsSQL(n), ` RETURNING id, owner`)
			res, err := tx.ExecContext(ctx, q, args...)
			if err != nil {
				return wrap("bulk insert plants", err)
			}
			k, err := res.RowsAffected()
			if err != nil {
				return wrap("bulk insert plants", err)
			}
			stored += int(k)
			rest = rest[n:]
		}
		return nil
	})
	return stored, err
}
