package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/plantstore/plantstore"
)

// Group commit of plant writes. InsertPlant and DeletePlant queue a writeOp
// (internal/groupcommit); a committer takes every queued op, up to
// MaxBatch, and apply runs them as one transaction. The ops, in key order,
// are split into runs of creates and runs of deletes. A run of creates is
// one statement, its rows sent as arrays (unnest), that also writes the
// outbox rows of the plants it inserts; a run of deletes is a DELETE per
// key. When no key appears twice in the batch (the common case) there are
// at most two runs, over different keys, pipelined with a single Sync,
// which PostgreSQL runs as one implicit transaction: a batch of creates
// costs one round trip, one WAL flush and one statement, whatever its
// size, and its work on the server grows with its rows, not with
// statements. A create whose key was taken reads the row that has it with
// a query by key; when no key repeats, after the commit.
//
// No statement joins plants with an array of keys: PostgreSQL keeps the
// plan of a prepared statement, and a plan made while the table was small
// (a hash join over all of it) would be kept as the table grows.
//
// The runs keep the outcome of applying the ops one by one in queue order:
// ops on different keys commute, and ops on one key keep their order
// because each run holds a key at most once and a later op on a key goes
// to a later run (create, delete, create of one id: three runs). A batch
// with such a key runs its runs one after another in an explicit
// transaction, reading the rows that the creates of each run found their
// keys taken by before the next run. Sorting by key also makes every run
// lock its rows in key order.
//
// A domain outcome (a create whose key is taken, a delete of a missing
// row) writes nothing and is no error. If anything else fails, what
// happens next follows the commit-outcome rule (outcome.go). When the
// failure proves that nothing of the batch was committed (a serialization
// failure, a statement timeout, a bad row: one failing statement aborts a
// PostgreSQL transaction, and the server skips the rest of the pipeline,
// COMMIT included; or nothing was sent), each op runs alone: apply again,
// on a batch of one, with the bounded retries. A failing write fails
// alone, and the SQL of a write exists once. When the batch may have
// committed (the connection lost after the pipeline went out, a timeout
// waiting for the COMMIT's answer, a warning while it waited for the
// synchronous standby), no op runs again: each fails with
// outcomeUnknownError (503), and the client's retry finds the row or
// writes it.
//
// A create whose key was taken is answered with the row read back only
// once a commit that followed the read returned (qConfirm).

// committers is how many batches may be in flight at once per process.
const committers = 2

// maxUnresolved bounds how often a create runs alone again because the row
// that blocked its insert was gone before it could be read (see alone).
const maxUnresolved = 3

const (
	// qCreatePlants inserts a run of plants given as one array per column,
	// in key order, skipping those whose key is taken, with their
	// updated_at ($9) and their words ($10, searchText: the search index
	// is written in the same statement). Each create it inserts that
	// carries an event (an event id) also gets its plant.created event
	// ($11 the type, $12 its bit): the owners'
	// event_sequences rows are advanced by their inserted creates (locked
	// in owner order, held until the commit: see event.go) and the events
	// numbered in key order, then written with their outbox rows by the one
	// fan-out (writeEventsSQL, fanOutSQL). It returns one row per create:
	// its position in the arrays (1-based), whether it inserted, how many
	// deliveries it wrote, and its event's seq (0: none). It reads no plant
	// (see above).
	qCreatePlants = `WITH input AS (
	SELECT * FROM unnest($1::TEXT[], $2::BIGINT[], $3::TEXT[], $4::TEXT[], $5::TIMESTAMPTZ[], $6::TEXT[], $7::TEXT[], $8::TIMESTAMPTZ[],
		$9::TIMESTAMPTZ[], $10::TEXT[])
	WITH ORDINALITY AS input (owner, id, name, tag, created_at, event_id, message_id, event_at, updated_at, words, n)
), inserted AS (
	INSERT INTO plants (owner, id, name, tag, created_at, updated_at, search)
	SELECT owner, id, name, tag, created_at, updated_at, ` + searchOf + `words` + searchEnd + ` FROM input ORDER BY n
	ON CONFLICT (owner, id) DO NOTHING
	RETURNING owner, id
), ev AS (
	SELECT i.*, row_number() OVER (PARTITION BY i.owner ORDER BY i.n) AS k, count(*) OVER (PARTITION BY i.owner) AS c
	FROM inserted JOIN input i USING (owner, id)
	WHERE i.event_id IS NOT NULL
), seqs AS (
	INSERT INTO event_sequences AS q (owner, last)
	SELECT owner, count(*) FROM ev GROUP BY owner ORDER BY owner
	ON CONFLICT (owner) DO UPDATE SET last = q.last + EXCLUDED.last
	RETURNING owner, last
), evs AS (
	SELECT e.owner, s.last - e.c + e.k AS seq, e.event_id AS id, $11::TEXT AS type, e.id AS plant_id, e.name, e.tag,
		e.event_at AS created_at, e.created_at AS plant_created_at, e.updated_at AS plant_updated_at,
		e.message_id, $12::BIGINT AS bit, e.n
	FROM ev e JOIN seqs s USING (owner)
), written AS (
	` + writeEventsSQL + `
), delivered AS (
	` + fanOutSQL + `
)
SELECT i.n, inserted.id IS NOT NULL, COALESCE(d.deliveries, 0), COALESCE(evs.seq, 0)
FROM input i
LEFT JOIN inserted USING (owner, id)
LEFT JOIN evs ON evs.n = i.n
LEFT JOIN (SELECT owner, seq, count(*) AS deliveries FROM delivered GROUP BY owner, seq) d ON d.owner = evs.owner AND d.seq = evs.seq`

	// qDeletePlant deletes one plant. Deleting a run in one statement
	// would join plants with the keys (see above); runs of deletes are
	// short, and a statement per key measured as fast as one statement
	// for the run up to about eight keys.
	qDeletePlant = `DELETE FROM plants WHERE owner = $1 AND id = $2`
)

