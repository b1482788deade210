package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/eventjson"
	"github.com/plantstore/plantstore/internal/outage"
	"github.com/plantstore/plantstore/internal/prune"
)

// UserAgent is sent with every delivery.
const UserAgent = "plantstore-webhooks/1"

// Dispatcher defaults.
const (
	// DefaultConcurrency is the default number of workers: attempts in
	// flight at once. Each is a goroutine mostly waiting on the network; 32
	// lets an owner whose receivers hang hold a quarter of them (the
	// default owner share) while the other owners keep 24.
	DefaultConcurrency = 32
	// DefaultMaxInFlight bounds the attempts in flight to one subscription.
	DefaultMaxInFlight  = 2
	DefaultLease        = 60 * time.Second
	DefaultPollInterval = 500 * time.Millisecond
	// DefaultPruneInterval is the time between two passes of the
	// retention pruning (shorter when the retention is); PruneBatch bounds
	// the rows one statement deletes, and pruneBatchPause is the pause
	// between two batches of a pass, which leaves the database to the
	// requests.
	DefaultPruneInterval = time.Minute
	PruneBatch           = 500
	pruneBatchPause      = 20 * time.Millisecond
	// MinRetryAfter and MaxRetryAfter clamp a receiver's Retry-After.
	MinRetryAfter = time.Second
	MaxRetryAfter = 24 * time.Hour
	// completeTimeout bounds recording an attempt, which happens even
	// after Run's context has ended.
	completeTimeout = 10 * time.Second
	// statsInterval is how often the queue gauges are refreshed from
	// OutboxStats.
	statsInterval = 5 * time.Second
)

// DefaultSchedule is the nominal wait after each failed attempt: a delivery
// is attempted at most len(DefaultSchedule)+1 = 11 times, at about 0 s, 5 s,
// 35 s, 2.5 min, 12.5 min, 42.5 min, 1 h 43 min, 3 h 43 min, 7 h 43 min,
// 15 h 43 min and 23 h 43 min after its creation, then marked failed. Each
// wait is jittered (see Dispatcher.Jitter), so the total span is about a
// day. A Retry-After header replaces the wait it follows.
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

// Options configure a Dispatcher and a Pinger; every field has a default.
// Build both from one Options value, so that they share its Client, Wake
// and InFlight (cmd/plantstore makes those first and gives them to both).
type Options struct {
	// Client sends the deliveries and pings; nil means NewClient with
	// private addresses refused and AttemptTimeout.
	Client *http.Client
	Logger *slog.Logger     // nil: discard
	Now    func() time.Time // nil: time.Now
	// Metrics receives the attempts' outcomes and the queue's size; nil:
	// none.
	Metrics Metrics
	// TracerProvider, if set, gets an OpenTelemetry client span of each
	// attempt, whose W3C trace context goes out in the delivery's
	// traceparent header (trace.go); nil: no spans and no header.
	TracerProvider trace.TracerProvider

	// Wake cuts the dispatcher's poll short: the service notifies it after
	// a commit that wrote deliveries. nil: the dispatcher only polls.
	Wake *Wake
	// InFlight counts the pings in flight: the Pinger adds to it, the
	// dispatcher's claims count it (Claim.Busy). nil: a table of one's own
	// (pings then do not reach the claims).
	InFlight *InFlight

	// Concurrency is the number of workers, hence of attempts in flight;
	// 0 means DefaultConcurrency. A claim asks for as many tasks as there
	// are idle workers.
	Concurrency int
	// MaxInFlight bounds the attempts in flight to one subscription; 0
	// means DefaultMaxInFlight.
	MaxInFlight int
	// MaxInFlightPerOwner bounds the attempts in flight to one owner's
	// subscriptions; 0 means a quarter of Concurrency, at least 1.
	MaxInFlightPerOwner int
	// Retention is how long delivery history is kept: attempts, and
	// finished (succeeded or failed) deliveries, older than this are deleted
	// in batches of PruneBatch rows, a pass every DefaultPruneInterval (or
	// Retention, if shorter) and one when Run starts. 0 keeps everything.
	Retention time.Duration
	// AttemptTimeout bounds one attempt; 0 means DefaultAttemptTimeout.
	AttemptTimeout time.Duration
	// Lease is how long a claimed task stays with this dispatcher; it
	// must exceed AttemptTimeout. 0 means DefaultLease.
	Lease time.Duration
	// PollInterval is the wait between claims when nothing was due; 0
	// means DefaultPollInterval. Wake cuts it short.
	PollInterval time.Duration
	// Schedule is the wait after each failed attempt; the number of
	// attempts is len(Schedule)+1. nil means DefaultSchedule.
	Schedule []time.Duration
	// Jitter turns a nominal wait into the actual one; nil means
	// DefaultJitter.
	Jitter func(time.Duration) time.Duration
}

