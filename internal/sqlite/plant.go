package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/textsearch"
)

// plantColumns are a plant's columns as the write path reads them back
// (rawPlant, scanPlant).
const plantColumns = `owner, id, name, tag, created_at, updated_at`

// qMaxDoc is the last docid of plant_search (its content table's rowid):
// a write transaction gives its new plants the docids after it (see
// insertChunk). Writes are serialised, and each statement reads it anew,
// so no docid is given twice, whatever wrote before in the transaction.
const qMaxDoc = `SELECT coalesce(max(docid), 0) FROM plant_search_content`

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

// InsertPlants stores plants with their events in one transaction, all or
// none (plantstore.PlantStore). The batch is one write of the group commit
// (insertBatch): it shares the transaction of the writes queued with it,
// and a conflict leaves them untouched, as the batch writes nothing then.
func (db *DB) InsertPlants(ctx context.Context, plants []*plantstore.Plant, evs []*plantstore.Event) ([]plantstore.InsertResult, error) {
	if len(evs) != len(plants) {
		return nil, fmt.Errorf("sqlite: insert plants: %d events for %d plants", len(evs), len(plants))
	}
	if len(plants) == 0 {
		return nil, nil
	}
	w := &writeOp{kind: opInsertPlants, plants: plants, events: evs}
	if err := db.do(ctx, w); err != nil {
		return nil, wrap("insert plants", err)
	}
	if w.err != nil {
		return nil, w.err
	}
	return w.results, nil
}

// insertBatch applies an opInsertPlants on the writer. It first reads which
// keys are taken, and the row of each (writes are serialised: nothing
// changes them before the batch's own INSERTs): a key taken by other
// content fails the batch with a *plantstore.ConflictError before anything
// is written, and one taken by the same content is a replay. The other plants are written as
// a run of creates (insertPlants: multi-row INSERTs, their events
// together), which then cannot meet a taken key.
func (db *DB) insertBatch(wr *writer, w *writeOp) error {
	taken, err := takenIDs(wr, w.plants)
	if err != nil {
		return err
	}
	results := make([]plantstore.InsertResult, len(w.plants))
	ops := make([]writeOp, 0, len(w.plants))
	for i, p := range w.plants {
		if !taken[p.ID] {
			ops = append(ops, writeOp{kind: opInsertPlant, plant: p, event: w.events[i]})
			continue
		}
		old, err := findPlant(wr, p.Owner, p.ID)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("plant %d: found, then not found", p.ID)
		case err != nil:
			return err
		case !old.SameContent(p):
			w.err = &plantstore.ConflictError{Index: i, Existing: old}
			return nil
		default:
			results[i].Existing = old
		}
	}
	run := make([]*writeOp, len(ops))
	for i := range ops {
		run[i] = &ops[i]
	}
	// Written in id order, as PostgreSQL's store writes a batch (in key
	// order, for its locks): the events of a batch are numbered in id
	// order on both.
	slices.SortFunc(run, func(a, b *writeOp) int { return cmp.Compare(a.plant.ID, b.plant.ID) })
	if err := db.insertPlants(wr, run); err != nil {
		return err
	}
	k := 0
	for i := range results {
		if results[i].Existing != nil {
			continue
		}
		op := &ops[k]
		k++
		if !op.inserted {
			return fmt.Errorf("plant %d was stored by another write of the transaction", op.plant.ID)
		}
		results[i].Seq, results[i].Deliveries = op.seq, op.deliveries
	}
	w.results = results
	return nil
}

// takenIDsSQL reads which of n ids of an owner have a plant.
var takenIDsSQL = newMultiInsert(`SELECT id FROM plants WHERE owner = ? AND id IN (`, `?`, `)`).sql