// writeOp is one queued plant write and its outcome.
type writeOp struct {
	ctx      context.Context // the caller's: for running alone
	deadline time.Time       // OpTimeout after the call
	del      bool
	plant    *plantstore.Plant // a delete's has Owner and ID only
	event    *plantstore.Event

	existing   *plantstore.Plant // a create's: the row that had its key
	err        error             // unwrapped: ErrNotFound, ErrContended, or a failure
	seq        int64             // a create's event's seq (0: none written)
	deliveries int               // a create's outbox rows
	taken      bool              // a create's key was taken: existing is to be read
	unresolved bool              // a create's key was taken, but the row gone when read, or its read not confirmed
	readErr    error             // why the read of a taken key was not confirmed (with unresolved)
}

// failed tells a write that failed for the storage or the code: a batch
// with one is a failed span.
func (op *writeOp) failed() bool { return plantstore.FailedWrite(op.err) }

func (op *writeOp) name() string {
	if op.del {
		return "delete plant"
	}
	return "insert plant"
}

func (op *writeOp) reset() {
	op.existing, op.err, op.seq, op.deliveries, op.taken, op.unresolved, op.readErr = nil, nil, 0, 0, false, false, nil
}

// write queues op for group commit and waits for its outcome, within
// OpTimeout (a deadline carried by op, not a context of its own: that
// would cost allocations per write).
func (db *DB) write(ctx context.Context, op *writeOp) error {
	op.ctx = ctx
	op.deadline = time.Now().Add(db.Timeout())
	if err := db.queue.DoBy(ctx, op.deadline, op); err != nil {
		return wrap(op.name(), err)
	}
	return wrap(op.name(), op.err)
}

// until returns when op's caller stops waiting: the earlier of its
// context's deadline and op's; ok is false when neither bounds it.
func (op *writeOp) until() (t time.Time, ok bool) {
	t, ok = op.ctx.Deadline()
	if !op.deadline.IsZero() && (!ok || op.deadline.Before(t)) {
		t, ok = op.deadline, true
	}
	return t, ok
}

// commit is the group commit's Apply: it runs batch in one transaction and
// the ops that need it alone, and records the outcome of each transaction
// for Ping (wrote: one atomic load for a batch that commits). A batch that
// may have committed is not run again (see above).
func (db *DB) commit(batch []*writeOp) {
	ops := slices.Clone(batch)
	slices.SortStableFunc(ops, func(a, b *writeOp) int {
		return cmp.Or(cmp.Compare(a.plant.Owner, b.plant.Owner), cmp.Compare(a.plant.ID, b.plant.ID))
	})
	ctx, cancel := batchContext(ops)
	start := db.ready.now()
	err := db.wrote(start, db.apply(ctx, ops))
	cancel()
	for _, op := range ops {
		switch {
		case err != nil && !committedNothing(err):
			op.existing, op.err = nil, err
		case err != nil || op.unresolved:
			db.alone(op)
		}
	}
}

