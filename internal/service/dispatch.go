package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/outage"
	"github.com/plantstore/plantstore/internal/prune"
)

// Sender sends what the service decides to send: one signed request of a
// task (a delivery or a ping) at a time, whose result it reports. It
// decides nothing and calls nothing back; internal/sender implements it
// over the client that refuses internal addresses.
type Sender interface {
	// Send POSTs t once to t.URL, its body rendered from its facts and
	// signed with t.Secrets, and says what came of it. ctx bounds it.
	Send(ctx context.Context, t *plantstore.Task) plantstore.SendResult
	// CheckURL refuses a subscription URL that Send could never reach,
	// with an error whose message says why in a phrase that fits after
	// "url: "; it makes no connection and no DNS lookup.
	CheckURL(url string) error
}

// Queue is the outbox as the Dispatcher works it: *OutboxService over the
// row stores.
type Queue interface {
	ClaimDeliveries(ctx context.Context, c plantstore.Claim) ([]*plantstore.Task, error)
	CompleteDelivery(ctx context.Context, t *plantstore.Task, r plantstore.AttemptResult) error
	OutboxStats(ctx context.Context) (pending int, oldest time.Time, err error)
	PruneOutbox(ctx context.Context, before time.Time, limit int) (int, error)
}

// Delivery defaults.
const (
	// DefaultConcurrency is the default number of workers: attempts in
	// flight at once. Each is a goroutine mostly waiting on the network; 32
	// lets an owner whose receivers hang hold a quarter of them (the
	// default owner share) while the other owners keep 24.
	DefaultConcurrency = 32
	// DefaultMaxInFlight bounds the attempts in flight to one subscription.
	DefaultMaxInFlight = 2
	// DefaultAttemptTimeout bounds one attempt (a delivery or a ping).
	DefaultAttemptTimeout = 15 * time.Second
	DefaultLease          = 60 * time.Second
	DefaultPollInterval   = 500 * time.Millisecond
	// DeliveryPruneInterval is the time between two passes of the
	// retention pruning of delivery history (shorter when the retention
	// is); DeliveryPruneBatch bounds the rows one statement deletes, and
	// deliveryPrunePause is the pause between two batches of a pass, which
	// leaves the database to the requests.
	DeliveryPruneInterval = time.Minute
	DeliveryPruneBatch    = 500
	deliveryPrunePause    = 20 * time.Millisecond
	// MinRetryAfter and MaxRetryAfter clamp a receiver's Retry-After.
	MinRetryAfter = time.Second
	MaxRetryAfter = 24 * time.Hour
	// completeTimeout bounds recording an attempt, which happens even
	// after Run's context has ended.
	completeTimeout = 10 * time.Second
	// recordRetry is the first wait before recording an attempt again
	// after a failure, recordRetryMax the longest.
	recordRetry    = 250 * time.Millisecond
	recordRetryMax = 2 * time.Second
	// statsInterval is how often the queue gauges are refreshed from
	// OutboxStats.
	statsInterval = 5 * time.Second
)

// DefaultSchedule is the nominal wait after each failed attempt: a delivery
// is attempted at most len(DefaultSchedule)+1 = 11 times, at about 0 s, 5 s,
// 35 s, 2.5 min, 12.5 min, 42.5 min, 1 h 43 min, 3 h 43 min, 7 h 43 min,
// 15 h 43 min and 23 h 43 min after its creation, then marked failed. Each
// wait is jittered (see DeliveryConfig.Jitter), so the total span is about
// a day. A Retry-After header replaces the wait it follows.
var DefaultSchedule = []time.Duration{
	5 * time.Second,
	30 * time.Second,
	2 * time.Minute,
	10 * time.Minute,
	30 * time.Minute,
	time.Hour,
	2 * time.Hour,
	4 * time.Hour,
	8 * time.Hour,
	8 * time.Hour,
}

// DefaultJitter returns a wait drawn uniformly from [d/2, 3d/2): the mean
// stays d, so the schedule keeps its span of about a day, while deliveries
// that failed together (a receiver's outage) come back spread over a window
// as wide as d. (Full jitter, uniform over [0, d), would halve the mean span
// and could shrink an 8 h wait to seconds.)
func DefaultJitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return d/2 + rand.N(d)
}