// Dispatcher delivers the outbox's pending deliveries: it claims due tasks
// under a lease, POSTs each on a bounded pool of workers and records every
// attempt. Several dispatchers (replicas) may share one outbox: the lease
// keeps a task with one of them at a time.
//
// Claims are fair (the service's scheduler, service.Pick): round-robin across owners, then
// across an owner's subscriptions, at most MaxInFlight attempts in flight
// to one subscription and MaxInFlightPerOwner to one owner (both counted
// over every dispatcher sharing the database), so one owner's slow or
// hanging receivers hold at most that share of the workers and another
// owner's delivery takes the next free one. The claims also count the
// pings in flight of the InFlight table they share with a Pinger.
type Dispatcher struct {
	s        *dispatch
	wake     *Wake
	inFlight *InFlight
}

// NewDispatcher returns a dispatcher of outbox (service.OutboxService,
// which fills each task's URL and signing secrets) with the options o. It
// fails only for an invalid configuration: no outbox, a lease that does not
// exceed the attempt timeout.
func NewDispatcher(outbox plantstore.OutboxService, o Options) (*Dispatcher, error) {
	if outbox == nil {
		return nil, errors.New("webhook: dispatcher: no outbox")
	}
	s := o.settings()
	s.outbox = outbox
	if s.lease <= s.attemptTimeout {
		return nil, fmt.Errorf("webhook: dispatcher: lease %v must exceed the attempt timeout %v", s.lease, s.attemptTimeout)
	}
	d := &Dispatcher{s: s, wake: o.Wake, inFlight: o.InFlight}
	if d.wake == nil {
		d.wake = new(Wake)
	}
	if d.inFlight == nil {
		d.inFlight = new(InFlight)
	}
	return d, nil
}

// Wake is the signal that there may be deliveries due now: Notify (the
// service's plantstore.Notifier) wakes a Dispatcher sharing it to claim at
// once instead of at the end of its poll interval. Wakes coalesce. The zero
// value is ready; Notify never blocks and may be called before Run.
type Wake struct {
	once sync.Once
	ch   chan struct{}
}

var _ plantstore.Notifier = (*Wake)(nil)

// Notify wakes the dispatcher.
func (w *Wake) Notify() {
	select {
	case w.c() <- struct{}{}:
	default:
	}
}

func (w *Wake) c() chan struct{} {
	w.once.Do(func() { w.ch = make(chan struct{}, 1) })
	return w.ch
}

// dispatch is the settings of Options with its defaults applied.
type dispatch struct {
	outbox                    plantstore.OutboxService // the Dispatcher's only
	client                    *http.Client
	log                       *slog.Logger
	now                       func() time.Time
	metrics                   Metrics
	tracer                    trace.Tracer // nil: no spans
	concurrency               int
	perSubscription, perOwner int
	retention                 time.Duration
	attemptTimeout            time.Duration
	lease                     time.Duration
	poll                      time.Duration
	schedule                  []time.Duration
	jitter                    func(time.Duration) time.Duration
	// The outages of the periodic storage calls: each logs a line when it
	// starts failing and one when it succeeds again, not one per attempt.
	claims, records, stats, prunes *outage.Log
}

