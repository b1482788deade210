package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/plantstore/plantstore"
)

// InsertPlant stores p with its event ev, or returns the owner's plant with
// p.ID when there is one. It joins the group commit (see batch.go) and
// returns once its transaction is committed.
func (db *DB) InsertPlant(ctx context.Context, p *plantstore.Plant, ev *plantstore.Event) (plantstore.InsertResult, error) {
	op := &writeOp{plant: p, event: ev}
	if err := db.write(ctx, op); err != nil {
		return plantstore.InsertResult{}, err
	}
	return plantstore.InsertResult{Existing: op.existing, Seq: op.seq, Deliveries: op.deliveries}, nil
}

// InsertPlants stores plants with their events in one transaction of its
// own, all or none (plantstore.PlantStore): the creates' statement of the
// group commit (qCreatePlants, the plants in key order, so that concurrent
// batches lock their keys in one order), then a read of each key it found
// taken. A key taken by other content rolls the transaction back and
// fails with a *plantstore.ConflictError.
func (db *DB) InsertPlants(ctx context.Context, plants []*plantstore.Plant, evs []*plantstore.Event) ([]plantstore.InsertResult, error) {
	if len(evs) != len(plants) {
		return nil, fmt.Errorf("postgres: insert plants: %d events for %d plants", len(evs), len(plants))
	}
	if len(plants) == 0 {
		return nil, nil
	}
	ops := make([]writeOp, len(plants))
	byKey := make([]*writeOp, len(plants))
	for i, p := range plants {
		ops[i] = writeOp{plant: p, event: evs[i]}
		byKey[i] = &ops[i]
	}
	slices.SortFunc(byKey, func(a, b *writeOp) int {
		return cmp.Or(cmp.Compare(a.plant.Owner, b.plant.Owner), cmp.Compare(a.plant.ID, b.plant.ID))
	})
	var results []plantstore.InsertResult
	err := db.inTx(ctx, pgx.ReadCommitted, func(ctx context.Context, tx pgx.Tx) error {
		for i := range ops {
			ops[i].seq, ops[i].deliveries, ops[i].taken = 0, 0, false
		}
		b := &pgx.Batch{}
		queueCreates(b, byKey)
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		results = make([]plantstore.InsertResult, len(ops))
		for i := range ops {
			op := &ops[i]
			if !op.taken {
				results[i].Seq, results[i].Deliveries = op.seq, op.deliveries
				continue
			}
			p := op.plant
			old, err := scanPlant(tx.QueryRow(ctx, qFindPlant, p.Owner, p.ID), p.Owner, p.ID)
			switch {
			case errors.Is(err, plantstore.ErrNotFound):
				return plantstore.ErrContended // deleted since it blocked the insert
			case err != nil:
				return err
			case !old.SameContent(p):
				return &plantstore.ConflictError{Index: i, Existing: old}
			}
			results[i].Existing = old
		}
		return nil
	})
	var conflict *plantstore.ConflictError
	switch {
	case errors.As(err, &conflict), errors.Is(err, plantstore.ErrContended):
		return nil, err
	case err != nil:
		return nil, wrap("insert plants", err)
	}
	return results, nil
}

// DeletePlant deletes the owner's plant with id. Without an event it joins
// the group commit (and returns no plant); with one (plant.deleted, of the
// row as it was) it runs in a transaction of its own: DELETE ...
// RETURNING, then the event.
func (db *DB) DeletePlant(ctx context.Context, owner string, id int64, ev *plantstore.Event) (plantstore.WriteResult, error) {
	if ev == nil {
		return plantstore.WriteResult{}, db.write(ctx, &writeOp{del: true, plant: &plantstore.Plant{Owner: owner, ID: id}})
	}
	var res plantstore.WriteResult
	err := db.inTx(ctx, pgx.ReadCommitted, func(ctx context.Context, tx pgx.Tx) (err error) {
		res = plantstore.WriteResult{}
		if res.Plant, err = scanPlant(tx.QueryRow(ctx, qDeletePlantReturning, owner, id), owner, id); err != nil {
			return err
		}
		res.Seq, res.Deliveries, err = writeEvent(ctx, tx, ev, res.Plant)
		return err
	})
	if err != nil {
		return plantstore.WriteResult{}, wrap("delete plant", err)
	}
	return res, nil
}

// qDeletePlantReturning deletes one plant and returns it as scanPlant reads.
const qDeletePlantReturning = `DELETE FROM plants WHERE owner = $1 AND id = $2 RETURNING ` + plantColumns

// plantColumns are the columns of a plant that scanPlant reads; the owner
// and id are the caller's.
const plantColumns = `name, tag, created_at, updated_at`

// qFindPlant reads one plant.
const qFindPlant = `SELECT ` + plantColumns + ` FROM plants WHERE owner = $1 AND id = $2`

// FindPlant returns the owner's plant with id.
func (db *DB) FindPlant(ctx context.Context, owner string, id int64) (*plantstore.Plant, error) {
	ctx, cancel := db.opContext(ctx)
	defer cancel()
	var p *plantstore.Plant
	err := retry(ctx, func() (err error) {
		p, err = scanPlant(db.pool.QueryRow(ctx, qFindPlant, owner, id), owner, id)
		return err
	})
	if err != nil {
		return nil, wrap("find plant", err)
	}
	return p, nil
}

