package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore"
)

// Conditional plant writes (PATCH, and DELETE with If-Match): one statement
// each, outside the group commit, that checks the content it expects in its
// WHERE clause, so the check and the write are atomic (at READ COMMITTED an
// UPDATE or DELETE re-checks its condition on the row's latest version).
const (
	// qUpdatePlant applies a merge patch: $3 the new name or NULL (keep),
	// $4 whether to set the tag, $5 the new tag (NULL: none); with $6 false,
	// only while the plant has name $7 and tag $8; and only when it changes
	// the row: a patch that leaves name and tag as they are matches no row,
	// so it writes nothing (see UpdatePlant).
	qUpdatePlant = `UPDATE plants SET name = COALESCE($3::text, name), tag = CASE WHEN $4::boolean THEN $5::text ELSE tag END
WHERE owner = $1 AND id = $2 AND ($6::boolean OR (name = $7::text AND tag IS NOT DISTINCT FROM $8::text))
AND (name IS DISTINCT FROM COALESCE($3::text, name) OR ($4::boolean AND tag IS DISTINCT FROM $5::text))
RETURNING name, tag, created_at`
	// qLockPlant reads the plant's latest version and locks it until the
	// transaction ends.
	qLockPlant     = `SELECT name, tag, created_at FROM plants WHERE owner = $1 AND id = $2 FOR UPDATE`
	qDeletePlantIf = `DELETE FROM plants WHERE owner = $1 AND id = $2 AND name = $3 AND tag IS NOT DISTINCT FROM $4::text
RETURNING name, tag, created_at`
)

// UpdatePlant applies upd to the owner's plant id, only while it has
// expect's name and tag when expect is set (else ErrChanged), and returns
// the plant as stored; ErrNotFound when there is none. A patch that leaves
// the plant's name and tag as they are writes nothing, neither the row nor
// the event (Seq 0).
//
// One transaction: the UPDATE changes the row only when the patch changes
// it. When it matched no row, the row's latest version is read and locked
// (FOR UPDATE), so the decision is made on a version no one can change
// before the commit: no row is ErrNotFound, other content than expect's is
// ErrChanged, a patch that changes nothing is the answer as it is; and a
// version that a concurrent commit changed between the two statements so
// that the patch would change it now is updated, under the lock.
func (db *DB) UpdatePlant(ctx context.Context, owner string, id int64, upd plantstore.PlantUpdate, expect *plantstore.Plant, ev *plantstore.Event) (plantstore.WriteResult, error) {
	var expName, expTag *string
	if expect != nil {
		expName, expTag = &expect.Name, expect.Tag
	}
	var res plantstore.WriteResult
	err := db.inTx(ctx, pgx.ReadCommitted, func(ctx context.Context, tx pgx.Tx) error {
		res = plantstore.WriteResult{}
		for attempt := 0; ; attempt++ {
			updated, err := scanPlant(tx.QueryRow(ctx, qUpdatePlant, owner, id, upd.Name, upd.SetTag, upd.Tag, expect == nil, expName, expTag), owner, id)
			if err == nil {
				res.Plant = updated
				if ev == nil {
					return nil
				}
				res.Seq, res.Deliveries, err = writeEvent(ctx, tx, ev, updated)
				return err
			}
			if !errors.Is(err, plantstore.ErrNotFound) {
				return err
			}
			cur, err := scanPlant(tx.QueryRow(ctx, qLockPlant, owner, id), owner, id)
			switch {
			case err != nil:
				return err // ErrNotFound: no such plant
			case expect != nil && !sameNameAndTag(cur, expect):
				return plantstore.ErrChanged
			case upd.Apply(cur).SameContent(cur):
				res.Plant = cur // nothing to change: nothing written
				return nil
			case attempt > 0:
				return fmt.Errorf("the locked plant did not take the patch")
			}
			// Changed between the two statements, and locked now: the
			// UPDATE matches it.
		}
	})
	if err != nil {
		return plantstore.WriteResult{}, wrap("update plant", err)
	}
	return res, nil
}

// sameNameAndTag reports whether p and q have the same name and tag.
func sameNameAndTag(p, q *plantstore.Plant) bool {
	return p.Name == q.Name && (p.Tag == nil) == (q.Tag == nil) && (p.Tag == nil || *p.Tag == *q.Tag)
}

// DeletePlantIf deletes the owner's plant id only while it has expect's
// name and tag: ErrChanged when it has other content, ErrNotFound when
// there is none.
func (db *DB) DeletePlantIf(ctx context.Context, owner string, id int64, expect *plantstore.Plant, ev *plantstore.Event) (plantstore.WriteResult, error) {
	var res plantstore.WriteResult
	err := db.inTx(ctx, pgx.ReadCommitted, func(ctx context.Context, tx pgx.Tx) (err error) {
		res = plantstore.WriteResult{}
		if res.Plant, err = scanPlant(tx.QueryRow(ctx, qDeletePlantIf, owner, id, expect.Name, expect.Tag), owner, id); err != nil || ev == nil {
			return err
		}
		res.Seq, res.Deliveries, err = writeEvent(ctx, tx, ev, res.Plant)
		return err
	})
	if errors.Is(err, plantstore.ErrNotFound) {
		err = db.changedOrMissing(ctx, owner, id)
	}
	if err != nil {
		return plantstore.WriteResult{}, wrap("delete plant", err)
	}
	return res, nil
}

// changedOrMissing tells why a conditional write matched no row: the plant
// exists, with other content (ErrChanged), or it does not (ErrNotFound).
func (db *DB) changedOrMissing(ctx context.Context, owner string, id int64) error {
	_, err := db.FindPlant(ctx, owner, id)
	if err == nil {
		return plantstore.ErrChanged
	}
	return err
}