// batchContext bounds a batch by the latest deadline of its ops: past it no
// caller waits for the batch any more. It is no caller's context, so that
// one caller leaving does not abort the others' transaction.
func batchContext(ops []*writeOp) (context.Context, context.CancelFunc) {
	var latest time.Time
	for _, op := range ops {
		d, ok := op.until()
		if !ok {
			return context.WithCancel(context.Background())
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(context.Background(), latest)
}

// alone runs op by itself, within its caller's deadline: apply on a batch
// of one, retried on a serialization failure or a deadlock, and run again
// when the row that blocked a create was gone before it could be read (up
// to maxUnresolved times; then ErrContended). It fails with the error of
// a read that could not be confirmed, and is not run again after an error
// that leaves its commit's outcome unknown. Its outcome is recorded for
// Ping (wrote).
func (db *DB) alone(op *writeOp) {
	ctx := op.ctx
	if !op.deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, op.deadline)
		defer cancel()
	}
	one := []*writeOp{op}
	tries := 0
	start := db.ready.now()
	err := db.wrote(start, retry(ctx, func() error {
		for {
			op.reset()
			if err := db.apply(ctx, one); err != nil || !op.unresolved {
				return err
			}
			if op.readErr != nil {
				return op.readErr
			}
			if tries++; tries == maxUnresolved {
				return plantstore.ErrContended
			}
		}
	}))
	if err != nil {
		op.existing, op.err = nil, err
	}
}

// apply runs ops, which must be in key order, in one transaction and sets
// each op's outcome; a create whose key was taken reads the row that had
// it. Its error is a notCommittedError when nothing is committed (the
// outcomes then mean nothing), or an outcomeUnknownError (see commit).
//
// When no key repeats, the reads come after the commit, in one more
// round trip (only for batches with such creates; see confirmReads): the
// create changed nothing, and the row it returns had the key at a moment
// within the call. A create whose row is gone by then, or whose read
// failed, is left unresolved, for alone.
//
// INSERT ... ON CONFLICT DO NOTHING waits for a concurrent insert or
// delete of the same key to commit or abort, so of concurrent creates one
// inserts and the others find its row. The batch relies on READ COMMITTED,
// which its BEGIN names: at a stricter level such a conflict is a
// serialization failure, and the ops are retried alone.
func (db *DB) apply(ctx context.Context, ops []*writeOp) error {
	if repeatsKey(ops) {
		return db.applyInOrder(ctx, runs(ops))
	}
	b := &pgx.Batch{}
	db.queueBegin(b)
	for _, run := range runs(ops) {
		queueRun(b, run)
	}
	if err := db.sendTx(ctx, b); err != nil {
		return err
	}
	// Committed: from here on no op may run again but those left
	// unresolved, which wrote nothing.
	db.confirmReads(ctx, ops)
	return nil
}

// sendTx ends b, a pipeline that begins a transaction (queueBegin), with
// COMMIT and sends it, in one round trip. It returns nil once the COMMIT
// returned with no warning; else a notCommittedError or an
// outcomeUnknownError (commitError).
func (db *DB) sendTx(ctx context.Context, b *pgx.Batch) error {
	committed := false
	b.Queue(`COMMIT`).Exec(func(tag pgconn.CommandTag) error {
		committed = tag.String() == "COMMIT"
		return nil
	})
	err := db.onConn(ctx, true, func(c *pgx.Conn) error {
		err := c.SendBatch(ctx, b).Close()
		switch {
		case committed:
			return nil // the COMMIT returned; only the pipeline's end was lost, if anything
		case err == nil:
			return &notCommittedError{errRolledBack}
		}
		return commitError(err)
	})
	return err
}

// errRolledBack is the error of a transaction whose COMMIT answered
// ROLLBACK.
var errRolledBack = errors.New("the transaction was rolled back")

// qConfirm writes a WAL record in the transaction that reads the rows of
// creates whose key was taken, so that its commit waits for the
// synchronous standby (where there is one) up to a point after those rows'
// commits: a transaction that wrote nothing would commit without waiting.
// So a create answered with such a row (a replay) is confirmed by a commit
// that followed the read on the same server (outcome.go), even when the
// row's own commit was not (a cancelled wait for the standby, a crash of
// its writer). pg_logical_emit_message (PostgreSQL 9.6 and later, any
// role) writes a logical decoding message that nothing here reads.
const qConfirm = `SELECT pg_logical_emit_message(true, 'plantstore', 'confirm')`