// foundPlant is a plant with room for what scanPlant reads into it: one
// allocation for the plant, its tag and the scan targets (pgtype values,
// which pgx scans into without allocating a plan wrapper per call).
type foundPlant struct {
	plantstore.Plant
	tag                  pgtype.Text
	createdAt, updatedAt pgtype.Timestamptz
}

// scanPlant scans a row of plantColumns into a plant of owner with id; no
// row is plantstore.ErrNotFound.
func scanPlant(row pgx.Row, owner string, id int64) (*plantstore.Plant, error) {
	f := &foundPlant{Plant: plantstore.Plant{Owner: owner, ID: id}}
	if err := row.Scan(&f.Name, &f.tag, &f.createdAt, &f.updatedAt); errors.Is(err, pgx.ErrNoRows) {
		return nil, plantstore.ErrNotFound
	} else if err != nil {
		return nil, err
	}
	if f.tag.Valid {
		f.Tag = &f.tag.String
	}
	f.CreatedAt, f.UpdatedAt = f.createdAt.Time, f.updatedAt.Time
	return &f.Plant, nil
}

// pageChunk bounds the room for plants that scanPage allocates at first,
// and pageText the room for their text per plant.
const (
	pageChunk = 128
	pageText  = 32
)

// scanPage scans rows of (id, name, tag, created_at, updated_at) into
// plants of owner (at most limit of them) with a few allocations per page
// rather than several per row: the plants share one slice (the owner is
// the filter's, not read), their names and tags one string, sliced, and
// the tags point into one slice of strings.
func scanPage(rows pgx.Rows, owner string, limit int) ([]*plantstore.Plant, error) {
	defer rows.Close()
	var (
		plants    = make([]plantstore.Plant, 0, max(0, min(limit, pageChunk)))
		spans     = make([][2]span, 0, cap(plants)) // each plant's name and tag in text
		text      = make([]byte, 0, pageText*cap(plants))
		name, tag = spanScanner{text: &text}, spanScanner{text: &text}
		dest      = []any{nil, &name, &tag, nil, nil} // one slice for every row's Scan
		tagged    = 0
	)
	for rows.Next() {
		plants = append(plants, plantstore.Plant{Owner: owner})
		p := &plants[len(plants)-1]
		dest[0], dest[3], dest[4] = &p.ID, &p.CreatedAt, &p.UpdatedAt
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		spans = append(spans, [2]span{name.span, tag.span})
		if !tag.span.null {
			tagged++
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	all, tags := string(text), make([]string, 0, tagged)
	page := make([]*plantstore.Plant, len(plants))
	for i, s := range spans {
		p := &plants[i]
		p.Name = all[s[0].start:s[0].end]
		if !s[1].null {
			tags = append(tags, all[s[1].start:s[1].end]) // within capacity: earlier pointers stay valid
			p.Tag = &tags[len(tags)-1]
		}
		page[i] = p
	}
	return page, nil
}

// span is where a text value's bytes are in a buffer.
type span struct {
	start, end int
	null       bool // SQL NULL
}

// spanScanner scans a text column by appending its bytes to *text and
// noting their span (pgtype.BytesScanner): no string per value.
type spanScanner struct {
	text *[]byte
	span span
}

// ScanBytes implements pgtype.BytesScanner; src is nil for SQL NULL.
func (s *spanScanner) ScanBytes(src []byte) error {
	s.span = span{start: len(*s.text), end: len(*s.text) + len(src), null: src == nil}
	*s.text = append(*s.text, src...)
	return nil
}

// qBulkInsert inserts rows given as one array per column, the last the
// plants' words (searchText); rows whose key exists (in the table, or
// earlier in the arrays) are skipped.
const qBulkInsert = `INSERT INTO plants (owner, id, name, tag, created_at, updated_at, search)
SELECT owner, id, name, tag, created_at, updated_at, ` + searchOf + `words` + searchEnd + `
FROM unnest($1::TEXT[], $2::BIGINT[], $3::TEXT[], $4::TEXT[], $5::TIMESTAMPTZ[], $6::TIMESTAMPTZ[], $7::TEXT[])
	AS input (owner, id, name, tag, created_at, updated_at, words)
ON CONFLICT (owner, id) DO NOTHING`

// BulkInsertPlants stores plants in one statement (one transaction),
// skipping keys that exist, with no outbox rows, and returns how many it
// stored. The rows travel as seven arrays in one round trip.
func (db *DB) BulkInsertPlants(ctx context.Context, plants []*plantstore.Plant) (int, error) {
	if len(plants) == 0 {
		return 0, nil
	}
	var (
		owners  = make(textArray, len(plants))
		ids     = make(int8Array, len(plants))
		names   = make(textArray, len(plants))
		tags    = make(nullTextArray, len(plants))
		created = make(timestamptzArray, len(plants))
		updated = make(timestamptzArray, len(plants))
		words   = make(textArray, len(plants))
	)
	for i, p := range plants {
		owners[i], ids[i], names[i], tags[i], created[i], updated[i] = p.Owner, p.ID, p.Name, p.Tag, p.CreatedAt, p.LastUpdated()
	}
	searchTexts(words, func(i int) *plantstore.Plant { return plants[i] })
	tag, err := db.exec(ctx, qBulkInsert, &owners, &ids, &names, &tags, &created, &updated, &words)
	if err != nil {
		return 0, wrap("bulk insert plants", err)
	}
	return int(tag.RowsAffected()), nil
}
