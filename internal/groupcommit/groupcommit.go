// Package groupcommit queues concurrent writes so that a backend can apply
// many of them in one transaction: one commit, one fsync (SQLite) or one WAL
// flush and a few round trips (PostgreSQL) for a whole batch. It is the
// queueing half of group commit, shared by the sqlite and postgres row
// stores; what a batch does inside its transaction is theirs.
//
// Batches are formed by what is queued: a committer takes the first write
// it finds and every write queued behind it (up to a maximum), so a lone
// write is applied at once, with no timer, and a busy queue forms large
// batches while the previous one commits.
package groupcommit

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// ErrClosed answers writes that arrive after Close.
var ErrClosed = errors.New("groupcommit: closed")

// Queue hands queued writes of type T (a backend's pointer type carrying
// its arguments and results) to Apply in batches.
type Queue[T any] struct {
	apply    func(batch []T)
	observe  func(writes int, took time.Duration)
	max      int
	tracer   trace.Tracer // nil: no spans
	spanName string
	spanOpt  trace.SpanStartEventOption
	failed   func(T) bool

	items   chan *item[T]
	free    sync.Pool    // *item[T] to reuse (getItem)
	closeMu sync.RWMutex // held for reading while queueing a write
	closed  bool
	closing chan struct{}
	stopped sync.WaitGroup
}

// item is one queued write. Items are reused (getItem, putItem), so that a
// write costs no allocation for its item nor its channel: done has room
// for the one signal the committer sends when it is finished with the
// item, and it touches the item no more after that.
type item[T any] struct {
	ctx      context.Context
	deadline time.Time // zero: none
	op       T
	err      error // set when the op was skipped
	done     chan struct{}
}

func (q *Queue[T]) getItem() *item[T] {
	if it, ok := q.free.Get().(*item[T]); ok {
		return it
	}
	return &item[T]{done: make(chan struct{}, 1)}
}

// putItem recycles it, which no one may use any more (a queued item: once
// its done signal was received).
func (q *Queue[T]) putItem(it *item[T]) {
	var zero T
	it.ctx, it.op, it.err = nil, zero, nil
	q.free.Put(it)
}

// Config configures a Queue.
type Config[T any] struct {
	// Apply runs a batch and stores each op's outcome in the op. It is
	// called by one committer at a time per batch; with Committers > 1
	// several batches may be applied at once.
	Apply func(batch []T)
	// Committers is how many batches may be applied at once (default 1).
	Committers int
	// MaxBatch bounds a batch (default 256).
	MaxBatch int
	// Observe, if set, is told each batch's size and how long Apply took.
	Observe func(writes int, took time.Duration)

	// Tracer, if set, makes one span (SpanName, kind internal) of each
	// batch Apply runs, with the number of writes (db.operation.batch.size)
	// and Attributes, linked to the span of each write's context; nil: no
	// spans, at no cost. Failed, if set, tells a failed write after Apply:
	// a batch with one is marked as an error.
	Tracer     trace.Tracer
	SpanName   string
	Attributes []attribute.KeyValue
	Failed     func(T) bool
}

// Traced returns c with batch spans from tp's tracer named scope (Tracer,
// SpanName, Failed and Attributes set); a nil tp returns c unchanged.
func (c Config[T]) Traced(tp trace.TracerProvider, scope, span string, failed func(T) bool, attrs ...attribute.KeyValue) Config[T] {
	if tp == nil {
		return c
	}
	c.Tracer, c.SpanName, c.Failed, c.Attributes = tp.Tracer(scope), span, failed, attrs
	return c
}

// DefaultSpanName names a batch's span when Config.SpanName is empty.
const DefaultSpanName = "group commit"

// DefaultMaxBatch bounds a batch when Config.MaxBatch is zero.
const DefaultMaxBatch = 256

// New starts the committers.
func New[T any](c Config[T]) *Queue[T] {
	q := &Queue[T]{apply: c.Apply, observe: c.Observe, max: c.MaxBatch, closing: make(chan struct{})}
	if q.max <= 0 {
		q.max = DefaultMaxBatch
	}
	if c.Tracer != nil {
		q.tracer, q.failed = c.Tracer, c.Failed
		q.spanName = c.SpanName
		if q.spanName == "" {
			q.spanName = DefaultSpanName
		}
		q.spanOpt = trace.WithAttributes(c.Attributes...)
	}
	n := max(1, c.Committers)
	q.items = make(chan *item[T], 4*q.max)
	for range n {
		q.stopped.Add(1)
		go q.loop()
	}
	return q
}

// Do queues op and returns once Apply has run it (the op then carries its
// result), even if ctx ends meanwhile: the write may commit. It returns
// ErrClosed after Close, and ctx's error when ctx ended before the op was
// queued or before its batch began (the op was then not applied).
func (q *Queue[T]) Do(ctx context.Context, op T) error {
	return q.DoBy(ctx, time.Time{}, op)
}