// confirmReads reads, for each create of ops whose key was taken, the row
// that has it, and confirms the reads (qConfirm), in one transaction and
// one round trip. A create whose row is gone, or whose read is not
// confirmed (readErr), is left unresolved.
func (db *DB) confirmReads(ctx context.Context, ops []*writeOp) {
	reads := lookups(ops)
	if reads == nil {
		return
	}
	b := &pgx.Batch{}
	db.queueBegin(b)
	b.QueuedQueries = append(b.QueuedQueries, reads.QueuedQueries...)
	b.Queue(qConfirm)
	if err := db.sendTx(ctx, b); err != nil {
		for _, op := range ops {
			if op.taken || op.existing != nil {
				op.existing, op.taken, op.unresolved, op.readErr = nil, false, true, err
			}
		}
	}
}

// applyInOrder runs runs one after another in a transaction of its own,
// reading the rows that had the keys of each run's creates before the
// next run; the transaction's commit confirms those reads (qConfirm).
func (db *DB) applyInOrder(ctx context.Context, runs [][]*writeOp) error {
	return db.onConn(ctx, true, func(c *pgx.Conn) error {
		tx, err := c.BeginTx(ctx, pgx.TxOptions{BeginQuery: db.beginSQL(pgx.ReadCommitted)})
		if err != nil {
			return &notCommittedError{err}
		}
		if err := db.runInOrder(ctx, tx, runs); err != nil {
			tx.Rollback(ctx)
			return &notCommittedError{err} // COMMIT was not sent
		}
		return commitError(tx.Commit(ctx))
	})
}

// runInOrder is the body of applyInOrder's transaction.
func (db *DB) runInOrder(ctx context.Context, tx pgx.Tx, runs [][]*writeOp) error {
	confirm := false
	for _, run := range runs {
		b := &pgx.Batch{}
		queueRun(b, run)
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		reads := lookups(run)
		if reads == nil {
			continue
		}
		confirm = true
		if err := tx.SendBatch(ctx, reads).Close(); err != nil {
			return err
		}
	}
	if confirm {
		_, err := tx.Exec(ctx, qConfirm)
		return err
	}
	return nil
}

// runs splits ops (in key order) into runs that alternate between creates
// and deletes, in which each key appears at most once, such that applying
// the runs one after another has the outcome of applying ops one by one:
// each op goes to the first run of its kind after the run of the previous
// op on its key. Each run is in key order.
func runs(ops []*writeOp) [][]*writeOp {
	if !slices.ContainsFunc(ops, func(op *writeOp) bool { return op.del }) && !repeatsKey(ops) {
		return [][]*writeOp{ops} // creates of distinct keys (the common case): one run
	}
	var runs [][]*writeOp // even: creates; odd: deletes
	last := -1            // the run of the previous op on the current key
	for i, op := range ops {
		if i == 0 || !sameKey(op, ops[i-1]) {
			last = -1
		}
		r := last + 1
		if op.del != (r%2 == 1) {
			r++
		}
		for len(runs) <= r {
			runs = append(runs, nil)
		}
		runs[r] = append(runs[r], op)
		last = r
	}
	return slices.DeleteFunc(runs, func(run []*writeOp) bool { return len(run) == 0 })
}

func sameKey(a, b *writeOp) bool { return a.plant.Owner == b.plant.Owner && a.plant.ID == b.plant.ID }

// repeatsKey reports whether a key appears more than once in ops (in key
// order).
func repeatsKey(ops []*writeOp) bool {
	for i := 1; i < len(ops); i++ {
		if sameKey(ops[i-1], ops[i]) {
			return true
		}
	}
	return false
}

// queueRun queues the statement of a run and the reading of its outcomes.
func queueRun(b *pgx.Batch, run []*writeOp) {
	if run[0].del {
		queueDeletes(b, run)
	} else {
		queueCreates(b, run)
	}
}

