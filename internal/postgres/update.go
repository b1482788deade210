package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore"
)

// Conditional plant writes (PATCH, and DELETE with If-Match): each checks
// the content it expects in the same transaction as its write, so the
// check and the write are atomic (at READ COMMITTED an UPDATE or DELETE
// re-checks its condition on the row's latest version, and a row read FOR
// UPDATE stays as read until the commit).
const (
	// qUpdatePlant writes a patch whose outcome is known without reading
	// the row (see UpdatePlant): $3 the new name, $4 the new tag (NULL:
	// none), $5 their words (searchText), $6 the time of the change (NULL:
	// updated_at stays); with $7 false, only while the plant has name $8
	// and tag $9; and only when it changes the row: a patch that leaves
	// name and tag as they are matches no row, so it writes nothing.
	qUpdatePlant = `UPDATE plants SET name = $3::text, tag = $4::text, search = ` + searchOf + `$5::text` + searchEnd + `,
	updated_at = COALESCE($6::timestamptz, updated_at)
WHERE owner = $1 AND id = $2 AND ($7::boolean OR (name = $8::text AND tag IS NOT DISTINCT FROM $9::text))
AND (name IS DISTINCT FROM $3::text OR tag IS DISTINCT FROM $4::text)
RETURNING ` + plantColumns
	// qLockPlant reads the plant's latest version and locks it until the
	// transaction ends.
	qLockPlant     = `SELECT ` + plantColumns + ` FROM plants WHERE owner = $1 AND id = $2 FOR UPDATE`
	qDeletePlantIf = `DELETE FROM plants WHERE owner = $1 AND id = $2 AND name = $3 AND tag IS NOT DISTINCT FROM $4::text
RETURNING ` + plantColumns
)

// UpdatePlant applies upd to the owner's plant id, only while it has
// expect's name and tag when expect is set (else ErrChanged), and returns
// the plant as stored; ErrNotFound when there is none. A patch that leaves
// the plant's name and tag as they are writes nothing, neither the row nor
// the event (Seq 0). A write sets updated_at to upd.At (when set) and the
// search words of the new name and tag.
//
// One transaction. The words are made in Go (search.go), from the plant as
// the patch leaves it, so that content must be known before the write.
// When it is without reading the row (the patch sets both name and tag, or
// expect gives the row's content, which the UPDATE checks), one UPDATE
// writes the row only when the patch changes it. Otherwise, or when that
// UPDATE matched no row, the row's latest version is read and locked (FOR
// UPDATE), so the decision is made on a version no one can change before
// the commit: no row is ErrNotFound, other content than expect's is
// ErrChanged, a patch that changes nothing is the answer as it is, and
// any other is written as the patch leaves that version.
func (db *DB) UpdatePlant(ctx context.Context, owner string, id int64, upd plantstore.PlantUpdate, expect *plantstore.Plant, ev *plantstore.Event) (plantstore.WriteResult, error) {
	var at *time.Time
	if !upd.At.IsZero() {
		at = &upd.At
	}
	// write runs qUpdatePlant for the content of next.
	write := func(ctx context.Context, tx pgx.Tx, next *plantstore.Plant) (*plantstore.Plant, error) {
		var expName, expTag *string
		if expect != nil {
			expName, expTag = &expect.Name, expect.Tag
		}
		return scanPlant(tx.QueryRow(ctx, qUpdatePlant, owner, id, next.Name, next.Tag, searchText(next.Name, next.Tag), at,
			expect == nil, expName, expTag), owner, id)
	}
	var res plantstore.WriteResult
	err := db.inTx(ctx, pgx.ReadCommitted, func(ctx context.Context, tx pgx.Tx) error {
		res = plantstore.WriteResult{}
		var known *plantstore.Plant // the content the patch leaves, when known unread
		switch {
		case expect != nil:
			known = upd.Apply(expect)
		case upd.Name != nil && upd.SetTag:
			known = upd.Apply(&plantstore.Plant{})
		}
		if known != nil {
			updated, err := write(ctx, tx, known)
			if err == nil {
				return db.updated(ctx, tx, &res, updated, ev)
			}
			if !errors.Is(err, plantstore.ErrNotFound) {
				return err
			}
		}
		cur, err := scanPlant(tx.QueryRow(ctx, qLockPlant, owner, id), owner, id)
		switch {
		case err != nil:
			return err // ErrNotFound: no such plant
		case expect != nil && !sameNameAndTag(cur, expect):
			return plantstore.ErrChanged
		}
		next := upd.Apply(cur)
		if next.SameContent(cur) {
			res.Plant = cur // nothing to change: nothing written
			return nil
		}
		// Locked: the UPDATE matches it (with expect, cur has its content).
		updated, err := write(ctx, tx, next)
		if errors.Is(err, plantstore.ErrNotFound) {
			return fmt.Errorf("the locked plant did not take the patch")
		}
		if err != nil {
			return err
		}
		return db.updated(ctx, tx, &res, updated, ev)
	})
	if err != nil {
		return plantstore.WriteResult{}, wrap("update plant", err)
	}
	return res, nil
}

// updated records the plant an update wrote in res, with its event ev
// (none when nil).
func (db *DB) updated(ctx context.Context, tx pgx.Tx, res *plantstore.WriteResult, p *plantstore.Plant, ev *plantstore.Event) (err error) {
	res.Plant = p
	if ev == nil {
		return nil
	}
	res.Seq, res.Deliveries, err = writeEvent(ctx, tx, ev, p)
	return err
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