// DoBy is Do with a deadline (zero: none) that bounds, like ctx, the wait
// for room in the queue and for the op's batch to begin: past it the op is
// not applied and DoBy returns context.DeadlineExceeded. A deadline value
// costs nothing per call, where a context.WithTimeout allocates.
func (q *Queue[T]) DoBy(ctx context.Context, deadline time.Time, op T) error {
	// The read lock keeps Close from completing while a write is being
	// queued, so every queued write is seen by the committers' final drain.
	q.closeMu.RLock()
	if q.closed {
		q.closeMu.RUnlock()
		return ErrClosed
	}
	it := q.getItem()
	it.ctx, it.deadline, it.op = ctx, deadline, op
	select {
	case q.items <- it:
	default:
		if err := q.wait(it); err != nil {
			q.closeMu.RUnlock()
			q.putItem(it) // not queued
			return err
		}
	}
	q.closeMu.RUnlock()
	<-it.done
	err := it.err
	q.putItem(it)
	return err
}

// wait queues it when the queue is full: until there is room, its context
// ends or its deadline passes.
func (q *Queue[T]) wait(it *item[T]) error {
	var expired <-chan time.Time
	if !it.deadline.IsZero() {
		t := time.NewTimer(time.Until(it.deadline))
		defer t.Stop()
		expired = t.C
	}
	select {
	case q.items <- it:
		return nil
	case <-it.ctx.Done():
		return it.ctx.Err()
	case <-expired:
		return context.DeadlineExceeded
	}
}

// Close applies the writes already queued, then stops the committers.
// Writes that arrive later get ErrClosed.
func (q *Queue[T]) Close() {
	q.closeMu.Lock()
	if !q.closed {
		q.closed = true
		close(q.closing)
	}
	q.closeMu.Unlock()
	q.stopped.Wait()
}

func (q *Queue[T]) loop() {
	defer q.stopped.Done()
	batch := make([]*item[T], 0, q.max)
	ops := make([]T, 0, q.max)
	for {
		var first *item[T]
		select {
		case first = <-q.items:
		case <-q.closing:
			// Finish what was queued before Close.
			select {
			case first = <-q.items:
			default:
				return
			}
		}
		batch = append(batch[:0], first)
		if len(q.items) == 0 {
			// Alone in the queue: let the goroutines that are ready to run
			// queue their writes first (a request being decoded on another
			// goroutine), so that a fast commit (no fsync to wait for) does
			// not leave batches of one. No timer: when nothing else is
			// runnable, Gosched returns at once.
			runtime.Gosched()
		}
	fill:
		for len(batch) < q.max {
			select {
			case it := <-q.items:
				batch = append(batch, it)
			default:
				break fill
			}
		}
		ops = ops[:0]
		now := time.Now()
		for _, it := range batch {
			switch {
			case it.ctx.Err() != nil:
				it.err = it.ctx.Err() // the caller left before its turn: skip it
			case !it.deadline.IsZero() && now.After(it.deadline):
				it.err = context.DeadlineExceeded // it waited too long
			default:
				ops = append(ops, it.op)
			}
		}
		if len(ops) > 0 {
			var span trace.Span
			if q.tracer != nil {
				span = q.startSpan(batch, len(ops))
			}
			start := time.Now()
			q.apply(ops)
			if q.observe != nil {
				q.observe(len(ops), time.Since(start))
			}
			if span != nil {
				q.endSpan(span, ops)
			}
		}
		for _, it := range batch {
			it.done <- struct{}{} // the last use of it: its writer may reuse it now
		}
		clear(batch)
		clear(ops)
	}
}

// startSpan starts the span of a batch of n writes, linked to the span of
// each applied write's context (each request's).
func (q *Queue[T]) startSpan(batch []*item[T], n int) trace.Span {
	links := make([]trace.Link, 0, n)
	for _, it := range batch {
		if it.err != nil {
			continue // skipped
		}
		if sc := trace.SpanContextFromContext(it.ctx); sc.IsValid() {
			links = append(links, trace.Link{SpanContext: sc})
		}
	}
	_, span := q.tracer.Start(context.Background(), q.spanName, q.spanOpt,
		trace.WithLinks(links...),
		trace.WithAttributes(attribute.Int("db.operation.batch.size", n)))
	return span
}

// endSpan ends a batch's span, an error when a write failed.
func (q *Queue[T]) endSpan(span trace.Span, ops []T) {
	if q.failed != nil {
		failed := 0
		for _, op := range ops {
			if q.failed(op) {
				failed++
			}
		}
		if failed > 0 {
			span.SetAttributes(attribute.Int("plantstore.failed_writes", failed))
			span.SetStatus(codes.Error, "a write failed")
		}
	}
	span.End()
}

// Queued returns how many writes wait for a committer (for tests).
func (q *Queue[T]) Queued() int { return len(q.items) }
