package sqlite

import (
	"context"
	"time"

	"github.com/plantstore/plantstore"
)

// Events (plantstore.EventStore). Writes are serialised (one writer), so an
// owner's next seq is its event_sequences row plus one, taken in the write
// transaction of the change: seqs have no gaps and commit in order.
const (
	qNextSeq = `INSERT INTO event_sequences (owner, last) VALUES (?, 1)
ON CONFLICT (owner) DO UPDATE SET last = last + 1 RETURNING last`
	qInsertEvent = `INSERT INTO events (owner, seq, id, type, plant_id, data, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`
	// qFanOutTyped writes the outbox rows of an event for the owner's
	// enabled typed subscriptions that take its type (?8: " type "): the
	// envelope, ?3 ?8 ?4 (prefix, seq, suffix).
	qFanOutTyped = `INSERT INTO webhook_deliveries (message_id, subscription_id, owner, plant_id, payload, state, attempts, next_attempt_at, created_at)
SELECT ?1, id, owner, ?2, CAST(CAST(?3 AS TEXT) || ?8 || CAST(?4 AS TEXT) AS BLOB), 'pending', 0, ?5, ?5 FROM webhook_subscriptions
WHERE owner = ?6 AND disabled_at IS NULL AND types IS NOT NULL AND instr(' ' || types || ' ', ?7) > 0`
	eventColumns = `owner, seq, id, type, plant_id, data, created_at`
	// qAddSeq takes ?2 seqs of owner ?1 at once: it returns the last.
	qAddSeq = `INSERT INTO event_sequences (owner, last) VALUES (?1, ?2)
ON CONFLICT (owner) DO UPDATE SET last = last + ?2 RETURNING last`
)

// insertEventsSQL is the multi-row INSERT of n events.
var insertEventsSQL = newMultiInsert(`INSERT INTO events (`+eventColumns+`) VALUES `, `(?,?,?,?,?,?,?)`, ``).sql

// writeCreateEvents writes the events of the creates of a chunk that were
// stored (w.inserted, with an event), as writeEvent would one by one, in
// fewer statements: one seq statement per owner (seqs taken in the chunk's
// order) and multi-row inserts in power-of-two pieces; then each event's
// outbox rows. Only the committer calls it.
func (db *DB) writeCreateEvents(ctx context.Context, tx *Tx, ops []*writeOp) error {
	evs := make([]*writeOp, 0, len(ops))
	for _, w := range ops {
		if w.inserted && w.event != nil {
			evs = append(evs, w)
		}
	}
	if len(evs) == 0 {
		return nil
	}
	if len(evs) == 1 {
		w := evs[0]
		err := db.writeEvent(ctx, tx, w.plant.Owner, w.event)
		w.deliveries = w.event.Deliveries
		return err
	}
	// The seqs of each owner: its count in the chunk, taken at once.
	type span struct{ next, n int64 }
	owners := make(map[string]*span, 1)
	order := make([]string, 0, 1)
	for _, w := range evs {
		sp := owners[w.plant.Owner]
		if sp == nil {
			sp = &span{}
			owners[w.plant.Owner] = sp
			order = append(order, w.plant.Owner)
		}
		sp.n++
	}
	for _, o := range order {
		sp := owners[o]
		var last int64
		if err := tx.queryRow(ctx, qAddSeq, o, sp.n).Scan(&last); err != nil {
			return wrap("event seq", err)
		}
		sp.next = last - sp.n + 1
	}
	for _, w := range evs {
		sp := owners[w.plant.Owner]
		w.event.Seq = sp.next
		sp.next++
	}
	for rest := evs; len(rest) > 0; {
		n := chunk(len(rest))
		piece := rest[:n]
		rest = rest[n:]
		args := make([]any, 0, 7*n)
		for _, w := range piece {
			ev := w.event
			args = append(args, w.plant.Owner, ev.Seq, ev.EventID, ev.EventType(), ev.PlantID, ev.EventData(), ev.CreatedAt.UnixNano())
		}
		// Prepared before the transaction (prepare) for the chunk sizes.
		if _, err := tx.exec(ctx, insertEventsSQL(n), args...); err != nil {
			return wrap("insert events", err)
		}
	}
	for _, w := range evs {
		if err := db.fanOutEvent(ctx, tx, w.plant.Owner, w.event); err != nil {
			return err
		}
		w.deliveries = w.event.Deliveries
	}
	return nil
}

