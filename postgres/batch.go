package postgres

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/plantstore/plantstore"
)

// Group commit of plant writes. InsertPlant and DeletePlant queue a writeOp
// (internal/groupcommit); a committer takes every queued op, up to
// MaxBatch, and apply runs them in one READ COMMITTED transaction whose
// statements are pipelined: round trip 1 sends every INSERT ... ON CONFLICT
// DO NOTHING and DELETE; round trip 2 the lookups of the creates that found
// their key taken and the outbox fan-out of the creates that inserted; then
// COMMIT. A batch costs one WAL flush and three round trips, whatever its
// size. Ops are applied in key order, so two replicas' batches lock rows in
// the same order and cannot deadlock each other.
//
// If anything in a batch fails (a serialization failure, a timeout, a bad
// row: one failing statement aborts a PostgreSQL transaction), the batch is
// rolled back and each op runs alone: apply again, on a batch of one, with
// the bounded retries. A failing write fails alone, and the SQL of a write
// exists once.

// committers is how many batches may be in flight at once per process.
const committers = 2

// maxVanished bounds how often a create runs alone again because the row
// that blocked its insert was deleted before its lookup.
const maxVanished = 3

const (
	plantColumns = `owner, id, name, tag, created_at`
	qInsertPlant = `INSERT INTO plants (owner, id, name, tag, created_at) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (owner, id) DO NOTHING`
	qDeletePlant = `DELETE FROM plants WHERE owner = $1 AND id = $2`
	qFindPlant   = `SELECT ` + plantColumns + ` FROM plants WHERE owner = $1 AND id = $2`
	// qFanOut writes an event's outbox rows in the transaction of its plant:
	// one pending delivery, due at once, per enabled subscription of the
	// owner.
	qFanOut = `INSERT INTO webhook_deliveries (message_id, subscription_id, owner, plant_id, payload, state, attempts, next_attempt_at, created_at)
SELECT $1::TEXT, id, owner, $2::BIGINT, $3::BYTEA, 'pending', 0, $4::TIMESTAMPTZ, $4::TIMESTAMPTZ
FROM webhook_subscriptions WHERE owner = $5 AND disabled_at IS NULL`
)

// writeOp is one queued plant write and its outcome.
type writeOp struct {
	ctx   context.Context // the caller's, bounded by OpTimeout: for running alone
	del   bool
	plant *plantstore.Plant // a delete's has Owner and ID only
	event *plantstore.Event

	existing *plantstore.Plant // a create's: the row that had its key
	err      error             // unwrapped: ErrNotFound, ErrContended, or a failure

	inserted   bool // a create's insert stored the row
	deliveries int  // a create's outbox rows
	vanished   bool // a create's key was taken, but its row gone at the lookup
}

func (op *writeOp) name() string {
	if op.del {
		return "delete plant"
	}
	return "insert plant"
}

func (op *writeOp) reset() {
	op.existing, op.err, op.inserted, op.vanished, op.deliveries = nil, nil, false, false, 0
}

// write queues op for group commit and waits for its outcome, within
// OpTimeout.
func (db *DB) write(ctx context.Context, op *writeOp) error {
	ctx, cancel := db.opContext(ctx)
	defer cancel()
	op.ctx = ctx
	if err := db.queue.Do(ctx, op); err != nil {
		return wrap(op.name(), err)
	}
	return wrap(op.name(), op.err)
}

// commit is the group commit's Apply: it runs batch in one transaction and
// the ops that need it alone.
func (db *DB) commit(batch []*writeOp) {
	ops := slices.SortedStableFunc(slices.Values(batch), func(a, b *writeOp) int {
		return cmp.Or(cmp.Compare(a.plant.Owner, b.plant.Owner), cmp.Compare(a.plant.ID, b.plant.ID))
	})
	ctx, cancel := batchContext(ops)
	err := db.apply(ctx, ops)
	cancel()
	for _, op := range ops {
		if err != nil || op.vanished {
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
		d, ok := op.ctx.Deadline()
		if !ok {
			return context.WithCancel(context.Background())
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(context.Background(), latest)
}

// alone runs op by itself, within its caller's deadline: apply on a batch of
// one, retried on a serialization failure or a deadlock, and run again when
// the row that blocked a create vanished before its lookup (up to
// maxVanished times; then ErrContended).
func (db *DB) alone(op *writeOp) {
	one := []*writeOp{op}
	vanished := 0
	err := retry(op.ctx, func() error {
		for {
			op.reset()
			if err := db.apply(op.ctx, one); err != nil || !op.vanished {
				return err
			}
			if vanished++; vanished == maxVanished {
				return plantstore.ErrContended
			}
		}
	})
	if err != nil {
		op.existing, op.err = nil, err
	}
}

// apply runs ops, in key order, in one READ COMMITTED transaction of two
// pipelined round trips and sets each op's outcome. On error the
// transaction is rolled back and the outcomes mean nothing.
//
// INSERT ... ON CONFLICT DO NOTHING waits for a concurrent insert of the
// same key to commit or abort, so of concurrent creates one inserts and the
// others find its row: READ COMMITTED reads a new snapshot per statement.
func (db *DB) apply(ctx context.Context, ops []*writeOp) error {
	return pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		if err := tx.SendBatch(ctx, writes(ops)).Close(); err != nil {
			return err
		}
		if b := followUps(ops); b.Len() > 0 {
			return tx.SendBatch(ctx, b).Close()
		}
		return nil
	})
}

// writes is round trip 1: every op's INSERT or DELETE.
func writes(ops []*writeOp) *pgx.Batch {
	b := &pgx.Batch{}
	for _, op := range ops {
		p := op.plant
		if op.del {
			b.Queue(qDeletePlant, p.Owner, p.ID).Exec(func(tag pgconn.CommandTag) error {
				op.err = notFoundUnless(tag, nil)
				return nil
			})
			continue
		}
		b.Queue(qInsertPlant, p.Owner, p.ID, p.Name, p.Tag, p.CreatedAt).Exec(func(tag pgconn.CommandTag) error {
			op.inserted = tag.RowsAffected() == 1
			return nil
		})
	}
	return b
}

// followUps is round trip 2: the outbox rows of the creates that inserted,
// and the row that each other create ran into.
func followUps(ops []*writeOp) *pgx.Batch {
	b := &pgx.Batch{}
	for _, op := range ops {
		switch ev := op.event; {
		case op.del:
		case op.inserted && ev != nil:
			b.Queue(qFanOut, ev.MessageID, ev.PlantID, ev.Payload, ev.CreatedAt, op.plant.Owner).Exec(func(tag pgconn.CommandTag) error {
				op.deliveries = int(tag.RowsAffected())
				return nil
			})
		case !op.inserted:
			b.Queue(qFindPlant, op.plant.Owner, op.plant.ID).Query(func(rows pgx.Rows) (err error) {
				op.existing, err = pgx.CollectOneRow(rows, scanPlant)
				if errors.Is(err, pgx.ErrNoRows) {
					op.vanished = true // deleted since the insert looked
					return nil
				}
				return err
			})
		}
	}
	return b
}