func (o Options) settings() *dispatch {
	s := &dispatch{
		client: o.Client, log: o.Logger, now: o.Now, metrics: o.Metrics,
		concurrency: o.Concurrency, attemptTimeout: o.AttemptTimeout,
		perSubscription: o.MaxInFlight, perOwner: o.MaxInFlightPerOwner, retention: o.Retention,
		lease: o.Lease, poll: o.PollInterval,
		schedule: o.Schedule, jitter: o.Jitter,
	}
	if o.TracerProvider != nil {
		s.tracer = o.TracerProvider.Tracer(TracerName)
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.claims = outage.New(s.log, slog.LevelError, "webhook: claim tasks")
	s.records = outage.New(s.log, slog.LevelError, "webhook: record attempt")
	s.stats = outage.New(s.log, slog.LevelWarn, "webhook: outbox stats")
	s.prunes = outage.New(s.log, slog.LevelWarn, "webhook: prune delivery history")
	if s.now == nil {
		s.now = time.Now
	}
	if s.concurrency <= 0 {
		s.concurrency = DefaultConcurrency
	}
	if s.perSubscription <= 0 {
		s.perSubscription = DefaultMaxInFlight
	}
	if s.perOwner <= 0 {
		s.perOwner = max(1, s.concurrency/4)
	}
	if s.attemptTimeout <= 0 {
		s.attemptTimeout = DefaultAttemptTimeout
	}
	if s.client == nil {
		s.client = NewClient(ClientOptions{Timeout: s.attemptTimeout})
	}
	if s.lease <= 0 {
		s.lease = DefaultLease
	}
	if s.poll <= 0 {
		s.poll = DefaultPollInterval
	}
	if s.schedule == nil {
		s.schedule = DefaultSchedule
	}
	if s.jitter == nil {
		s.jitter = DefaultJitter
	}
	return s
}

// Run delivers until ctx ends. Each worker runs one attempt at a time, so a
// slow receiver holds one worker and the others keep claiming and
// delivering. When ctx ends Run stops claiming, waits for the attempts in
// flight (each bounded by AttemptTimeout) to finish and be recorded, and
// returns. Failures to claim or record are logged (once when they start
// and once when they end, internal/outage) and retried; a task whose
// attempt could not be recorded is claimed again once its lease expires
// (at least once delivery). Run once at a time.
func (d *Dispatcher) Run(ctx context.Context) {
	s := d.s
	var wg sync.WaitGroup
	defer wg.Wait()
	if s.metrics != nil {
		wg.Go(func() { s.refreshStats(ctx) })
	}
	if s.retention > 0 {
		wg.Go(func() { s.prune(ctx) })
	}
	// idle holds one token per idle worker.
	idle := make(chan struct{}, s.concurrency)
	for range s.concurrency {
		idle <- struct{}{}
	}
	wake := d.wake.c()
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
		for n < s.concurrency {
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
		tasks, err := s.outbox.ClaimDeliveries(ctx, plantstore.Claim{Lease: s.lease, Limit: n,
			PerSubscription: s.perSubscription, PerOwner: s.perOwner, Busy: d.inFlight.busy()})
		switch {
		case err != nil && ctx.Err() == nil:
			s.claims.Fail(ctx, err)
		case err == nil:
			s.claims.OK(ctx)
		}
		if len(tasks) > n {
			s.log.Error("webhook: claim returned more tasks than asked; the extra ones wait for their lease to expire",
				"asked", n, "got", len(tasks))
			tasks = tasks[:n]
		}
		for i := len(tasks); i < n; i++ {
			idle <- struct{}{}
		}
		for _, t := range tasks {
			wg.Go(func() {
				defer func() { idle <- struct{}{} }()
				s.deliver(detached, t)
			})
		}
		if err == nil && len(tasks) == n {
			continue // there may be more due: claim again as workers allow
		}
		timer.Reset(s.poll)
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-timer.C:
		}
	}
}

