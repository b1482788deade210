package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"time"

	"github.com/plantstore/plantstore"
)

// Events (plantstore.EventStore). Writes are serialised (one writer), so an
// owner's next seq is its event_sequences row plus one, taken in the write
// transaction of the change: seqs have no gaps and commit in order. An event
// is stored as facts (the plant's id, name, tag and times), never as JSON.
const (
	qNextSeq = `INSERT INTO event_sequences (owner, last) VALUES (?, 1)
ON CONFLICT (owner) DO UPDATE SET last = last + 1 RETURNING last`
	eventColumns = `owner, seq, id, type, plant_id, name, tag, created_at, plant_created_at, plant_updated_at`
	qInsertEvent = `INSERT INTO events (` + eventColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	// qFanOut writes the outbox rows of an event: one delivery for each
	// enabled subscription of the owner whose event mask takes the event's
	// type bit (?9), holding the facts its body is rendered from, typed
	// when the mask has plantstore.MaskTyped (bit 1). The one fan-out of
	// every event type.
	qFanOut = `INSERT INTO webhook_deliveries (message_id, subscription_id, owner, plant_id, event_type, seq, name, tag, typed, state, attempts, next_attempt_at, created_at,
	plant_created_at, plant_updated_at)
SELECT ?1, id, owner, ?2, ?3, ?4, ?5, ?6, event_mask & 1, 'pending', 0, ?7, ?7, ?10, ?11 FROM webhook_subscriptions
WHERE owner = ?8 AND disabled_at IS NULL AND event_mask & ?9 <> 0`
	// qAddSeq takes ?2 seqs of owner ?1 at once: it returns the last.
	qAddSeq = `INSERT INTO event_sequences (owner, last) VALUES (?1, ?2)
ON CONFLICT (owner) DO UPDATE SET last = last + ?2 RETURNING last`
)

// insertEventsSQL is the multi-row INSERT of n events.
var insertEventsSQL = newMultiInsert(`INSERT INTO events (`+eventColumns+`) VALUES `, `(?,?,?,?,?,?,?,?,?,?)`, ``).sql

// writeCreateEvents writes the events of the creates of a run that were
// stored (w.inserted, with an event), as writeEvent would one by one, in
// fewer statements: one seq statement per owner (seqs taken in the run's
// order) and multi-row inserts in power-of-two pieces; then each event's
// outbox rows. Only the committer calls it.
func (db *DB) writeCreateEvents(w *writer, ops []*writeOp) error {
	evs := make([]*writeOp, 0, len(ops))
	for _, op := range ops {
		if op.inserted && op.event != nil {
			evs = append(evs, op)
		}
	}
	if len(evs) == 0 {
		return nil
	}
	if len(evs) == 1 {
		op := evs[0]
		var err error
		op.seq, op.deliveries, err = db.writeEvent(w, op.event, op.plant)
		return err
	}
	// The seqs of each owner: its count in the chunk, taken at once.
	type span struct{ next, n int64 }
	owners := make(map[string]*span, 1)
	order := make([]string, 0, 1)
	for _, op := range evs {
		sp := owners[op.plant.Owner]
		if sp == nil {
			sp = &span{}
			owners[op.plant.Owner] = sp
			order = append(order, op.plant.Owner)
		}
		sp.n++
	}
	for _, o := range order {
		sp := owners[o]
		last, err := addSeq(w, o, sp.n)
		if err != nil {
			return wrap("event seq", err)
		}
		sp.next = last - sp.n + 1
	}
	for _, op := range evs {
		sp := owners[op.plant.Owner]
		op.seq = sp.next
		sp.next++
	}
	for rest := evs; len(rest) > 0; {
		n := chunk(len(rest))
		piece := rest[:n]
		rest = rest[n:]
		w.reset()
		for _, op := range piece {
			eventArgs(w, op.event, op.plant, op.vals, op.seq)
		}
		if err := w.exec(insertEventsSQL(n)); err != nil {
			return wrap("insert events", err)
		}
	}
	for _, op := range evs {
		var err error
		if op.deliveries, err = db.fanOutEvent(w, op.event, op.plant, op.seq); err != nil {
			return err
		}
	}
	return nil
}

// addSeq takes n seqs of owner at once and returns the last (qAddSeq).
func addSeq(w *writer, owner string, n int64) (int64, error) {
	w.reset()
	w.arg(owner)
	w.arg(n)
	row, err := w.one(qAddSeq)
	if err != nil {
		return 0, err
	}
	return int64Of(row[0])
}

