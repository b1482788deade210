package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/plantstore/plantstore"
)

var _ plantstore.PlantService = (*DB)(nil)

const plantColumns = `owner, id, name, tag, created_at`

// CreatePlant stores p, or recognises an idempotent replay or a conflict.
// The lookup and the insert share one write transaction, and writes are
// serialised, so concurrent creates of one id cannot both insert.
func (db *DB) CreatePlant(ctx context.Context, p *plantstore.Plant) (*plantstore.Plant, bool, error) {
	var stored *plantstore.Plant
	var created bool
	err := db.update(ctx, func(ctx context.Context, tx *Tx) error {
		var err error
		stored, created, err = createPlant(ctx, tx, p)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return stored, created, nil
}

func createPlant(ctx context.Context, tx *Tx, p *plantstore.Plant) (*plantstore.Plant, bool, error) {
	res, err := tx.exec(ctx, qInsertPlant, p.Owner, p.ID, p.Name, nullString(p.Tag), tx.now.UnixNano())
	if err != nil {
		return nil, false, fmt.Errorf("sqlite: insert plant: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return nil, false, fmt.Errorf("sqlite: insert plant: %w", err)
	} else if n == 1 {
		out := *p
		out.CreatedAt = tx.now
		if err := fanOut(ctx, tx, &out); err != nil {
			return nil, false, err
		}
		return &out, true, nil
	}
	existing, err := findPlantByID(ctx, tx, p.Owner, p.ID)
	if err != nil {
		return nil, false, err
	}
	if !existing.SameContent(p) {
		return nil, false, plantstore.Errorf(plantstore.CodeConflict,
			"plant %d already exists with a different name or tag", p.ID)
	}
	return existing, false, nil
}

// fanOut writes the transactional outbox rows of a new plant, in the
// transaction that inserted it: one pending delivery per enabled
// subscription of the owner, due now, all with one message id.
func fanOut(ctx context.Context, tx *Tx, p *plantstore.Plant) error {
	msgID, err := plantstore.NewMessageID()
	if err != nil {
		return err
	}
	if _, err := tx.exec(ctx, qFanOut, msgID, p.ID, p.WebhookPayload(), tx.now.UnixNano(), p.Owner); err != nil {
		return fmt.Errorf("sqlite: webhook outbox: %w", err)
	}
	return nil
}

// FindPlantByID returns the owner's plant with id.
func (db *DB) FindPlantByID(ctx context.Context, owner string, id int64) (*plantstore.Plant, error) {
	st, err := db.readStmt(ctx, qFindPlant)
	if err != nil {
		return nil, fmt.Errorf("sqlite: find plant: %w", err)
	}
	p, err := scanPlant(st.QueryRowContext(ctx, owner, id))
	return plantOrNotFound(id, p, err)
}

func findPlantByID(ctx context.Context, tx *Tx, owner string, id int64) (*plantstore.Plant, error) {
	p, err := scanPlant(tx.queryRow(ctx, qFindPlant, owner, id))
	return plantOrNotFound(id, p, err)
}

func plantOrNotFound(id int64, p *plantstore.Plant, err error) (*plantstore.Plant, error) {
	if errors.Is(err, sql.ErrNoRows) {
		return nil, plantstore.Errorf(plantstore.CodeNotFound, "plant %d not found", id)
	} else if err != nil {
		return nil, fmt.Errorf("sqlite: find plant: %w", err)
	}
	return p, nil
}

// FindPlants returns one page of the owner's plants by id ascending. It reads
// one row more than the page to learn whether another page follows.
func (db *DB) FindPlants(ctx context.Context, f plantstore.PlantFilter) ([]*plantstore.Plant, bool, error) {
	if f.Limit < 1 || f.Limit > plantstore.MaxPageSize {
		return nil, false, plantstore.Errorf(plantstore.CodeInvalidQuery, "limit must be from 1 to %d", plantstore.MaxPageSize)
	}
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
	args = append(args, f.Limit+1)
	st, err := db.readStmt(ctx, `SELECT `+plantColumns+` FROM `+from+` WHERE `+where.String()+` ORDER BY id LIMIT ?`)
	if err != nil {
		return nil, false, fmt.Errorf("sqlite: find plants: %w", err)
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, false, fmt.Errorf("sqlite: find plants: %w", err)
	}
	defer rows.Close()
	plants := make([]*plantstore.Plant, 0, min(f.Limit+1, 128))
	for rows.Next() {
		p, err := scanPlant(rows)
		if err != nil {
			return nil, false, fmt.Errorf("sqlite: find plants: %w", err)
		}
		plants = append(plants, p)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("sqlite: find plants: %w", err)
	}
	if len(plants) > f.Limit {
		return plants[:f.Limit], true, nil
	}
	return plants, false, nil
}

// DeletePlant deletes the owner's plant with id.
func (db *DB) DeletePlant(ctx context.Context, owner string, id int64) error {
	return db.update(ctx, func(ctx context.Context, tx *Tx) error {
		res, err := tx.exec(ctx, qDeletePlant, owner, id)
		if err != nil {
			return fmt.Errorf("sqlite: delete plant: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("sqlite: delete plant: %w", err)
		} else if n == 0 {
			return plantstore.Errorf(plantstore.CodeNotFound, "plant %d not found", id)
		}
		return nil
	})
}

type scanner interface{ Scan(dest ...any) error }

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
	p.CreatedAt = time.Unix(0, created).UTC()
	return &p, nil
}

func nullString(s *string) sql.NullString {
	if s == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: *s, Valid: true}
}

// BulkInsertPlants stores many new plants in one transaction, skipping ids
// that exist. It is for loading data (benchmarks, migrations from elsewhere):
// no replay or conflict answers, one commit for all, and no webhook events
// (nothing is written to the outbox).
func (db *DB) BulkInsertPlants(ctx context.Context, plants []*plantstore.Plant) error {
	for _, p := range plants {
		if err := p.Validate(); err != nil {
			return err
		}
	}
	return db.update(ctx, func(ctx context.Context, tx *Tx) error {
		for _, p := range plants {
			if _, err := tx.exec(ctx, qInsertPlant, p.Owner, p.ID, p.Name, nullString(p.Tag), tx.now.UnixNano()); err != nil {
				return fmt.Errorf("sqlite: bulk insert: %w", err)
			}
		}
		return nil
	})
}