// DeliveryConfig configures the webhook deliveries (the Dispatcher) and
// the pings; every field has a default.
type DeliveryConfig struct {
	Logger *slog.Logger // nil: discard
	// Metrics receives the attempts' outcomes and the queue's size; nil:
	// none.
	Metrics DeliveryMetrics
	// Concurrency is the number of workers, hence of attempts in flight;
	// 0 means DefaultConcurrency. A claim asks for as many deliveries as
	// there are idle workers.
	Concurrency int
	// MaxInFlight bounds the attempts in flight (deliveries and pings) to
	// one subscription; 0 means DefaultMaxInFlight.
	MaxInFlight int
	// MaxInFlightPerOwner bounds the attempts in flight to one owner's
	// subscriptions; 0 means a quarter of Concurrency, at least 1.
	MaxInFlightPerOwner int
	// AttemptTimeout bounds one attempt; 0 means DefaultAttemptTimeout.
	AttemptTimeout time.Duration
	// Lease is how long a claimed delivery stays with this process; it
	// must exceed AttemptTimeout. 0 means DefaultLease.
	Lease time.Duration
	// PollInterval is the wait between claims when nothing was due; 0
	// means DefaultPollInterval. A commit that wrote deliveries cuts it
	// short (Notifier).
	PollInterval time.Duration
	// Schedule is the wait after each failed attempt; the number of
	// attempts is len(Schedule)+1. nil means DefaultSchedule.
	Schedule []time.Duration
	// Jitter turns a nominal wait into the actual one; nil means
	// DefaultJitter.
	Jitter func(time.Duration) time.Duration
	// Retention is how long delivery history is kept: attempts, and
	// finished (succeeded or failed) deliveries, older than this are
	// deleted in batches of DeliveryPruneBatch rows, a pass every
	// DeliveryPruneInterval (or Retention, if shorter) and one when Run
	// starts. 0 keeps everything.
	Retention time.Duration
}

// withDefaults returns c with every unset field at its default.
func (c DeliveryConfig) withDefaults() DeliveryConfig {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Concurrency <= 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.MaxInFlightPerOwner <= 0 {
		c.MaxInFlightPerOwner = max(1, c.Concurrency/4)
	}
	if c.AttemptTimeout <= 0 {
		c.AttemptTimeout = DefaultAttemptTimeout
	}
	if c.Lease <= 0 {
		c.Lease = DefaultLease
	}
	if c.PollInterval <= 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.Schedule == nil {
		c.Schedule = DefaultSchedule
	}
	if c.Jitter == nil {
		c.Jitter = DefaultJitter
	}
	return c
}

// Dispatcher delivers the outbox's pending deliveries: it claims due ones
// under a lease, has the Sender make each attempt on a bounded pool of
// workers, decides what becomes of the delivery (succeeded, retried after
// the schedule's wait or the receiver's Retry-After, failed, its
// subscription disabled on 410) and records it. Several dispatchers
// (replicas) may share one outbox: the lease keeps a delivery with one of
// them at a time.
//
// Claims are fair (Pick): round-robin across owners, then across an
// owner's subscriptions, at most MaxInFlight attempts in flight to one
// subscription and MaxInFlightPerOwner to one owner (counted over every
// replica sharing the database, and this process's pings), so one owner's
// slow or hanging receivers hold at most that share of the workers.
type Dispatcher struct {
	queue  Queue
	sender Sender
	c      DeliveryConfig
	now    func() time.Time
	due    <-chan struct{}
	pings  *pingTable
	// The outages of the periodic storage calls: each logs a line when it
	// starts failing and one when it succeeds again, not one per attempt.
	claims, records, stats, prunes *outage.Log
}

// NewDispatcher returns the dispatcher of q (s.Outbox; tests give their
// own), sending through Config.Sender with Config.Delivery, woken by
// s.Notifier, counting the pings of s.Webhooks. It fails only for an
// invalid configuration: no queue, no sender, a lease that does not exceed
// the attempt timeout.
func (s *Services) NewDispatcher(q Queue) (*Dispatcher, error) {
	c := s.delivery
	switch {
	case q == nil:
		return nil, errors.New("service: dispatcher: no outbox")
	case s.sender == nil:
		return nil, errors.New("service: dispatcher: no sender")
	case c.Lease <= c.AttemptTimeout:
		return nil, fmt.Errorf("service: dispatcher: lease %v must exceed the attempt timeout %v", c.Lease, c.AttemptTimeout)
	}
	log := c.Logger
	return &Dispatcher{
		queue: q, sender: s.sender, c: c, now: s.now, due: s.Notifier.due, pings: s.pings,
		// The operations' names are what operators alert on
		// (docs/observability.md): they stay as they are.
		claims:  outage.New(log, slog.LevelError, "webhook: claim tasks"),
		records: outage.New(log, slog.LevelError, "webhook: record attempt"),
		stats:   outage.New(log, slog.LevelWarn, "webhook: outbox stats"),
		prunes:  outage.New(log, slog.LevelWarn, "webhook: prune delivery history"),
	}, nil
}

