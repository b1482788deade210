package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore"
)

// Events (plantstore.EventStore). A write takes its seqs by updating its
// owner's event_sequences row (INSERT ... ON CONFLICT DO UPDATE), in the
// transaction of the change: the row lock is held until that transaction
// ends, so the next writer of the owner, on any replica, waits for it and
// then reads the committed value. Seqs have no gaps (a transaction that
// aborts gives its seqs back with its update), and one owner's events
// become visible in seq order: a writer becomes visible before its lock is
// released.
const (
	// qWriteEvent writes one event of owner $1 ($2 id, $3 type, $4 plant
	// id, $5 data, $6 time) with the owner's next seq, and its outbox rows
	// ($7 message id): untyped subscriptions take a create with body $8,
	// typed ones that name $3 the envelope $9 seq $10. It returns the seq
	// and how many deliveries it wrote.
	qWriteEvent = `WITH seq AS (
	INSERT INTO event_sequences AS q (owner, last) VALUES ($1, 1)
	ON CONFLICT (owner) DO UPDATE SET last = q.last + 1
	RETURNING last
), written AS (
	INSERT INTO events (owner, seq, id, type, plant_id, data, created_at)
	SELECT $1, last, $2, $3, $4, $5, $6 FROM seq
), delivered AS (
	INSERT INTO webhook_deliveries (message_id, subscription_id, owner, plant_id, payload, state, attempts, next_attempt_at, created_at)
	SELECT $7, s.id, s.owner, $4,
		CASE WHEN s.types IS NULL THEN $8::BYTEA ELSE $9::BYTEA || CAST(CAST(seq.last AS TEXT) AS BYTEA) || $10::BYTEA END,
		'pending', 0, $6, $6
	FROM seq, webhook_subscriptions s
	WHERE s.owner = $1 AND s.disabled_at IS NULL AND (
		(s.types IS NULL AND $3 = 'plant.created' AND $8::BYTEA IS NOT NULL) OR
		(s.types IS NOT NULL AND $9::BYTEA IS NOT NULL AND ' ' || s.types || ' ' LIKE '% ' || $3 || ' %'))
	RETURNING 1
)
SELECT last, (SELECT count(*) FROM delivered) FROM seq`

	eventColumns = `owner, seq, id, type, plant_id, data, created_at`
)

// writeEvent writes ev of owner's plant in tx and sets ev.Seq and
// ev.Deliveries.
func writeEvent(ctx context.Context, tx pgx.Tx, owner string, ev *plantstore.Event) error {
	var payload []byte
	if ev.EventType() == plantstore.EventPlantCreated {
		payload = ev.Payload
	}
	return tx.QueryRow(ctx, qWriteEvent, owner, ev.EventID, ev.EventType(), ev.PlantID, ev.EventData(), ev.CreatedAt,
		ev.MessageID, payload, ev.EnvelopePrefix, ev.EnvelopeSuffix).Scan(&ev.Seq, &ev.Deliveries)
}

// ListEvents returns at most f.Limit of the owner's events after f.After
// (of type f.Type when set), by seq.
func (db *DB) ListEvents(ctx context.Context, f plantstore.EventFilter) ([]*plantstore.PlantEvent, error) {
	ctx, cancel := db.opContext(ctx)
	defer cancel()
	q := `SELECT ` + eventColumns + ` FROM events WHERE owner = $1 AND seq > $2 AND ($3 = '' OR type = $3) ORDER BY seq LIMIT $4`
	var out []*plantstore.PlantEvent
	err := retry(ctx, func() error {
		rows, err := db.pool.Query(ctx, q, f.Owner, f.After, f.Type, f.Limit)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (*plantstore.PlantEvent, error) {
			var e plantstore.PlantEvent
			err := row.Scan(&e.Owner, &e.Seq, &e.ID, &e.Type, &e.PlantID, &e.Data, &e.CreatedAt)
			e.CreatedAt = e.CreatedAt.UTC()
			return &e, err
		})
		return err
	})
	if err != nil {
		return nil, wrap("list events", err)
	}
	return out, nil
}

// PruneEvents deletes at most limit events created before before, in one
// statement (the sequences stay).
func (db *DB) PruneEvents(ctx context.Context, before time.Time, limit int) (int, error) {
	tag, err := db.exec(ctx, `DELETE FROM events WHERE (owner, seq) IN (
	SELECT owner, seq FROM events WHERE created_at < $1 ORDER BY created_at LIMIT $2)`, before, limit)
	if err != nil {
		return 0, wrap("prune events", err)
	}
	return int(tag.RowsAffected()), nil
}
