package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/plantstore/plantstore"
)

const plantColumns = `owner, id, name, tag, created_at`

// InsertPlant stores p with ev's outbox rows and says how many it wrote, or
// returns the owner's plant with p.ID when there is one. The insert and the lookup share one write
// transaction, and writes are serialised, so concurrent inserts of one key
// cannot both store.
func (db *DB) InsertPlant(ctx context.Context, p *plantstore.Plant, ev *plantstore.Event) (*plantstore.Plant, int, error) {
	var existing *plantstore.Plant
	deliveries := 0
	err := db.update(ctx, "insert plant", func(ctx context.Context, tx *Tx) error {
		res, err := tx.exec(ctx, qInsertPlant, p.Owner, p.ID, p.Name, nullString(p.Tag), p.CreatedAt.UnixNano())
		if err != nil {
			return wrap("insert plant", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return wrap("insert plant", err)
		} else if n == 1 {
			res, err := tx.exec(ctx, qFanOut, ev.MessageID, ev.PlantID, ev.Payload, ev.CreatedAt.UnixNano(), p.Owner)
			if err != nil {
				return wrap("webhook outbox", err)
			}
			n, err := res.RowsAffected()
			deliveries = int(n)
			return wrap("webhook outbox", err)
		}
		existing, err = scanPlant(tx.queryRow(ctx, qFindPlant, p.Owner, p.ID))
		if errors.Is(err, sql.ErrNoRows) {
			return plantstore.ErrContended // cannot happen: writes are serialised
		}
		return wrap("find plant", err)
	})
	if err != nil {
		return nil, 0, err
	}
	return existing, deliveries, nil
}

// FindPlant returns the owner's plant with id.
func (db *DB) FindPlant(ctx context.Context, owner string, id int64) (*plantstore.Plant, error) {
	ctx, cancel := db.readContext(ctx)
	defer cancel()
	st, err := db.readStmt(ctx, qFindPlant)
	if err != nil {
		return nil, wrap("find plant", err)
	}
	p, err := scanPlant(st.QueryRowContext(ctx, owner, id))
	if err != nil {
		return nil, plantErr("find plant", err)
	}
	return p, nil
}

// plantErr is wrap with sql.ErrNoRows as plantstore.ErrNotFound.
func plantErr(op string, err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return plantstore.ErrNotFound
	}
	return wrap(op, err)
}

// ListPlants returns up to f.Limit of the owner's plants by id ascending.
func (db *DB) ListPlants(ctx context.Context, f plantstore.PlantFilter) ([]*plantstore.Plant, error) {
	ctx, cancel := db.readContext(ctx)
	defer cancel()
	var where strings.Builder
	args := []any{f.Owner}
	from := `plants`
	where.WriteString(`owner = ?`)
	if f.Tag != nil {
		// Without statistics the planner would walk the owner's rows by
		// primary key and filter on tag: a rare tag would cost a scan.
		from = `plants INDEXED BY plants_owner_tag_id`
		where.WriteString(` AND tag = ?`)
		args = append(args, *f.Tag)
	}
	if f.After != nil {
		where.WriteString(` AND id > ?`)
		args = append(args, *f.After)
	}
	args = append(args, f.Limit)
	st, err := db.readStmt(ctx, `SELECT `+plantColumns+` FROM `+from+` WHERE `+where.String()+` ORDER BY id LIMIT ?`)
	if err != nil {
		return nil, wrap("list plants", err)
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, wrap("list plants", err)
	}
	defer rows.Close()
	plants := make([]*plantstore.Plant, 0, min(f.Limit, 128))
	for rows.Next() {
		p, err := scanPlant(rows)
		if err != nil {
			return nil, wrap("list plants", err)
		}
		plants = append(plants, p)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap("list plants", err)
	}
	return plants, nil
}

// DeletePlant deletes the owner's plant with id.
func (db *DB) DeletePlant(ctx context.Context, owner string, id int64) error {
	return db.update(ctx, "delete plant", func(ctx context.Context, tx *Tx) error {
		res, err := tx.exec(ctx, qDeletePlant, owner, id)
		if err != nil {
			return wrap("delete plant", err)
		}
		return mustAffect(res, "delete plant")
	})
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
// exist, with no outbox rows, and returns how many it stored.
func (db *DB) BulkInsertPlants(ctx context.Context, plants []*plantstore.Plant) (int, error) {
	stored := 0
	err := db.update(ctx, "bulk insert plants", func(ctx context.Context, tx *Tx) error {
		stored = 0
		for _, p := range plants {
			res, err := tx.exec(ctx, qInsertPlant, p.Owner, p.ID, p.Name, nullString(p.Tag), p.CreatedAt.UnixNano())
			if err != nil {
				return wrap("bulk insert plants", err)
			}
			n, err := res.RowsAffected()
			if err != nil {
				return wrap("bulk insert plants", err)
			}
			stored += int(n)
		}
		return nil
	})
	return stored, err
}
