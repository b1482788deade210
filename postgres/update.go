package postgres

import (
	"context"
	"errors"

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
	// only while the plant has name $7 and tag $8.
	qUpdatePlant = `UPDATE plants SET name = COALESCE($3::text, name), tag = CASE WHEN $4::boolean THEN $5::text ELSE tag END
WHERE owner = $1 AND id = $2 AND ($6::boolean OR (name = $7::text AND tag IS NOT DISTINCT FROM $8::text))
RETURNING name, tag, created_at`
	qDeletePlantIf = `DELETE FROM plants WHERE owner = $1 AND id = $2 AND name = $3 AND tag IS NOT DISTINCT FROM $4::text
RETURNING name, tag, created_at`
)

// UpdatePlant applies upd to the owner's plant id, only while it has
// expect's name and tag when expect is set (else ErrChanged), and returns
// the plant as stored; ErrNotFound when there is none.
func (db *DB) UpdatePlant(ctx context.Context, owner string, id int64, upd plantstore.PlantUpdate, expect *plantstore.Plant, ev *plantstore.Event) (*plantstore.Plant, error) {
	var expName, expTag *string
	if expect != nil {
		expName, expTag = &expect.Name, expect.Tag
	}
	var p *plantstore.Plant
	var err error
	if ev == nil {
		p, err = writeOne(ctx, db, func(row pgx.CollectableRow) (*plantstore.Plant, error) {
			return scanPlant(row, owner, id)
		}, qUpdatePlant, owner, id, upd.Name, upd.SetTag, upd.Tag, expect == nil, expName, expTag)
	} else {
		err = db.inTx(ctx, pgx.ReadCommitted, func(ctx context.Context, tx pgx.Tx) error {
			var err error
			p, err = scanPlant(tx.QueryRow(ctx, qUpdatePlant, owner, id, upd.Name, upd.SetTag, upd.Tag, expect == nil, expName, expTag), owner, id)
			if err != nil {
				return err
			}
			ev.SetPlant(p)
			return writeEvent(ctx, tx, owner, ev)
		})
	}
	if errors.Is(err, plantstore.ErrNotFound) && expect != nil {
		err = db.changedOrMissing(ctx, owner, id)
	}
	if err != nil {
		return nil, wrap("update plant", err)
	}
	return p, nil
}

// DeletePlantIf deletes the owner's plant id only while it has expect's
// name and tag: ErrChanged when it has other content, ErrNotFound when
// there is none.
func (db *DB) DeletePlantIf(ctx context.Context, owner string, id int64, expect *plantstore.Plant, ev *plantstore.Event) error {
	err := db.inTx(ctx, pgx.ReadCommitted, func(ctx context.Context, tx pgx.Tx) error {
		old, err := scanPlant(tx.QueryRow(ctx, qDeletePlantIf, owner, id, expect.Name, expect.Tag), owner, id)
		if err != nil || ev == nil {
			return err
		}
		ev.SetPlant(old)
		return writeEvent(ctx, tx, owner, ev)
	})
	if errors.Is(err, plantstore.ErrNotFound) {
		err = db.changedOrMissing(ctx, owner, id)
	}
	return wrap("delete plant", err)
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