// queueCreates queues the statement of a run of creates and the reading of
// its outcomes.
func queueCreates(b *pgx.Batch, run []*writeOp) {
	n := len(run)
	a := newCreateArgs(n)
	msgIDs := messageIDsOf(run)
	searchTexts(a.words, func(i int) *plantstore.Plant { return run[i].plant })
	for i, op := range run {
		p := op.plant
		a.owners[i], a.ids[i], a.names[i], a.tags[i], a.created[i], a.updated[i] = p.Owner, p.ID, p.Name, p.Tag, p.CreatedAt, p.LastUpdated()
		if ev := op.event; ev != nil {
			a.eventIDs[i], a.messageIDs[i], a.eventsAt[i] = &ev.ID, &msgIDs[i], ev.CreatedAt
		}
	}
	b.Queue(qCreatePlants, &a.owners, &a.ids, &a.names, &a.tags, &a.created, &a.eventIDs, &a.messageIDs, &a.eventsAt, &a.updated, &a.words,
		plantstore.EventPlantCreated, int64(plantstore.EventBit(plantstore.EventPlantCreated))).Query(func(rows pgx.Rows) error {
		var (
			pos, deliveries int
			inserted        bool
			seq             int64
		)
		seen := 0
		_, err := pgx.ForEachRow(rows, []any{&pos, &inserted, &deliveries, &seq}, func() error {
			if pos < 1 || pos > n {
				return fmt.Errorf("create plants: outcome of create %d of %d", pos, n)
			}
			seen++
			op := run[pos-1]
			op.seq, op.deliveries, op.taken = seq, deliveries, !inserted
			return nil
		})
		if err == nil && seen != n {
			err = fmt.Errorf("create plants: %d outcomes for %d creates", seen, n)
		}
		return err
	})
}

// createArgs are the array parameters of qCreatePlants for a run of n
// creates, in one allocation and one per element type.
type createArgs struct {
	owners, names, words       textArray
	ids                        int8Array
	tags, eventIDs, messageIDs nullTextArray
	created, eventsAt, updated timestamptzArray
}

func newCreateArgs(n int) *createArgs {
	texts, nullTexts, times := make([]string, 3*n), make([]*string, 3*n), make([]time.Time, 3*n)
	return &createArgs{
		owners: texts[:n:n], names: texts[n : 2*n : 2*n], words: texts[2*n:],
		ids:  make(int8Array, n),
		tags: nullTexts[:n:n], eventIDs: nullTexts[n : 2*n : 2*n], messageIDs: nullTexts[2*n:],
		created: times[:n:n], eventsAt: times[n : 2*n : 2*n], updated: times[2*n:],
	}
}

// messageIDsOf returns the message ids of the events of run's creates
// (Event.MessageID; "" for a create without one), substrings of one string
// (a fixed number of allocations for the run, not one per create).
func messageIDsOf(run []*writeOp) []string {
	buf := make([]byte, 0, len(run)*len("msg_0123456789abcdef01234567"))
	ends := make([]int, len(run))
	for i, op := range run {
		if op.event != nil {
			buf = op.event.AppendMessageID(buf)
		}
		ends[i] = len(buf)
	}
	s, ids, start := string(buf), make([]string, len(run)), 0
	for i, end := range ends {
		ids[i], start = s[start:end], end
	}
	return ids
}

// queueDeletes queues the statements of a run of deletes and the reading
// of their outcomes: ErrNotFound for a key that had no row.
func queueDeletes(b *pgx.Batch, run []*writeOp) {
	for _, op := range run {
		b.Queue(qDeletePlant, op.plant.Owner, op.plant.ID).Exec(func(tag pgconn.CommandTag) error {
			op.err = notFoundUnless(tag, nil)
			return nil
		})
	}
}

// lookups returns a batch that reads, for each create of ops whose key
// was taken, the row that has it; a create whose row is gone is left
// unresolved; nil when there is no such create (the common case: no
// allocation).
func lookups(ops []*writeOp) *pgx.Batch {
	if !slices.ContainsFunc(ops, func(op *writeOp) bool { return op.taken }) {
		return nil
	}
	b := &pgx.Batch{}
	for _, op := range ops {
		if !op.taken {
			continue
		}
		b.Queue(qFindPlant, op.plant.Owner, op.plant.ID).QueryRow(func(row pgx.Row) error {
			p, err := scanPlant(row, op.plant.Owner, op.plant.ID)
			if errors.Is(err, plantstore.ErrNotFound) {
				op.unresolved = true
			} else if err != nil {
				return err
			}
			op.existing, op.taken = p, false
			return nil
		})
	}
	return b
}