// Run delivers until ctx ends. Each worker runs one attempt at a time, so a
// slow receiver holds one worker and the others keep claiming and
// delivering. When ctx ends Run stops claiming, waits for the attempts in
// flight (each bounded by AttemptTimeout) to finish and be recorded, and
// returns. Failures to claim or record are logged (once when they start
// and once when they end, internal/outage) and retried, a record while
// the delivery's lease lasts; a delivery whose attempt could not be
// recorded is claimed again once its lease expires (at least once
// delivery). A recorded attempt frees its place in its subscription's
// bounds, and Run claims again at once. Run once at a time.
func (d *Dispatcher) Run(ctx context.Context) {
	c := d.c
	var wg sync.WaitGroup
	defer wg.Wait()
	if c.Metrics != nil {
		wg.Go(func() { d.refreshStats(ctx) })
	}
	if c.Retention > 0 {
		wg.Go(func() { d.prune(ctx) })
	}
	// idle holds one token per idle worker.
	idle := make(chan struct{}, c.Concurrency)
	for range c.Concurrency {
		idle <- struct{}{}
	}
	// freed is told, a buffer of one, when a worker has recorded its
	// attempt: the lease it held no longer counts toward its
	// subscription's and owner's bounds, so a claim that those bounds cut
	// short can take more at once, rather than a poll interval later (a
	// backlog would otherwise drain at MaxInFlight per poll interval,
	// however fast its receiver answers).
	freed := make(chan struct{}, 1)
	// attempts outlive ctx: an attempt in flight at shutdown completes and
	// is recorded.
	detached := context.WithoutCancel(ctx)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		// Wait for an idle worker, then take every other idle one.
		select {
		case <-ctx.Done():
			return
		case <-idle:
		}
		n := 1
	take:
		for n < c.Concurrency {
			select {
			case <-idle:
				n++
			default:
				break take
			}
		}
		if ctx.Err() != nil { // select picks at random among ready cases
			return
		}
		tasks, err := d.queue.ClaimDeliveries(ctx, plantstore.Claim{Lease: c.Lease, Limit: n,
			PerSubscription: c.MaxInFlight, PerOwner: c.MaxInFlightPerOwner, Busy: d.pings.busy()})
		switch {
		case err != nil && ctx.Err() == nil:
			d.claims.Fail(ctx, err)
		case err == nil:
			d.claims.OK(ctx)
		}
		if len(tasks) > n {
			c.Logger.Error("webhook: claim returned more deliveries than asked; the extra ones wait for their lease to expire",
				"asked", n, "got", len(tasks))
			tasks = tasks[:n]
		}
		for i := len(tasks); i < n; i++ {
			idle <- struct{}{}
		}
		claimed := d.now()
		for _, t := range tasks {
			wg.Go(func() {
				defer func() { idle <- struct{}{} }()
				d.deliver(detached, ctx, t, claimed)
				select {
				case freed <- struct{}{}:
				default:
				}
			})
		}
		if err == nil && len(tasks) == n {
			continue // there may be more due: claim again as workers allow
		}
		timer.Reset(c.PollInterval)
		select {
		case <-ctx.Done():
			return
		case <-d.due:
		case <-freed:
		case <-timer.C:
		}
	}
}

