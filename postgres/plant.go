package postgres

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore"
)

var _ plantstore.PlantService = (*DB)(nil)

const plantColumns = `owner, id, name, tag, created_at`

// CreatePlant stores p, or recognises an idempotent replay or a conflict.
// It joins the group commit (see batch.go) and returns once its batch is
// committed.
func (db *DB) CreatePlant(ctx context.Context, p *plantstore.Plant) (*plantstore.Plant, bool, error) {
	op := &writeOp{ctx: ctx, kind: opCreate, plant: p}
	db.batch.submit(op)
	return op.stored, op.created, op.err
}

// qFanOut writes the transactional outbox rows of a new plant, in the
// transaction that inserted it: one pending delivery per enabled
// subscription of the owner, due now, all with one message id. Arguments:
// fanOutArgs.
const qFanOut = `INSERT INTO webhook_deliveries (message_id, subscription_id, owner, plant_id, payload, state, attempts, next_attempt_at, created_at)
SELECT $1::TEXT, id, owner, $2::BIGINT, $3::BYTEA, 'pending', 0, $4::TIMESTAMPTZ, $4::TIMESTAMPTZ
FROM webhook_subscriptions WHERE owner = $5 AND disabled_at IS NULL`

func fanOutArgs(msgID string, p *plantstore.Plant, now time.Time) []any {
	return []any{msgID, p.ID, p.WebhookPayload(), now, p.Owner}
}

// createPlant stores p in a transaction of its own.
// INSERT ... ON CONFLICT DO NOTHING waits for a concurrent insert of the same
// key to commit or abort, so of concurrent creates exactly one inserts and
// the others see its row (READ COMMITTED takes a new snapshot per
// statement). If that row is deleted in between, the create starts over.
func (db *DB) createPlant(ctx context.Context, p *plantstore.Plant) (*plantstore.Plant, bool, error) {
	var stored *plantstore.Plant
	var created bool
	err := db.inTx(ctx, pgx.ReadCommitted, func(tx *Tx) error {
		for range 3 {
			tag, err := tx.Exec(ctx,
				`INSERT INTO plants (owner, id, name, tag, created_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (owner, id) DO NOTHING`,
				p.Owner, p.ID, p.Name, p.Tag, tx.now)
			if err != nil {
				return wrap("insert plant", err)
			}
			if tag.RowsAffected() == 1 {
				out := *p
				out.CreatedAt = tx.now
				msgID, err := plantstore.NewMessageID()
				if err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, qFanOut, fanOutArgs(msgID, &out, tx.now)...); err != nil {
					return wrap("webhook outbox", err)
				}
				stored, created = &out, true
				return nil
			}
			existing, err := findPlantByID(ctx, tx, p.Owner, p.ID)
			if plantstore.ErrorCode(err) == plantstore.CodeNotFound {
				continue // deleted since the insert looked: try again
			} else if err != nil {
				return err
			}
			if !existing.SameContent(p) {
				return plantstore.Errorf(plantstore.CodeConflict, "plant %d already exists with a different name or tag", p.ID)
			}
			stored = existing
			return nil
		}
		return plantstore.Errorf(plantstore.CodeConflict, "plant %d is being created and deleted concurrently; retry", p.ID)
	})
	if err != nil {
		return nil, false, err
	}
	return stored, created, nil
}

// FindPlantByID returns the owner's plant with id.
func (db *DB) FindPlantByID(ctx context.Context, owner string, id int64) (*plantstore.Plant, error) {
	ctx, cancel := db.opContext(ctx)
	defer cancel()
	return findPlantByID(ctx, db.pool, owner, id)
}

