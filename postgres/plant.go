package postgres

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore"
)

// InsertPlant stores p with ev's outbox rows and says how many it wrote, or
// returns the owner's plant with p.ID when there is one. It joins the group
// commit (see batch.go) and returns once its transaction is committed.
func (db *DB) InsertPlant(ctx context.Context, p *plantstore.Plant, ev *plantstore.Event) (*plantstore.Plant, int, error) {
	op := &writeOp{plant: p, event: ev}
	if err := db.write(ctx, op); err != nil {
		return nil, 0, err
	}
	return op.existing, op.deliveries, nil
}

// DeletePlant deletes the owner's plant with id. It joins the group commit.
func (db *DB) DeletePlant(ctx context.Context, owner string, id int64) error {
	return db.write(ctx, &writeOp{del: true, plant: &plantstore.Plant{Owner: owner, ID: id}})
}

// FindPlant returns the owner's plant with id.
func (db *DB) FindPlant(ctx context.Context, owner string, id int64) (*plantstore.Plant, error) {
	p, err := queryOne(ctx, db, scanPlant, qFindPlant, owner, id)
	if err != nil {
		return nil, wrap("find plant", err)
	}
	return p, nil
}

// ListPlants returns up to f.Limit of the owner's plants by id ascending:
// one range scan of the primary key (or of the tag index), whatever the
// page.
func (db *DB) ListPlants(ctx context.Context, f plantstore.PlantFilter) ([]*plantstore.Plant, error) {
	args := []any{f.Owner}
	param := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	sql := `SELECT ` + plantColumns + ` FROM plants WHERE owner = $1`
	if f.Tag != nil {
		sql += ` AND tag = ` + param(*f.Tag)
	}
	if f.After != nil {
		sql += ` AND id > ` + param(*f.After)
	}
	sql += ` ORDER BY id LIMIT ` + param(f.Limit)
	plants, err := queryAll(ctx, db, scanPlant, sql, args...)
	if err != nil {
		return nil, wrap("list plants", err)
	}
	return plants, nil
}

// qBulkInsert inserts rows given as one array per column; rows whose key
// exists (in the table, or earlier in the arrays) are skipped.
const qBulkInsert = `INSERT INTO plants (owner, id, name, tag, created_at)
SELECT * FROM unnest($1::TEXT[], $2::BIGINT[], $3::TEXT[], $4::TEXT[], $5::TIMESTAMPTZ[])
ON CONFLICT (owner, id) DO NOTHING`

// BulkInsertPlants stores plants in one statement (one transaction),
// skipping keys that exist, with no outbox rows, and returns how many it
// stored. The rows travel as five arrays in one round trip.
func (db *DB) BulkInsertPlants(ctx context.Context, plants []*plantstore.Plant) (int, error) {
	if len(plants) == 0 {
		return 0, nil
	}
	var (
		owners  = make([]string, len(plants))
		ids     = make([]int64, len(plants))
		names   = make([]string, len(plants))
		tags    = make([]*string, len(plants))
		created = make([]time.Time, len(plants))
	)
	for i, p := range plants {
		owners[i], ids[i], names[i], tags[i], created[i] = p.Owner, p.ID, p.Name, p.Tag, p.CreatedAt
	}
	tag, err := db.exec(ctx, qBulkInsert, owners, ids, names, tags, created)
	if err != nil {
		return 0, wrap("bulk insert plants", err)
	}
	return int(tag.RowsAffected()), nil
}

func scanPlant(row pgx.CollectableRow) (*plantstore.Plant, error) {
	var p plantstore.Plant
	if err := row.Scan(&p.Owner, &p.ID, &p.Name, &p.Tag, &p.CreatedAt); err != nil {
		return nil, err
	}
	return &p, nil
}