// refreshStats sets the queue gauges now and every stats interval.
func (d *Dispatcher) refreshStats(ctx context.Context) {
	t := time.NewTicker(statsInterval)
	defer t.Stop()
	for {
		pending, oldest, err := d.queue.OutboxStats(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			d.stats.Fail(ctx, err)
		case err == nil:
			d.stats.OK(ctx)
			var age time.Duration
			if !oldest.IsZero() {
				age = max(0, d.now().Sub(oldest))
			}
			d.c.Metrics.Queue(pending, age)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// prune deletes the delivery history older than the retention, a pass at
// start and then every interval, each pass in batches until none is left.
// A pass that fails is logged and tried again at the next.
func (d *Dispatcher) prune(ctx context.Context) {
	retention := d.c.Retention
	prune.Loop(ctx, min(DeliveryPruneInterval, retention), func(ctx context.Context) {
		before := d.now().Add(-retention)
		total, err := prune.Pass(ctx, DeliveryPruneBatch, deliveryPrunePause, func(ctx context.Context, limit int) (int, error) {
			return d.queue.PruneOutbox(ctx, before, limit)
		})
		switch {
		case err != nil && ctx.Err() == nil:
			d.prunes.Fail(ctx, err, "deleted", total)
		case err == nil:
			d.prunes.OK(ctx)
		}
		if total > 0 {
			d.c.Logger.Info("webhook: pruned delivery history", "rows", total, "before", before)
		}
	})
}

// deliver makes one attempt at t, claimed at claimed, through the sender,
// decides what becomes of the delivery and records it (record). ctx
// outlives Run's context, run.
func (d *Dispatcher) deliver(ctx, run context.Context, t *plantstore.Task, claimed time.Time) {
	actx, cancel := context.WithTimeout(ctx, d.c.AttemptTimeout)
	sent := d.sender.Send(actx, t)
	cancel()
	r := d.decide(t, sent, d.now())
	outcome := OutcomeRetry
	switch {
	case r.State == plantstore.DeliverySucceeded:
		outcome = OutcomeSucceeded
	case r.Disable:
		outcome = OutcomeDisabled
	case r.State == plantstore.DeliveryFailed:
		outcome = OutcomeFailed
	}
	if d.c.Metrics != nil {
		d.c.Metrics.Attempt(outcome, r.Duration)
	}
	attrs := []any{
		"message_id", t.MessageID, "subscription_id", t.SubscriptionID,
		"attempt", t.Attempts + 1, "outcome", outcome, "status", r.StatusCode,
		"duration", r.Duration,
	}
	if r.Error != "" {
		attrs = append(attrs, "error", r.Error)
	}
	if sent.Cause != nil {
		attrs = append(attrs, "err", sent.Cause)
	}
	if r.NextAttemptAt != nil {
		attrs = append(attrs, "next_attempt_at", *r.NextAttemptAt)
	}
	log := d.c.Logger
	switch outcome {
	case OutcomeSucceeded:
		log.Debug("webhook: delivered", attrs...)
	case OutcomeRetry:
		log.Info("webhook: delivery attempt failed", attrs...)
	default:
		log.Warn("webhook: delivery given up", attrs...)
	}
	d.record(ctx, run, t, r, claimed.Add(d.c.Lease))
}

// record records attempt r of t, whose lease ends at leaseEnd. A failure
// (the database failing over) is tried again, after recordRetry doubling
// up to recordRetryMax, while the lease lasts and Run's context, run, has
// not ended: until it is recorded the lease holds one of the
// subscription's MaxInFlight places, so the subscription's deliveries
// would wait for the lease to end rather than for the database to come
// back. A delivery left unrecorded is claimed again once its lease ends
// (at least once delivery).
func (d *Dispatcher) record(ctx, run context.Context, t *plantstore.Task, r plantstore.AttemptResult, leaseEnd time.Time) {
	wait := recordRetry
	for {
		cctx, cancel := context.WithTimeout(ctx, completeTimeout)
		err := d.queue.CompleteDelivery(cctx, t, r)
		cancel()
		if err == nil {
			d.records.OK(ctx)
			return
		}
		d.records.Fail(ctx, err, "message_id", t.MessageID, "subscription_id", t.SubscriptionID)
		// The next try must end within the lease: past it another claim
		// may hold the delivery.
		if !d.now().Add(wait + completeTimeout).Before(leaseEnd) {
			return
		}
		select {
		case <-run.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, recordRetryMax)
	}
}

// decide says what becomes of delivery t after an attempt that came to
// sent, ended at end: succeeded on 2xx; failed, its subscription disabled,
// on 410 Gone; failed when no retry can succeed (sent.Final: a forbidden
// address, no valid secret; like any failed attempt it counts toward the
// subscription's failing streak) or none is left; else pending until the
// schedule's next wait (jittered), or the receiver's Retry-After (within
// MinRetryAfter and MaxRetryAfter) when it gave one.
func (d *Dispatcher) decide(t *plantstore.Task, sent plantstore.SendResult, end time.Time) plantstore.AttemptResult {
	r := plantstore.AttemptResult{AttemptedAt: sent.AttemptedAt, StatusCode: sent.StatusCode, Error: sent.Error,
		Duration: sent.Duration, ResponseBody: sent.ResponseBody}
	switch {
	case sent.Final:
		r.State = plantstore.DeliveryFailed
		return r
	case sent.StatusCode >= 200 && sent.StatusCode < 300:
		r.State = plantstore.DeliverySucceeded
		return r
	case sent.StatusCode == 410:
		r.State, r.Disable = plantstore.DeliveryFailed, true
		return r
	}
	made := t.Attempts + 1
	if made > len(d.c.Schedule) {
		r.State = plantstore.DeliveryFailed
		return r
	}
	wait := d.c.Jitter(d.c.Schedule[made-1])
	if sent.HasRetryAfter {
		wait = min(max(sent.RetryAfter, MinRetryAfter), MaxRetryAfter)
	}
	next := end.Add(wait)
	r.State, r.NextAttemptAt = plantstore.DeliveryPending, &next
	return r
}
