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
//
// An event is stored as facts (the plant's id, name, tag and times), never
// as JSON, and so are its deliveries: the bodies are rendered when they are read or
// sent (package eventjson).
const (
	// writeEventsSQL and fanOutSQL are the two steps every event write
	// takes, the one fan-out of every event type: qCreatePlants and
	// qWriteEvent each end with them, as CTEs over a CTE named evs (owner,
	// seq, id, type, plant_id, name, tag, created_at, plant_created_at,
	// plant_updated_at, message_id, bit). The
	// fan-out writes one delivery for each enabled subscription of the
	// owner whose event mask takes the event's type bit, typed when the
	// mask has plantstore.MaskTyped (bit 1), and returns each one's owner
	// and seq.
	writeEventsSQL = `INSERT INTO events (owner, seq, id, type, plant_id, name, tag, created_at, plant_created_at, plant_updated_at)
	SELECT owner, seq, id, type, plant_id, name, tag, created_at, plant_created_at, plant_updated_at FROM evs`
	fanOutSQL = `INSERT INTO webhook_deliveries (message_id, subscription_id, owner, plant_id, event_type, seq, name, tag, typed, state, attempts, next_attempt_at, created_at,
		plant_created_at, plant_updated_at)
	SELECT e.message_id, s.id, s.owner, e.plant_id, e.type, e.seq, e.name, e.tag, (s.event_mask & 1)::INT, 'pending', 0, e.created_at, e.created_at,
		e.plant_created_at, e.plant_updated_at
	FROM evs e JOIN webhook_subscriptions s ON s.owner = e.owner AND s.disabled_at IS NULL AND s.event_mask & e.bit <> 0
	RETURNING owner, seq`

	// qWriteEvent writes one event of owner $1 ($2 id, $3 type, $4 plant
	// id, $5 name, $6 tag, $7 time, $8 message id, $9 the type's bit, $10
	// and $11 the plant's times) with
	// the owner's next seq, and its outbox rows. It returns the seq and how
	// many deliveries it wrote.
	qWriteEvent = `WITH seq AS (
	INSERT INTO event_sequences AS q (owner, last) VALUES ($1, 1)
	ON CONFLICT (owner) DO UPDATE SET last = q.last + 1
	RETURNING last
), evs AS (
	SELECT $1::TEXT AS owner, last AS seq, $2::TEXT AS id, $3::TEXT AS type, $4::BIGINT AS plant_id, $5::TEXT AS name,
		$6::TEXT AS tag, $7::TIMESTAMPTZ AS created_at, $10::TIMESTAMPTZ AS plant_created_at, $11::TIMESTAMPTZ AS plant_updated_at,
		$8::TEXT AS message_id, $9::BIGINT AS bit
	FROM seq
), written AS (
	` + writeEventsSQL + `
), delivered AS (
	` + fanOutSQL + `
)
SELECT seq, (SELECT count(*) FROM delivered) FROM evs`

	eventColumns = `owner, seq, id, type, plant_id, name, tag, created_at, plant_created_at, plant_updated_at`
)

// writeEvent writes ev, a change of p (the plant as the change left it), in
// tx, and returns its seq and how many deliveries it wrote.
func writeEvent(ctx context.Context, tx pgx.Tx, ev *plantstore.Event, p *plantstore.Plant) (seq int64, deliveries int, err error) {
	err = tx.QueryRow(ctx, qWriteEvent, p.Owner, ev.ID, ev.Type, p.ID, p.Name, p.Tag, ev.CreatedAt,
		ev.MessageID(), int64(plantstore.EventBit(ev.Type)), p.CreatedAt, p.LastUpdated()).Scan(&seq, &deliveries)
	return seq, deliveries, err
}

// ListEvents returns at most f.Limit of the owner's events after f.After
// (of type f.Type when set), by seq.
func (db *DB) ListEvents(ctx context.Context, f plantstore.EventFilter) ([]*plantstore.Event, error) {
	ctx, cancel := db.opContext(ctx)
	defer cancel()
	q := `SELECT ` + eventColumns + ` FROM events WHERE owner = $1 AND seq > $2 AND ($3 = '' OR type = $3) ORDER BY seq LIMIT $4`
	var out []*plantstore.Event
	err := retry(ctx, func() error {
		rows, err := db.pool.Query(ctx, q, f.Owner, f.After, f.Type, f.Limit)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (*plantstore.Event, error) {
			var e plantstore.Event
			var created, updated *time.Time
			err := row.Scan(&e.Owner, &e.Seq, &e.ID, &e.Type, &e.PlantID, &e.Name, &e.Tag, &e.CreatedAt, &created, &updated)
			e.CreatedAt = e.CreatedAt.UTC()
			setPlantTimes(&e, created, updated)
			return &e, err
		})
		return err
	})
	if err != nil {
		return nil, wrap("list events", err)
	}
	return out, nil
}

// setPlantTimes sets e's plant times from their columns (nil: not known).
func setPlantTimes(e *plantstore.Event, created, updated *time.Time) {
	if created != nil {
		e.PlantCreatedAt = created.UTC()
	}
	if updated != nil {
		e.PlantUpdatedAt = updated.UTC()
	}
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
