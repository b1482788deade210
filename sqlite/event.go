package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/plantstore/plantstore"
)

// Events (plantstore.EventStore). Writes are serialised (one writer), so an
// owner's next seq is its event_sequences row plus one, taken in the write
// transaction of the change: seqs have no gaps and commit in order. An event
// is stored as facts (the plant's id, name and tag), never as JSON.
const (
	qNextSeq = `INSERT INTO event_sequences (owner, last) VALUES (?, 1)
ON CONFLICT (owner) DO UPDATE SET last = last + 1 RETURNING last`
	eventColumns = `owner, seq, id, type, plant_id, name, tag, created_at`
	qInsertEvent = `INSERT INTO events (` + eventColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`
	// qFanOut writes the outbox rows of an event: one delivery for each
	// enabled subscription of the owner whose event mask takes the event's
	// type bit (?9), holding the facts its body is rendered from, typed
	// when the mask has plantstore.MaskTyped (bit 1). The one fan-out of
	// every event type.
	qFanOut = `INSERT INTO webhook_deliveries (message_id, subscription_id, owner, plant_id, event_type, seq, name, tag, typed, state, attempts, next_attempt_at, created_at)
SELECT ?1, id, owner, ?2, ?3, ?4, ?5, ?6, event_mask & 1, 'pending', 0, ?7, ?7 FROM webhook_subscriptions
WHERE owner = ?8 AND disabled_at IS NULL AND event_mask & ?9 <> 0`
	// qAddSeq takes ?2 seqs of owner ?1 at once: it returns the last.
	qAddSeq = `INSERT INTO event_sequences (owner, last) VALUES (?1, ?2)
ON CONFLICT (owner) DO UPDATE SET last = last + ?2 RETURNING last`
)

// insertEventsSQL is the multi-row INSERT of n events.
var insertEventsSQL = newMultiInsert(`INSERT INTO events (`+eventColumns+`) VALUES `, `(?,?,?,?,?,?,?,?)`, ``).sql

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
		var err error
		w.seq, w.deliveries, err = db.writeEvent(ctx, tx, w.event, w.plant)
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
		w.seq = sp.next
		sp.next++
	}
	for rest := evs; len(rest) > 0; {
		n := chunk(len(rest))
		piece := rest[:n]
		rest = rest[n:]
		args := make([]any, 0, 8*n)
		for _, w := range piece {
			p, ev := w.plant, w.event
			args = append(args, p.Owner, w.seq, ev.ID, ev.Type, p.ID, p.Name, nullString(p.Tag), ev.CreatedAt.UnixNano())
		}
		// Prepared before the transaction (prepare) for the chunk sizes.
		if _, err := tx.exec(ctx, insertEventsSQL(n), args...); err != nil {
			return wrap("insert events", err)
		}
	}
	for _, w := range evs {
		var err error
		if w.deliveries, err = db.fanOutEvent(ctx, tx, w.event, w.plant, w.seq); err != nil {
			return err
		}
	}
	return nil
}

// writeEvent writes ev, a change of p (the plant as the change left it), in
// tx: the owner's next seq, the event row, and its outbox rows. It returns
// the seq and how many deliveries it wrote. Only the committer calls it.
func (db *DB) writeEvent(ctx context.Context, tx *Tx, ev *plantstore.Event, p *plantstore.Plant) (seq int64, deliveries int, err error) {
	if err := tx.queryRow(ctx, qNextSeq, p.Owner).Scan(&seq); err != nil {
		return 0, 0, wrap("event seq", err)
	}
	if _, err := tx.exec(ctx, qInsertEvent, p.Owner, seq, ev.ID, ev.Type, p.ID, p.Name, nullString(p.Tag), ev.CreatedAt.UnixNano()); err != nil {
		return 0, 0, wrap("insert event", err)
	}
	deliveries, err = db.fanOutEvent(ctx, tx, ev, p, seq)
	return seq, deliveries, err
}

// fanOutEvent writes the outbox rows of ev, a change of p with seq (qFanOut),
// unless the owner has no enabled subscription, and returns how many.
func (db *DB) fanOutEvent(ctx context.Context, tx *Tx, ev *plantstore.Event, p *plantstore.Plant, seq int64) (int, error) {
	subs, err := db.subs.count(ctx, tx, p.Owner)
	if err != nil || subs == 0 {
		return 0, err
	}
	res, err := tx.exec(ctx, qFanOut, ev.MessageID(), p.ID, ev.Type, seq, p.Name, nullString(p.Tag), ev.CreatedAt.UnixNano(),
		p.Owner, int64(plantstore.EventBit(ev.Type)))
	if err != nil {
		return 0, wrap("write webhook deliveries", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
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
		if err := rows.Scan(&e.Owner, &e.Seq, &e.ID, &e.Type, &e.PlantID, &e.Name, &tag, &created); err != nil {
			return nil, wrap("list events", err)
		}
		if tag.Valid {
			e.Tag = &tag.String
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
