package postgres

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore"
)

// Group commit for PostgreSQL. Creates and deletes are queued; each of a few
// committers takes every queued write (up to MaxBatch) and applies them in
// one transaction whose statements are pipelined (one round trip for all
// inserts or deletes, one for the lookups of creates that found a row and
// the webhook outbox rows of the creates that inserted, one commit), so a
// batch costs one WAL flush and a handful of round trips.
// Writes are applied in key order, so two replicas' batches lock rows in the
// same order and cannot deadlock each other.
//
// If anything in a batch fails (a serialization failure, a timeout, an
// error of one statement, which aborts a PostgreSQL transaction), the batch
// is rolled back and each of its writes is run alone through inTx, with its
// own retries: a failing write fails alone.

// DefaultMaxBatch bounds how many writes share one transaction.
const DefaultMaxBatch = 256

// committers is how many batches may be in flight at once per process.
const committers = 2

var errClosed = errors.New("postgres: database is closed")

type opKind int

const (
	opCreate opKind = iota
	opDelete
)

// writeOp is one queued create or delete.
type writeOp struct {
	ctx   context.Context
	kind  opKind
	plant *plantstore.Plant // create: the plant; delete: owner and id

	// results
	stored  *plantstore.Plant
	created bool
	err     error
	done    chan struct{}

	// batch state
	inserted bool // the create's insert stored a row
}

// batcher queues writes for the committers.
type batcher struct {
	db       *DB
	writes   chan *writeOp
	closeMu  sync.RWMutex
	closed   bool
	closing  chan struct{}
	stopped  sync.WaitGroup
	maxBatch int
	onCommit func(writes int, took time.Duration)
}

func (db *DB) startBatcher() {
	b := &batcher{db: db, writes: make(chan *writeOp, 4*DefaultMaxBatch), closing: make(chan struct{}),
		maxBatch: db.MaxBatch, onCommit: db.OnCommit}
	if b.maxBatch <= 0 {
		b.maxBatch = DefaultMaxBatch
	}
	for range committers {
		b.stopped.Add(1)
		go b.loop()
	}
	db.batch = b
}

// submit queues op and waits for its outcome.
func (b *batcher) submit(op *writeOp) {
	op.done = make(chan struct{})
	b.closeMu.RLock()
	if b.closed {
		b.closeMu.RUnlock()
		op.err = errClosed
		return
	}
	select {
	case b.writes <- op:
	case <-op.ctx.Done():
		b.closeMu.RUnlock()
		op.err = wrap("queue", op.ctx.Err())
		return
	}
	b.closeMu.RUnlock()
	<-op.done // even if ctx ends now: the write may commit
}

func (b *batcher) close() {
	b.closeMu.Lock()
	if !b.closed {
		b.closed = true
		close(b.closing)
	}
	b.closeMu.Unlock()
	b.stopped.Wait()
}

func (b *batcher) loop() {
	defer b.stopped.Done()
	batch := make([]*writeOp, 0, b.maxBatch)
	for {
		var op *writeOp
		select {
		case op = <-b.writes:
		case <-b.closing:
			for {
				select {
				case op := <-b.writes:
					b.run([]*writeOp{op})
				default:
					return
				}
			}
		}
		batch = append(batch[:0], op)
	fill:
		for len(batch) < b.maxBatch {
			select {
			case op := <-b.writes:
				batch = append(batch, op)
			default:
				break fill
			}
		}
		b.run(batch)
	}
}

// run applies a batch and answers each write in it.
func (b *batcher) run(batch []*writeOp) {
	live := batch[:0:0]
	for _, op := range batch {
		if err := op.ctx.Err(); err != nil {
			op.err = wrap("queue", err) // the caller left before its turn
			close(op.done)
			continue
		}
		live = append(live, op)
	}
	if len(live) == 0 {
		return
	}
	slices.SortStableFunc(live, func(a, c *writeOp) int {
		return cmp.Or(cmp.Compare(a.plant.Owner, c.plant.Owner), cmp.Compare(a.plant.ID, c.plant.ID))
	})
	start := time.Now()
	if err := b.db.applyBatch(live); err != nil {
		// Something failed: nothing of the batch was kept. Run each write
		// alone so a failing one fails alone.
		for _, op := range live {
			op.stored, op.created, op.err = nil, false, nil
			b.db.applyAlone(op)
		}
	}
	if b.onCommit != nil {
		b.onCommit(len(live), time.Since(start))
	}
	for _, op := range live {
		close(op.done)
	}
}