type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func findPlantByID(ctx context.Context, q querier, owner string, id int64) (*plantstore.Plant, error) {
	p, err := scanPlant(q.QueryRow(ctx, `SELECT `+plantColumns+` FROM plants WHERE owner = $1 AND id = $2`, owner, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, plantstore.Errorf(plantstore.CodeNotFound, "plant %d not found", id)
	} else if err != nil {
		return nil, wrap("find plant", err)
	}
	return p, nil
}

// FindPlants returns one page of the owner's plants by id ascending. It reads
// one row more than the page to learn whether another page follows.
func (db *DB) FindPlants(ctx context.Context, f plantstore.PlantFilter) ([]*plantstore.Plant, bool, error) {
	if f.Limit < 1 || f.Limit > plantstore.MaxPageSize {
		return nil, false, plantstore.Errorf(plantstore.CodeInvalidQuery, "limit must be from 1 to %d", plantstore.MaxPageSize)
	}
	ctx, cancel := db.opContext(ctx)
	defer cancel()
	var where strings.Builder
	args := []any{f.Owner}
	where.WriteString(`owner = $1`)
	if f.Tag != nil {
		args = append(args, *f.Tag)
		where.WriteString(` AND tag = $2`)
	}
	if f.After != nil {
		args = append(args, *f.After)
		where.WriteString(` AND id > $` + strconv.Itoa(len(args)))
	}
	args = append(args, f.Limit+1)
	rows, err := db.pool.Query(ctx,
		`SELECT `+plantColumns+` FROM plants WHERE `+where.String()+` ORDER BY id LIMIT $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return nil, false, wrap("find plants", err)
	}
	defer rows.Close()
	plants := make([]*plantstore.Plant, 0, min(f.Limit+1, 128))
	for rows.Next() {
		p, err := scanPlant(rows)
		if err != nil {
			return nil, false, wrap("find plants", err)
		}
		plants = append(plants, p)
	}
	if err := rows.Err(); err != nil {
		return nil, false, wrap("find plants", err)
	}
	if len(plants) > f.Limit {
		return plants[:f.Limit], true, nil
	}
	return plants, false, nil
}

// DeletePlant deletes the owner's plant with id. It joins the group commit.
func (db *DB) DeletePlant(ctx context.Context, owner string, id int64) error {
	op := &writeOp{ctx: ctx, kind: opDelete, plant: &plantstore.Plant{Owner: owner, ID: id}}
	db.batch.submit(op)
	return op.err
}

// deletePlant deletes in a transaction of its own.
func (db *DB) deletePlant(ctx context.Context, owner string, id int64) error {
	return db.inTx(ctx, pgx.ReadCommitted, func(tx *Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM plants WHERE owner = $1 AND id = $2`, owner, id)
		if err != nil {
			return wrap("delete plant", err)
		}
		if tag.RowsAffected() == 0 {
			return plantstore.Errorf(plantstore.CodeNotFound, "plant %d not found", id)
		}
		return nil
	})
}

func scanPlant(row pgx.Row) (*plantstore.Plant, error) {
	var p plantstore.Plant
	if err := row.Scan(&p.Owner, &p.ID, &p.Name, &p.Tag, &p.CreatedAt); err != nil {
		return nil, err
	}
	p.CreatedAt = p.CreatedAt.UTC()
	return &p, nil
}

// BulkInsertPlants stores many new plants with COPY in one transaction. It
// is for loading data (benchmarks, migrations from elsewhere): an id that
// exists fails the whole call. It writes no webhook events (nothing goes
// to the outbox).
func (db *DB) BulkInsertPlants(ctx context.Context, plants []*plantstore.Plant) error {
	for _, p := range plants {
		if err := p.Validate(); err != nil {
			return err
		}
	}
	return db.inTx(ctx, pgx.ReadCommitted, func(tx *Tx) error {
		i := 0
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"plants"}, []string{"owner", "id", "name", "tag", "created_at"},
			pgx.CopyFromFunc(func() ([]any, error) {
				if i == len(plants) {
					return nil, nil
				}
				p := plants[i]
				i++
				return []any{p.Owner, p.ID, p.Name, p.Tag, tx.now}, nil
			}))
		return wrap("bulk insert", err)
	})
}