// writeEvent writes ev, of owner's plant, in tx: the next seq, the event
// row, and the outbox rows for the owner's subscriptions that take it
// (untyped ones: creates, with ev.Payload). It sets ev.Seq and
// ev.Deliveries. Only the committer calls it.
func (db *DB) writeEvent(ctx context.Context, tx *Tx, owner string, ev *plantstore.Event) error {
	if err := tx.queryRow(ctx, qNextSeq, owner).Scan(&ev.Seq); err != nil {
		return wrap("event seq", err)
	}
	typ := ev.EventType()
	if _, err := tx.exec(ctx, qInsertEvent, owner, ev.Seq, ev.EventID, typ, ev.PlantID, ev.EventData(), ev.CreatedAt.UnixNano()); err != nil {
		return wrap("insert event", err)
	}
	return db.fanOutEvent(ctx, tx, owner, ev)
}

// fanOutEvent writes the outbox rows of ev (its seq set) for the owner's
// subscriptions that take it (untyped ones: creates, with ev.Payload) and
// sets ev.Deliveries.
func (db *DB) fanOutEvent(ctx context.Context, tx *Tx, owner string, ev *plantstore.Event) error {
	typ := ev.EventType()
	ev.Deliveries = 0
	subs, err := db.subs.count(ctx, tx, owner)
	if err != nil || subs == 0 {
		return err
	}
	// fanOut runs one outbox INSERT and counts the rows it wrote.
	fanOut := func(query string, args ...any) error {
		res, err := tx.exec(ctx, query, args...)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		ev.Deliveries += int(n)
		return err
	}
	if typ == plantstore.EventPlantCreated && ev.Payload != nil {
		if err := fanOut(qFanOut, ev.MessageID, ev.PlantID, ev.Payload, ev.CreatedAt.UnixNano(), owner); err != nil {
			return err
		}
	}
	if ev.EnvelopePrefix != nil {
		return fanOut(qFanOutTyped, ev.MessageID, ev.PlantID, ev.EnvelopePrefix, ev.EnvelopeSuffix,
			ev.CreatedAt.UnixNano(), owner, " "+typ+" ", ev.Seq)
	}
	return nil
}

// ListEvents returns at most f.Limit of the owner's events after f.After
// (of type f.Type when set), by seq.
func (db *DB) ListEvents(ctx context.Context, f plantstore.EventFilter) ([]*plantstore.PlantEvent, error) {
	ctx, cancel := db.readContext(ctx)
	defer cancel()
	q := `SELECT ` + eventColumns + ` FROM events WHERE owner = ? AND seq > ? ORDER BY seq LIMIT ?`
	args := []any{f.Owner, f.After, f.Limit}
	if f.Type != "" {
		q = `SELECT ` + eventColumns + ` FROM events WHERE owner = ? AND type = ? AND seq > ? ORDER BY seq LIMIT ?`
		args = []any{f.Owner, f.Type, f.After, f.Limit}
	}
	st, err := db.readStmt(ctx, q)
	if err != nil {
		return nil, wrap("list events", err)
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, wrap("list events", err)
	}
	defer rows.Close()
	var out []*plantstore.PlantEvent
	for rows.Next() {
		var e plantstore.PlantEvent
		var created int64
		if err := rows.Scan(&e.Owner, &e.Seq, &e.ID, &e.Type, &e.PlantID, &e.Data, &created); err != nil {
			return nil, wrap("list events", err)
		}
		e.CreatedAt = fromNanos(created)
		out = append(out, &e)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap("list events", err)
	}
	return out, nil
}

// PruneEvents deletes at most limit events created before before, in one
// statement of a write of its own (the sequences stay).
func (db *DB) PruneEvents(ctx context.Context, before time.Time, limit int) (int, error) {
	var n int
	err := db.update(ctx, "prune events", func(ctx context.Context, tx *Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM events WHERE (owner, seq) IN
(SELECT owner, seq FROM events WHERE created_at < ? ORDER BY created_at LIMIT ?)`, before.UnixNano(), limit)
		if err != nil {
			return wrap("prune events", err)
		}
		k, err := res.RowsAffected()
		n = int(k)
		return wrap("prune events", err)
	})
	return n, err
}