// applyBatch runs the writes in one pipelined transaction. On error the
// transaction is rolled back and the ops' results are meaningless.
func (db *DB) applyBatch(ops []*writeOp) error {
	ctx, cancel := db.opContext(context.Background())
	defer cancel()
	tx, err := db.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return err
	}
	defer tx.Rollback(context.Background())
	now := db.Now().UTC()

	// Round trip 1: every insert and delete.
	pipe := &pgx.Batch{}
	for _, op := range ops {
		p := op.plant
		switch op.kind {
		case opCreate:
			pipe.Queue(`INSERT INTO plants (owner, id, name, tag, created_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (owner, id) DO NOTHING`,
				p.Owner, p.ID, p.Name, p.Tag, now)
		case opDelete:
			pipe.Queue(`DELETE FROM plants WHERE owner = $1 AND id = $2`, p.Owner, p.ID)
		}
	}
	res := tx.SendBatch(ctx, pipe)
	var lookups []*writeOp
	for _, op := range ops {
		tag, err := res.Exec()
		if err != nil {
			res.Close()
			return err
		}
		switch {
		case op.kind == opDelete && tag.RowsAffected() == 0:
			op.err = plantstore.Errorf(plantstore.CodeNotFound, "plant %d not found", op.plant.ID)
		case op.kind == opCreate && tag.RowsAffected() == 1:
			out := *op.plant
			out.CreatedAt = now
			op.stored, op.created, op.inserted = &out, true, true
		case op.kind == opCreate:
			lookups = append(lookups, op)
		}
	}
	if err := res.Close(); err != nil {
		return err
	}

	// Round trip 2: the stored rows of creates whose id was taken, and the
	// transactional outbox rows of the creates that inserted (fan-out: one
	// delivery per enabled subscription of the owner), in this transaction.
	var fanOuts int
	pipe = &pgx.Batch{}
	for _, op := range lookups {
		pipe.Queue(`SELECT `+plantColumns+` FROM plants WHERE owner = $1 AND id = $2`, op.plant.Owner, op.plant.ID)
	}
	for _, op := range ops {
		if !op.inserted {
			continue
		}
		msgID, err := plantstore.NewMessageID()
		if err != nil {
			return err
		}
		pipe.Queue(qFanOut, fanOutArgs(msgID, op.stored, now)...)
		fanOuts++
	}
	if pipe.Len() > 0 {
		res = tx.SendBatch(ctx, pipe)
		for _, op := range lookups {
			existing, err := scanPlant(res.QueryRow())
			switch {
			case errors.Is(err, pgx.ErrNoRows):
				// Deleted since the insert looked (in this batch or by
				// another replica): redo this one alone after the commit.
				op.err = errRedo
			case err != nil:
				res.Close()
				return err
			case !existing.SameContent(op.plant):
				op.err = plantstore.Errorf(plantstore.CodeConflict, "plant %d already exists with a different name or tag", op.plant.ID)
			default:
				op.stored = existing
			}
		}
		for range fanOuts {
			if _, err := res.Exec(); err != nil {
				res.Close()
				return err
			}
		}
		if err := res.Close(); err != nil {
			return err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	for _, op := range ops {
		if op.err == errRedo {
			op.err = nil
			db.applyAlone(op)
		}
	}
	return nil
}

// errRedo marks a write to be run again alone.
var errRedo = errors.New("postgres: redo alone")

// applyAlone runs one write in its own transaction (with retries).
func (db *DB) applyAlone(op *writeOp) {
	switch op.kind {
	case opCreate:
		op.stored, op.created, op.err = db.createPlant(op.ctx, op.plant)
	case opDelete:
		op.err = db.deletePlant(op.ctx, op.plant.Owner, op.plant.ID)
	}
}