// takenIDs returns the ids of plants (of one owner) that the owner has a
// plant with: a query per chunk of ids rather than a lookup per plant, as
// a batch of new plants finds none.
func takenIDs(wr *writer, plants []*plantstore.Plant) (map[int64]bool, error) {
	taken := map[int64]bool{}
	for rest := plants; len(rest) > 0; {
		n := chunk(len(rest))
		piece := rest[:n]
		rest = rest[n:]
		wr.reset()
		wr.arg(piece[0].Owner)
		for _, p := range piece {
			wr.arg(p.ID)
		}
		rows, err := wr.rows(takenIDsSQL(n))
		if err != nil {
			return nil, err
		}
		for {
			row, err := wr.next(rows)
			if err == io.EOF {
				break
			} else if err != nil {
				rows.Close()
				return nil, err
			}
			id, err := int64Of(row[0])
			if err != nil {
				rows.Close()
				return nil, err
			}
			taken[id] = true
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
	}
	return taken, nil
}

// Chunks: a run of creates is written in multi-row INSERTs of exactly its
// size up to exactChunk rows (one statement for the whole run, as runs
// are batches: ~30 writes under load), and beyond that in powers of two up
// to maxChunk, and then the rest exactly. So at most exactChunk + 2
// statements of each kind are ever prepared (each a few kB of SQLite's
// memory), and a run costs one statement per kind, or a few.
const (
	exactChunk = 64
	maxChunk   = 256
)

// chunk is the size of the next chunk of a run of n creates: n itself up
// to exactChunk, else the largest power of two not above n or maxChunk.
func chunk(n int) int {
	if n <= exactChunk {
		return n
	}
	c := exactChunk
	for c*2 <= n && c*2 <= maxChunk {
		c *= 2
	}
	return c
}

// multiInsert builds the multi-row INSERT of n rows, head + n times row,
// comma-separated, + tail; those of the chunk sizes are built once, so
// that the same text is prepared and reused.
type multiInsert struct {
	head, row, tail string
	chunks          map[int]string // the INSERT of each chunk size
}

func newMultiInsert(head, row, tail string) *multiInsert {
	m := &multiInsert{head: head, row: row, tail: tail, chunks: make(map[int]string)}
	for n := 1; n <= maxChunk; n++ {
		if n <= exactChunk || n&(n-1) == 0 {
			m.chunks[n] = m.build(n)
		}
	}
	return m
}

// sql returns the INSERT of n rows.
func (m *multiInsert) sql(n int) string {
	if q, ok := m.chunks[n]; ok {
		return q
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
// particular order; insertPlantIDsSQL names them by id alone, for chunks
// whose ids are distinct (no owner string to read back per row).
//
// Each row carries the plant's words (textsearch.Document) and a docid
// (doc): the trigger plants_search_insert indexes the row in plant_search
// in the same statement (search_migration.go); a row that is not stored
// (its key was taken) leaves its docid unused.
var (
	insertPlantsSQL = newMultiInsert(`INSERT INTO plants (owner, id, name, tag, created_at, updated_at, words, doc) VALUES `,
		`(?,?,?,?,?,?,?,?)`, ` ON CONFLICT (owner, id) DO NOTHING RETURNING id, owner`).sql
	insertPlantIDsSQL = newMultiInsert(`INSERT INTO plants (owner, id, name, tag, created_at, updated_at, words, doc) VALUES `,
		`(?,?,?,?,?,?,?,?)`, ` ON CONFLICT (owner, id) DO NOTHING RETURNING id`).sql
)

// plantWords returns the words p is found by (textsearch.Document).
func plantWords(p *plantstore.Plant) string { return textsearch.Document(p.Name, p.Tag) }

// maxDoc reads qMaxDoc on the writer.
func maxDoc(w *writer) (int64, error) {
	w.reset()
	row, err := w.one(qMaxDoc)
	if err != nil {
		return 0, err
	}
	return int64Of(row[0])
}

// plantVals are a create's column values boxed for the driver once, for
// its plant row and its event's (each boxed string or large integer is an
// allocation).
type plantVals struct {
	owner, id, name, tag, created driver.Value
	nanos                         int64 // created
}

// vals boxes p's column values; the boxes of the owner and the tag are
// reused while consecutive creates have the same (a run of one tenant's
// creates, often of one kind).
func (w *writer) vals(p *plantstore.Plant) plantVals {
	if w.owner != p.Owner || w.ownerV == nil {
		w.owner, w.ownerV = p.Owner, p.Owner
	}
	v := plantVals{owner: w.ownerV, id: p.ID, name: p.Name, nanos: p.CreatedAt.UnixNano()}
	v.created = v.nanos
	if p.Tag != nil {
		if w.tag != *p.Tag || w.tagV == nil {
			w.tag, w.tagV = *p.Tag, *p.Tag
		}
		v.tag = w.tagV
	}
	return v
}

// distinctIDs reports whether no two creates of ops have the same id (of
// different owners: a key repeats only with its owner); beyond exactChunk
// it does not look and says no.
func distinctIDs(ops []*writeOp) bool {
	if len(ops) > exactChunk {
		return false
	}
	for i, a := range ops {
		for _, b := range ops[i+1:] {
			if a.plant.ID == b.plant.ID {
				return false
			}
		}
	}
	return true
}

// insertPlants applies a run of consecutive creates of a batch: one
// multi-row INSERT ... ON CONFLICT DO NOTHING per chunk, then for each
// create either the stored row it ran into (its key was taken, possibly by
// an earlier create of the same run: rows are inserted in order) or its
// event (writeCreateEvents: the run's events together) and, when its owner
// has an enabled subscription, its outbox rows. Per-run work is two
// statements per chunk and one per owner, plus one per conflict or
// subscribed create. Only the committer calls it.
func (db *DB) insertPlants(w *writer, run []*writeOp) error {
	for rest := run; len(rest) > 0; {
		n := chunk(len(rest))
		if err := db.insertChunk(w, rest[:n]); err != nil {
			return err
		}
		rest = rest[n:]
	}
	return db.writeCreateEvents(w, run)
}

func (db *DB) insertChunk(w *writer, ops []*writeOp) error {
	doc, err := maxDoc(w)
	if err != nil {
		return err
	}
	w.reset()
	for _, op := range ops {
		op.vals = w.vals(op.plant)
		w.arg(op.vals.owner)
		w.arg(op.vals.id)
		w.arg(op.vals.name)
		w.arg(op.vals.tag)
		w.arg(op.vals.created)
		if op.plant.UpdatedAt.IsZero() || op.plant.UpdatedAt.Equal(op.plant.CreatedAt) {
			w.arg(op.vals.created) // a new plant's: its box
		} else {
			w.arg(op.plant.UpdatedAt.UnixNano())
		}
		w.arg(plantWords(op.plant))
		doc++
		w.arg(doc)
	}
	byID := distinctIDs(ops)
	q := insertPlantsSQL(len(ops))
	if byID {
		q = insertPlantIDsSQL(len(ops))
	}
	rows, err := w.rows(q)
	if err != nil {
		return err
	}
	for {
		row, err := w.next(rows)
		if err == io.EOF {
			break
		} else if err != nil {
			rows.Close()
			return err
		}
		id, _ := row[0].(int64)
		var owner string
		if !byID {
			owner, _ = row[1].(string)
		}
		// The first create of the chunk with this key is the one stored.
		for _, op := range ops {
			if !op.inserted && op.plant.ID == id && (byID || op.plant.Owner == owner) {
				op.inserted = true
				break
			}
		}
	}
	if err := rows.Close(); err != nil {
		return err
	}
	for _, op := range ops {
		if !op.inserted {
			p, err := findPlant(w, op.plant.Owner, op.plant.ID)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				op.err = plantstore.ErrContended // cannot happen: writes are serialised
			case err != nil:
				return err
			}
			op.existing = p
		}
	}
	return nil
}

// findPlant reads the owner's plant id on the writer (sql.ErrNoRows: none).
func findPlant(w *writer, owner string, id int64) (*plantstore.Plant, error) {
	w.reset()
	w.arg(owner)
	w.arg(id)
	row, err := w.one(qFindPlant)
	if err != nil {
		return nil, err
	}
	return rawPlant(row)
}

// deletePlant deletes the owner's plant id on the writer and returns it
// (sql.ErrNoRows: none).
func deletePlant(w *writer, owner string, id int64) (*plantstore.Plant, error) {
	w.reset()
	w.arg(owner)
	w.arg(id)
	row, err := w.one(qDeletePlant)
	if err != nil {
		return nil, err
	}
	return rawPlant(row)
}

// rawPlant reads a row of plantColumns.
func rawPlant(row []driver.Value) (*plantstore.Plant, error) {
	var p plantstore.Plant
	var ok [4]bool
	p.Owner, ok[0] = row[0].(string)
	p.ID, ok[1] = row[1].(int64)
	p.Name, ok[2] = row[2].(string)
	created, ok3 := row[4].(int64)
	ok[3] = ok3
	if ok != [4]bool{true, true, true, true} {
		return nil, fmt.Errorf("sqlite: plant row of %T, %T, %T, %T, %T", row[0], row[1], row[2], row[3], row[4])
	}
	switch tag := row[3].(type) {
	case string:
		p.Tag = &tag
	case nil:
	default:
		return nil, fmt.Errorf("sqlite: plant tag of %T", tag)
	}
	p.CreatedAt = fromNanos(created)
	p.UpdatedAt = p.CreatedAt
	if n, ok := row[5].(int64); ok {
		p.UpdatedAt = fromNanos(n)
	}
	return &p, nil
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
	var updated sql.NullInt64
	if err := s.Scan(&p.Owner, &p.ID, &p.Name, &tag, &created, &updated); err != nil {
		return nil, err
	}
	if tag.Valid {
		p.Tag = &tag.String
	}
	p.CreatedAt = fromNanos(created)
	p.UpdatedAt = p.CreatedAt
	if updated.Valid {
		p.UpdatedAt = fromNanos(updated.Int64)
	}
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
			var doc int64
			if err := tx.queryRow(ctx, qMaxDoc).Scan(&doc); err != nil {
				return wrap("bulk insert plants", err)
			}
			args := make([]any, 0, 8*n)
			for _, p := range rest[:n] {
				doc++
				args = append(args, p.Owner, p.ID, p.Name, nullString(p.Tag), p.CreatedAt.UnixNano(), p.LastUpdated().UnixNano(), plantWords(p), doc)
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