// refreshStats sets the queue gauges now and every stats interval.
func (s *dispatch) refreshStats(ctx context.Context) {
	t := time.NewTicker(statsInterval)
	defer t.Stop()
	for {
		pending, oldest, err := s.outbox.OutboxStats(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			s.stats.Fail(ctx, err)
		case err == nil:
			s.stats.OK(ctx)
			var age time.Duration
			if !oldest.IsZero() {
				age = max(0, s.now().Sub(oldest))
			}
			s.metrics.Queue(pending, age)
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
func (s *dispatch) prune(ctx context.Context) {
	prune.Loop(ctx, min(DefaultPruneInterval, s.retention), func(ctx context.Context) {
		before := s.now().Add(-s.retention)
		total, err := prune.Pass(ctx, PruneBatch, pruneBatchPause, func(ctx context.Context, limit int) (int, error) {
			return s.outbox.PruneOutbox(ctx, before, limit)
		})
		switch {
		case err != nil && ctx.Err() == nil:
			s.prunes.Fail(ctx, err, "deleted", total)
		case err == nil:
			s.prunes.OK(ctx)
		}
		if total > 0 {
			s.log.Info("webhook: pruned delivery history", "rows", total, "before", before)
		}
	})
}

// deliver makes one attempt at t and records it.
func (s *dispatch) deliver(ctx context.Context, t *plantstore.Task) {
	r, detail := s.attempt(ctx, t)
	outcome := OutcomeRetry
	switch {
	case r.State == plantstore.DeliverySucceeded:
		outcome = OutcomeSucceeded
	case r.Disable:
		outcome = OutcomeDisabled
	case r.State == plantstore.DeliveryFailed:
		outcome = OutcomeFailed
	}
	if s.metrics != nil {
		s.metrics.Attempt(outcome, r.Duration)
	}
	attrs := []any{
		"message_id", t.MessageID, "subscription_id", t.SubscriptionID,
		"attempt", t.Attempts + 1, "outcome", outcome, "status", r.StatusCode,
		"duration", r.Duration,
	}
	if r.Error != "" {
		attrs = append(attrs, "error", r.Error)
	}
	if detail != nil {
		attrs = append(attrs, "err", detail)
	}
	if r.NextAttemptAt != nil {
		attrs = append(attrs, "next_attempt_at", *r.NextAttemptAt)
	}
	switch outcome {
	case OutcomeSucceeded:
		s.log.Debug("webhook: delivered", attrs...)
	case OutcomeRetry:
		s.log.Info("webhook: delivery attempt failed", attrs...)
	default:
		s.log.Warn("webhook: delivery given up", attrs...)
	}
	cctx, cancel := context.WithTimeout(ctx, completeTimeout)
	defer cancel()
	if err := s.outbox.CompleteDelivery(cctx, t, r); err != nil {
		// The delivery is claimed again once its lease expires.
		s.records.Fail(ctx, err, "message_id", t.MessageID, "subscription_id", t.SubscriptionID)
	} else {
		s.records.OK(ctx)
	}
}

// attempt POSTs t once, its body rendered from its facts now (package
// eventjson), and says what came of it. The result's Error, which the
// tenant sees, names the kind of failure only (failureKind); the error
// that caused it, for the server's log, is returned beside it (nil when
// the request was sent and answered), without the URL, which may carry
// credentials.
func (s *dispatch) attempt(ctx context.Context, t *plantstore.Task) (r plantstore.AttemptResult, detail error) {
	start := s.now()
	r.AttemptedAt = start
	body := eventjson.Body(t)
	sig, err := Sign(t.MessageID, start, body, t.Secrets)
	if err != nil {
		// No valid secret: retrying cannot help.
		r.State, r.Error = plantstore.DeliveryFailed, "no valid signing secret"
		return r, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.attemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL, bytes.NewReader(body))
	if err != nil {
		r.State, r.Error = plantstore.DeliveryFailed, "invalid url"
		return r, unwrapURLError(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", UserAgent)
	req.Header.Set(HeaderID, t.MessageID)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(start.Unix(), 10))
	req.Header.Set(HeaderSignature, sig)
	if s.tracer != nil {
		var span trace.Span
		req, span = s.startAttemptSpan(req, t)
		defer func() { endAttemptSpan(span, r) }()
	}

	began := time.Now() // monotonic, whatever s.now is
	resp, err := s.client.Do(req)
	if err == nil {
		// Keep the answer's first bytes for the attempt log; read the
		// rest (up to MaxResponseBytes) so the connection can be reused.
		head := make([]byte, plantstore.MaxResponseBodyStored)
		n, _ := io.ReadFull(resp.Body, head)
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxResponseBytes-int64(n)))
		resp.Body.Close()
		r.ResponseBody = plantstore.ResponseExcerpt(head[:n])
	}
	r.Duration = time.Since(began)
	end := s.now()

	var retryAfter time.Duration
	haveRetryAfter := false
	switch {
	case err != nil && errors.Is(err, ErrForbiddenAddress):
		// The receiver's name resolved to an address deliveries may not
		// reach (no connection was made): every retry would be refused the
		// same way, so the delivery fails now. Like any failed attempt it
		// counts toward the subscription's failing streak
		// (--webhook-disable-after); recover re-queues it once the name
		// is fixed. Which address it resolved to goes to the log only.
		r.State, r.Error = plantstore.DeliveryFailed, FailureForbiddenAddress+": "+AllowPrivateHint
		return r, unwrapURLError(err)
	case err != nil:
		r.Error, detail = failureKind(err), unwrapURLError(err)
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		r.StatusCode, r.State = resp.StatusCode, plantstore.DeliverySucceeded
		return r, nil
	case resp.StatusCode == http.StatusGone:
		r.StatusCode, r.State, r.Disable = resp.StatusCode, plantstore.DeliveryFailed, true
		return r, nil
	default:
		r.StatusCode = resp.StatusCode
		retryAfter, haveRetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), end)
	}
	// A failed attempt: schedule the next one, if any is left.
	made := t.Attempts + 1
	if made > len(s.schedule) {
		r.State = plantstore.DeliveryFailed
		return r, detail
	}
	wait := s.jitter(s.schedule[made-1])
	if haveRetryAfter {
		wait = retryAfter
	}
	next := end.Add(wait)
	r.State, r.NextAttemptAt = plantstore.DeliveryPending, &next
	return r, detail
}

// parseRetryAfter reads a Retry-After value, delay-seconds or an HTTP date,
// clamped to [MinRetryAfter, MaxRetryAfter].
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	var d time.Duration
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		d = time.Duration(min(secs, int64(MaxRetryAfter/time.Second))) * time.Second
	} else if at, err := http.ParseTime(v); err == nil {
		d = at.Sub(now)
	} else {
		return 0, false
	}
	return min(max(d, MinRetryAfter), MaxRetryAfter), true
}

// unwrapURLError drops the method and URL that *url.Error adds (the URL may
// carry the receiver's credentials), for the log.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
