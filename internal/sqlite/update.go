package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/plantstore/plantstore"
)

// Conditional plant writes (PATCH, and DELETE with If-Match). They join the
// group commit as generic writes: each reads the plant and writes it in
// the batch's transaction, which holds SQLite's write lock, so the check
// and the write are atomic.
const (
	// qUpdatePlant writes a plant's new name, tag, words and updated_at
	// (?4; NULL: kept); the trigger plants_search_update re-indexes it when
	// its words changed.
	qUpdatePlant = `UPDATE plants SET name = ?1, tag = ?2, words = ?3, updated_at = coalesce(?4, updated_at)
WHERE owner = ?5 AND id = ?6 RETURNING ` + plantColumns
	qDeletePlantIf = `DELETE FROM plants WHERE owner = ? AND id = ? AND name = ? AND tag IS ? RETURNING ` + plantColumns
	qPlantExists   = `SELECT 1 FROM plants WHERE owner = ? AND id = ?`
)

// UpdatePlant applies upd to the owner's plant id, only while it has
// expect's name and tag when expect is set (else ErrChanged), and returns
// the plant as stored; ErrNotFound when there is none. A patch that leaves
// the plant's name and tag as they are writes nothing, neither the row nor
// the event (Seq 0). The plant is read and written in the write's
// transaction, so the decision is atomic with and without expect. It
// joins the group commit.
func (db *DB) UpdatePlant(ctx context.Context, owner string, id int64, upd plantstore.PlantUpdate, expect *plantstore.Plant, ev *plantstore.Event) (plantstore.WriteResult, error) {
	var (
		res     plantstore.WriteResult
		outcome error // ErrNotFound or ErrChanged: the write's answer, not a failure of the batch
	)
	err := db.update(ctx, "update plant", func(ctx context.Context, tx *Tx) error {
		res, outcome = plantstore.WriteResult{}, nil
		cur, err := scanPlant(tx.queryRow(ctx, qFindPlant, owner, id))
		switch {
		case errors.Is(err, sql.ErrNoRows):
			outcome = plantstore.ErrNotFound
			return nil
		case err != nil:
			return wrap("update plant", err)
		case expect != nil && !sameNameAndTag(cur, expect):
			outcome = plantstore.ErrChanged
			return nil
		}
		next := upd.Apply(cur)
		if sameNameAndTag(cur, next) {
			res.Plant = cur // the patch changes nothing: nothing written
			return nil
		}
		var at any
		if !upd.At.IsZero() {
			at = upd.At.UnixNano()
		}
		p, err := scanPlant(tx.queryRow(ctx, qUpdatePlant, next.Name, nullable(next.Tag), plantWords(next), at, owner, id))
		if err != nil {
			return wrap("update plant", err)
		}
		res.Plant = p
		if ev != nil {
			err = tx.raw(func(w *writer) (err error) {
				res.Seq, res.Deliveries, err = db.writeEvent(w, ev, p)
				return err
			})
		}
		return err
	})
	if err != nil {
		return plantstore.WriteResult{}, err
	}
	if outcome != nil {
		return plantstore.WriteResult{}, outcome
	}
	return res, nil
}

// sameNameAndTag reports whether p and q have the same name and tag.
func sameNameAndTag(p, q *plantstore.Plant) bool {
	return p.Name == q.Name && (p.Tag == nil) == (q.Tag == nil) && (p.Tag == nil || *p.Tag == *q.Tag)
}

// DeletePlantIf deletes the owner's plant id only while it has expect's
// name and tag: ErrChanged when it has other content, ErrNotFound when
// there is none. It joins the group commit.
func (db *DB) DeletePlantIf(ctx context.Context, owner string, id int64, expect *plantstore.Plant, ev *plantstore.Event) (plantstore.WriteResult, error) {
	var (
		res     plantstore.WriteResult
		outcome error
	)
	err := db.update(ctx, "delete plant", func(ctx context.Context, tx *Tx) error {
		res, outcome = plantstore.WriteResult{}, nil
		old, err := scanPlant(tx.queryRow(ctx, qDeletePlantIf, owner, id, expect.Name, nullable(expect.Tag)))
		if err == nil {
			res.Plant = old
			if ev != nil {
				err = tx.raw(func(w *writer) (err error) {
					res.Seq, res.Deliveries, err = db.writeEvent(w, ev, old)
					return err
				})
			}
			return err
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return wrap("delete plant", err)
		}
		outcome, err = db.missingOrChanged(ctx, tx, owner, id, true)
		return wrap("delete plant", err)
	})
	if err != nil {
		return plantstore.WriteResult{}, err
	}
	if outcome != nil {
		return plantstore.WriteResult{}, outcome
	}
	return res, nil
}

// missingOrChanged tells why a conditional write matched no row: the plant
// exists (so its content was not the expected one: ErrChanged, when
// conditional) or it does not (ErrNotFound). The transaction is the write's,
// so nothing changed in between.
func (db *DB) missingOrChanged(ctx context.Context, tx *Tx, owner string, id int64, conditional bool) (outcome, err error) {
	if !conditional {
		return plantstore.ErrNotFound, nil
	}
	var one int
	switch err := tx.queryRow(ctx, qPlantExists, owner, id).Scan(&one); {
	case errors.Is(err, sql.ErrNoRows):
		return plantstore.ErrNotFound, nil
	case err != nil:
		return nil, err
	}
	return plantstore.ErrChanged, nil
}

// nullable is a tag as a statement argument: NULL for none.
func nullable(tag *string) any {
	if tag == nil {
		return nil
	}
	return *tag
}
