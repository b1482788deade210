package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/plantstore/plantstore"
)

// Conditional plant writes (PATCH, and DELETE with If-Match). Each is one
// statement that checks the content it expects in its WHERE clause, so the
// check and the write are atomic; they join the group commit as generic
// writes.
const (
	// qUpdatePlant applies a merge patch: ?1 the new name or NULL (keep),
	// ?2 whether to set the tag, ?3 the new tag (NULL: none); only when it
	// changes the row: a patch that leaves name and tag as they are
	// matches no row, so it writes nothing (updateOutcome tells why).
	qUpdatePlant = `UPDATE plants SET name = COALESCE(?1, name), tag = CASE WHEN ?2 THEN ?3 ELSE tag END
WHERE owner = ?4 AND id = ?5 AND (name IS NOT COALESCE(?1, name) OR (?2 AND tag IS NOT ?3))
RETURNING owner, id, name, tag, created_at`
	// qUpdatePlantIf is qUpdatePlant while the plant has name ?6 and tag ?7.
	qUpdatePlantIf = `UPDATE plants SET name = COALESCE(?1, name), tag = CASE WHEN ?2 THEN ?3 ELSE tag END
WHERE owner = ?4 AND id = ?5 AND name = ?6 AND tag IS ?7 AND (name IS NOT COALESCE(?1, name) OR (?2 AND tag IS NOT ?3))
RETURNING owner, id, name, tag, created_at`
	qDeletePlantIf = `DELETE FROM plants WHERE owner = ? AND id = ? AND name = ? AND tag IS ? RETURNING owner, id, name, tag, created_at`
	qPlantExists   = `SELECT 1 FROM plants WHERE owner = ? AND id = ?`
)

// UpdatePlant applies upd to the owner's plant id, only while it has
// expect's name and tag when expect is set (else ErrChanged), and returns
// the plant as stored; ErrNotFound when there is none. A patch that leaves
// the plant's name and tag as they are writes nothing, neither the row nor
// the event (Seq 0): the check is the statement's own, in the
// write's transaction, so it is atomic with and without expect. It joins
// the group commit.
func (db *DB) UpdatePlant(ctx context.Context, owner string, id int64, upd plantstore.PlantUpdate, expect *plantstore.Plant, ev *plantstore.Event) (plantstore.WriteResult, error) {
	var (
		res     plantstore.WriteResult
		outcome error // ErrNotFound or ErrChanged: the write's answer, not a failure of the batch
	)
	err := db.update(ctx, "update plant", func(ctx context.Context, tx *Tx) error {
		res, outcome = plantstore.WriteResult{}, nil
		var name, tag any
		if upd.Name != nil {
			name = *upd.Name
		}
		if upd.Tag != nil {
			tag = *upd.Tag
		}
		var row *sql.Row
		if expect == nil {
			row = tx.queryRow(ctx, qUpdatePlant, name, upd.SetTag, tag, owner, id)
		} else {
			row = tx.queryRow(ctx, qUpdatePlantIf, name, upd.SetTag, tag, owner, id, expect.Name, nullable(expect.Tag))
		}
		p, err := scanPlant(row)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			res.Plant, outcome, err = db.updateOutcome(ctx, tx, owner, id, expect)
			return wrap("update plant", err)
		case err != nil:
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

// updateOutcome tells why an update matched no row, in the write's
// transaction (nothing changed in between): no plant (ErrNotFound); with
// expect, a plant of other content (ErrChanged); otherwise the patch
// leaves the plant as it is, which is returned.
func (db *DB) updateOutcome(ctx context.Context, tx *Tx, owner string, id int64, expect *plantstore.Plant) (unchanged *plantstore.Plant, outcome, err error) {
	cur, err := scanPlant(tx.queryRow(ctx, qFindPlant, owner, id))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, plantstore.ErrNotFound, nil
	case err != nil:
		return nil, nil, err
	case expect != nil && !sameNameAndTag(cur, expect):
		return nil, plantstore.ErrChanged, nil
	}
	return cur, nil, nil
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