// eventArgs appends the arguments of ev's row (eventColumns), a change of
// p (its values boxed in v) with seq.
func eventArgs(w *writer, ev *plantstore.Event, p *plantstore.Plant, v plantVals, seq int64) {
	w.arg(v.owner)
	w.arg(seq)
	w.arg(ev.ID)
	w.arg(eventType(ev.Type))
	w.arg(v.id)
	w.arg(v.name)
	w.arg(v.tag)
	if n := ev.CreatedAt.UnixNano(); n == v.nanos {
		w.arg(v.created) // the service gives a create's event the plant's time
	} else {
		w.arg(n)
	}
	plantTimeArgs(w, p, v.created)
}

// plantTimeArgs appends the times of p, the plant of an event as the
// change left it, in Unix nanoseconds; created is p's creation, boxed.
func plantTimeArgs(w *writer, p *plantstore.Plant, created driver.Value) {
	w.arg(created)
	if p.UpdatedAt.IsZero() || p.UpdatedAt.Equal(p.CreatedAt) {
		w.arg(created)
	} else {
		w.arg(p.UpdatedAt.UnixNano())
	}
}

// eventType is an event type as an argument: a constant's, boxed once.
func eventType(t string) driver.Value {
	switch t {
	case plantstore.EventPlantCreated:
		return plantstore.EventPlantCreated
	case plantstore.EventPlantUpdated:
		return plantstore.EventPlantUpdated
	case plantstore.EventPlantDeleted:
		return plantstore.EventPlantDeleted
	}
	return t
}

// writeEvent writes ev, a change of p (the plant as the change left it), on
// the writer: the owner's next seq, the event row, and its outbox rows. It
// returns the seq and how many deliveries it wrote. Only the committer
// calls it (generic writes through Tx.raw).
func (db *DB) writeEvent(w *writer, ev *plantstore.Event, p *plantstore.Plant) (seq int64, deliveries int, err error) {
	w.reset()
	w.arg(p.Owner)
	row, err := w.one(qNextSeq)
	if err == nil {
		seq, err = int64Of(row[0])
	}
	if err != nil {
		return 0, 0, wrap("event seq", err)
	}
	w.reset()
	eventArgs(w, ev, p, w.vals(p), seq)
	if err := w.exec(qInsertEvent); err != nil {
		return 0, 0, wrap("insert event", err)
	}
	deliveries, err = db.fanOutEvent(w, ev, p, seq)
	return seq, deliveries, err
}

// fanOutEvent writes the outbox rows of ev, a change of p with seq (qFanOut),
// unless the owner has no enabled subscription, and returns how many.
func (db *DB) fanOutEvent(w *writer, ev *plantstore.Event, p *plantstore.Plant, seq int64) (int, error) {
	subs, err := db.subs.count(w, p.Owner)
	if err != nil || subs == 0 {
		return 0, err
	}
	w.reset()
	w.arg(ev.MessageID())
	w.arg(p.ID)
	w.arg(ev.Type)
	w.arg(seq)
	w.arg(p.Name)
	w.arg(nullable(p.Tag))
	w.arg(ev.CreatedAt.UnixNano())
	w.arg(p.Owner)
	w.arg(int64(plantstore.EventBit(ev.Type)))
	plantTimeArgs(w, p, p.CreatedAt.UnixNano())
	n, err := w.execN(qFanOut)
	if err != nil {
		return 0, wrap("write webhook deliveries", err)
	}
	return int(n), nil
}

// ListEvents returns at most f.Limit of the owner's events after f.After
// (of type f.Type when set), by seq.
func (db *DB) ListEvents(ctx context.Context, f plantstore.EventFilter) ([]*plantstore.Event, error) {
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
	var out []*plantstore.Event
	for rows.Next() {
		var e plantstore.Event
		var created int64
		var tag sql.NullString
		var plantCreated, plantUpdated sql.NullInt64
		if err := rows.Scan(&e.Owner, &e.Seq, &e.ID, &e.Type, &e.PlantID, &e.Name, &tag, &created, &plantCreated, &plantUpdated); err != nil {
			return nil, wrap("list events", err)
		}
		if tag.Valid {
			e.Tag = &tag.String
		}
		e.CreatedAt = fromNanos(created)
		setPlantTimes(&e, plantCreated, plantUpdated)
		out = append(out, &e)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap("list events", err)
	}
	return out, nil
}

// setPlantTimes sets e's plant times from their columns (NULL: not known).
func setPlantTimes(e *plantstore.Event, created, updated sql.NullInt64) {
	if created.Valid {
		e.PlantCreatedAt = fromNanos(created.Int64)
	}
	if updated.Valid {
		e.PlantUpdatedAt = fromNanos(updated.Int64)
	}
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
