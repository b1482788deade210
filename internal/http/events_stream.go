package http

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/eventjson"
	"github.com/plantstore/plantstore/internal/http/oapi"
)

// The event stream, GET /events/stream: Server-Sent Events
// (https://html.spec.whatwg.org/multipage/server-sent-events.html).
//
// The generated server serves it like any operation: it authenticates the
// token (scope, rate limit), decodes Last-Event-ID and after, and maps every
// error that comes before the stream starts (503 when the first read fails,
// 429 past the cap on open streams). ogen answers a text/event-stream body
// by io.Copy from a reader into the ResponseWriter and never flushes, so the
// reader (eventStream) does: each Read first flushes what io.Copy wrote of
// the previous Read's frames, then waits for the next ones. io.Copy is
// sequential, so a frame is on the wire before the stream waits again; the
// first Read flushes the header at once.
//
// Frames, one per event: "id: <seq>\nevent: <type>\ndata: <envelope>\n\n";
// a comment ": heartbeat\n\n" when nothing was sent for the heartbeat
// interval. A stream never skips an event: it reads the owner's events after
// the last seq it sent, in seq order (the backends make an owner's events
// visible in seq order, plantstore.Event): from its owner's feed
// (events_feed.go: one read of the store per commit in this process,
// EventNotifier, and per EventStreamPoll tick, however many streams the
// owner has open), or from the store itself while it is behind what the
// feed keeps (its catch-up), again at once after a full page.
//
// Bounds: EventStreamMax streams per server, a quarter of them (at least 1)
// per owner, else 429 42902; each write may block at most the server's
// WriteTimeout (the http.Server's whole-response deadline is replaced by one
// per write); Close ends every stream at once, so a shutdown does not wait
// for them.
//
// The token is authenticated again on a timer of the stream's own, every
// heartbeat interval whatever the stream sends (and at the token's expiry
// when that comes first), before any read of the store: a revoked, expired
// or scope-reduced token's stream ends (EOF) within the heartbeat plus the
// token cache's TTL, however busy it is. A stream lasts at most
// EventStreamMaxAge (each one between 90% and 100% of it, so that streams
// opened together do not all reconnect together): it then sends
// maxAgeFrame (a comment and a retry: hint of one second) and ends cleanly,
// and the client reconnects with Last-Event-ID, missing nothing. Between
// reads a stream keeps at most maxRetainedStreamBuffer bytes of buffer: a
// large page's buffer is dropped once it has been sent.

// Event stream defaults (Server.EventStreamHeartbeat, EventStreamPoll,
// EventStreamMax, EventStreamMaxAge).
const (
	DefaultEventStreamHeartbeat = 15 * time.Second
	DefaultEventStreamPoll      = time.Second
	DefaultEventStreamMax       = 1000
	DefaultEventStreamMaxAge    = time.Hour
)

// maxRetainedStreamBuffer bounds the buffer a waiting stream keeps: a
// page of ordinary events fits, so a steady stream reuses its buffer; the
// buffer of a large page (up to ~250 KB: 100 events with the longest
// names) is dropped once sent, so 1000 idle streams keep at most 16 MB.
const maxRetainedStreamBuffer = 16 << 10

// maxAgeFrame ends a stream that reached its maximum age: a comment for
// whoever reads the raw stream, and the reconnection delay (ms) for
// EventSource and the Go client.
const maxAgeFrame = ": the stream reached its maximum age: reconnect with Last-Event-ID\nretry: 1000\n\n"

// eventStreamPage is how many events a stream reads from the store at once.
const eventStreamPage = 100

// heartbeatFrame is the SSE comment sent on an idle stream.
const heartbeatFrame = ": heartbeat\n\n"

// streamTable counts the open event streams, bounds them, and ends them all
// at Close.
type streamTable struct {
	mu      sync.Mutex
	open    int
	byOwner map[string]int
	clients prometheus.Gauge
	// reads counts the reads of the store's events for the streams, by
	// reader: "feed" (an owner's feed, shared by its streams) or "stream"
	// (a stream's own: its first page, its catch-up).
	reads *prometheus.CounterVec

	closing   chan struct{} // closed by Server.Close
	closeOnce sync.Once
}

// init makes the table and registers its gauge; Handler calls it once.
func (t *streamTable) init(reg prometheus.Registerer) {
	t.byOwner = make(map[string]int)
	t.closing = make(chan struct{})
	t.clients = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "plantstore_event_stream_clients",
		Help: "Event streams (GET /events/stream) open now.",
	})
	t.reads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "plantstore_event_stream_reads_total",
		Help: "Reads of the store's events for the event streams, by reader: feed (one per owner, shared by its streams) or stream (a stream's first page and catch-up).",
	}, []string{"reader"})
	reg.MustRegister(t.clients, t.reads)
}

// close ends every stream, open or to come.
func (t *streamTable) close() {
	if t.closing != nil {
		t.closeOnce.Do(func() { close(t.closing) })
	}
}

// acquire takes a stream slot for owner, or refuses with 429 42902 when the
// server has max streams open or the owner a quarter of max.
func (t *streamTable) acquire(owner string, limit int) (release func(), err error) {
	perOwner := ownerStreamLimit(limit)
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.open >= limit:
		return nil, newError(plantstore.CodeTooManyStreams, "too many event streams open on this server (at most %d): retry later", limit).
			withHeader("Retry-After", "5")
	case t.byOwner[owner] >= perOwner:
		return nil, newError(plantstore.CodeTooManyStreams, "too many event streams open for this owner (at most %d): close one or retry later", perOwner).
			withHeader("Retry-After", "5")
	}
	t.open++
	t.byOwner[owner]++
	t.clients.Inc()
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			t.open--
			if t.byOwner[owner]--; t.byOwner[owner] <= 0 {
				delete(t.byOwner, owner)
			}
			t.clients.Dec()
		})
	}, nil
}

// ownerStreamLimit is the streams one owner may have open: a quarter of the
// server's, at least 1 (as one owner gets at most a quarter of the webhook
// deliveries in flight).
func ownerStreamLimit(limit int) int { return max(1, limit/4) }

func (s *Server) eventStreamHeartbeat() time.Duration {
	return orDefault(s.EventStreamHeartbeat, DefaultEventStreamHeartbeat)
}

func (s *Server) eventStreamPoll() time.Duration {
	return orDefault(s.EventStreamPoll, DefaultEventStreamPoll)
}

func (s *Server) eventStreamMaxAge() time.Duration {
	return orDefault(s.EventStreamMaxAge, DefaultEventStreamMaxAge)
}

// streamLifetime is how long one stream may last: drawn from [90%, 100%]
// of the maximum age.
func streamLifetime(maxAge time.Duration) time.Duration {
	spread := maxAge / 10
	if spread <= 0 {
		return maxAge
	}
	return maxAge - rand.N(spread)
}

func (s *Server) eventStreamMax() int {
	if s.EventStreamMax <= 0 {
		return DefaultEventStreamMax
	}
	return s.EventStreamMax
}

// streamCursor is the seq a stream starts after: Last-Event-ID (what an
// EventSource sends when it reconnects) wins over after.
func streamCursor(lastEventID, after oapi.OptInt64) int64 {
	if id, ok := lastEventID.Get(); ok {
		return id
	}
	return after.Or(0)
}

// StreamEvents handles the "GET /events/stream" route: the owner's events
// after the cursor, then each new one, as Server-Sent Events, until the
// client goes, the token stops being valid or the server closes.
func (h *handler) StreamEvents(ctx context.Context, params oapi.StreamEventsParams) (oapi.StreamEventsRes, error) {
	s := h.s
	info := requestInfoFrom(ctx)
	if info == nil {
		return nil, internalError(errors.New("http: event stream: no request state"))
	}
	if s.EventService == nil {
		return nil, internalError(errors.New("http: event stream: no EventService"))
	}
	release, err := s.streams.acquire(plantstore.TokenFromContext(ctx).Owner, s.eventStreamMax())
	if err != nil {
		return nil, err
	}
	tok := plantstore.TokenFromContext(ctx)
	start := time.Now()
	es := &eventStream{
		s:       s,
		ctx:     ctx,
		rc:      http.NewResponseController(&info.rec),
		owner:   tok.Owner,
		secret:  bearerSecretFrom(ctx),
		expires: tok.ExpiresAt,
		last:    streamCursor(params.LastEventID, params.After),
		due:     true,
		release: release,
		endAt:   start.Add(streamLifetime(s.eventStreamMaxAge())),
	}
	// The first page is read before answering, so that a storage failure
	// is a 503 rather than a stream that ends at once. Then the owner's
	// feed takes over: started here when new, it reads what was committed
	// since; due makes the stream look at it before waiting.
	if err := es.fill(); err != nil {
		es.Close()
		return nil, err
	}
	es.feed = s.feeds.acquire(s, es.owner, es.last)
	es.due = true
	// The http.Server's write deadline (WriteTimeout from the request's
	// start) would end the response: it is replaced by one per write. (Its
	// read deadline is no concern: net/http lifts it for the background
	// read that watches for the client going away.)
	if err := es.rc.SetWriteDeadline(time.Now().Add(es.writeTimeout())); err != nil {
		es.Close()
		return nil, internalError(err)
	}
	es.heartbeat = time.NewTimer(s.eventStreamHeartbeat())
	es.checks = time.NewTimer(time.Hour) // armed by scheduleChecks
	es.scheduleChecks(start)
	info.rec.Header().Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	return &oapi.StreamEventsOKHeaders{
		CacheControl: oapi.NewOptString("no-store"),
		Response:     oapi.StreamEventsOK{Data: es},
	}, nil
}

// HeadEventsStream handles the "HEAD /events/stream" route: the headers of
// the stream, at once, with no body and no stream slot taken.
func (h *handler) HeadEventsStream(ctx context.Context, params oapi.HeadEventsStreamParams) (oapi.HeadEventsStreamRes, error) {
	return &oapi.HeadEventsStreamOK{CacheControl: oapi.NewOptString("no-store")}, nil
}

// eventStream is the body of one event stream: an io.Reader (and Closer,
// which the generated encoder calls when it is done) of SSE frames. See the
// comment at the top of the file.
type eventStream struct {
	s       *Server
	ctx     context.Context // the request's: done when the client goes
	rc      *http.ResponseController
	owner   string
	secret  string     // the bearer secret, authenticated again on the checks timer ("": not)
	expires *time.Time // the token's expiry, as last authenticated (nil: none)
	last    int64      // the seq of the last event sent, or the cursor

	authAt time.Time   // when the token is authenticated again
	endAt  time.Time   // when the stream reaches its maximum age
	checks *time.Timer // fires at the earlier of authAt and endAt
	ending bool        // maxAgeFrame is queued: the stream ends after it

	due       bool            // the feed (or the store) must be read before waiting
	failing   bool            // the last read of the store failed (logged once until one succeeds)
	feed      *ownerFeed      // the owner's (nil until the first page is read)
	changed   <-chan struct{} // closed at the feed's next change after the last look
	retry     *time.Timer     // while failing: when to read the store again
	heartbeat *time.Timer
	release   func()

	pending []byte // frames not yet returned by Read
	buf     []byte // pending's backing array, reused
	closed  bool
}

// errStreamEnd ends a stream quietly (the client went, the server closes,
// the token is no longer valid).
var errStreamEnd = errors.New("event stream ended")

// Read implements io.Reader for the generated encoder's io.Copy.
func (es *eventStream) Read(p []byte) (int, error) {
	if len(es.pending) == 0 {
		// io.Copy has written the frames the last Read returned into the
		// response's buffer: send them (the first time: the header).
		if err := es.rc.Flush(); err != nil {
			return 0, io.EOF // the client is gone
		}
		if err := es.next(); err != nil {
			// The response ends: give its last write (the end of the
			// chunked body) time to go out.
			_ = es.rc.SetWriteDeadline(time.Now().Add(es.writeTimeout()))
			return 0, io.EOF
		}
	}
	n := copy(p, es.pending)
	es.pending = es.pending[n:]
	return n, nil
}

// Close implements io.Closer: it frees the stream's slot and stops its
// timers. The generated encoder calls it when the copy ends.
func (es *eventStream) Close() error {
	if es.closed {
		return nil
	}
	es.closed = true
	if es.feed != nil {
		es.s.feeds.release(es.feed)
	}
	if es.heartbeat != nil {
		es.heartbeat.Stop()
	}
	if es.checks != nil {
		es.checks.Stop()
	}
	if es.retry != nil {
		es.retry.Stop()
	}
	es.release()
	return nil
}

func (es *eventStream) writeTimeout() time.Duration {
	return orDefault(es.s.WriteTimeout, WriteTimeout)
}

// next waits until there are frames to send and puts them in pending, or
// returns errStreamEnd. The checks (the end of the server or the client,
// the maximum age, the token) come first on each turn, whether the stream
// waited or not, so a stream that always has events to send (a busy owner,
// a long replay) is checked as often as an idle one.
func (es *eventStream) next() error {
	for {
		if es.ending {
			return errStreamEnd
		}
		select {
		case <-es.ctx.Done():
			return errStreamEnd
		case <-es.s.streams.closing:
			return errStreamEnd
		default:
		}
		now := time.Now()
		if !now.Before(es.endAt) {
			es.s.logger().LogAttrs(es.ctx, slog.LevelDebug, "event stream: maximum age reached: stream ended",
				slog.String("owner", es.owner), slog.String("request_id", RequestID(es.ctx)))
			es.ending = true
			es.pending = append(es.buf[:0], maxAgeFrame...)
			return es.ready()
		}
		if !now.Before(es.authAt) {
			if !es.stillAuthorized() {
				return errStreamEnd
			}
			es.scheduleChecks(time.Now())
		}
		if es.due {
			if err := es.fill(); err != nil && es.ctx.Err() == nil {
				// Storage trouble: keep the stream (heartbeats go on),
				// try again at the next wake or tick.
				if !es.failing {
					es.failing = true
					es.s.logger().WarnContext(es.ctx, "event stream: read events", "owner", es.owner,
						"request_id", RequestID(es.ctx), "err", err)
				}
			}
			if len(es.pending) > 0 {
				return es.ready()
			}
		}
		// Nothing to send: wait, without the buffer of a large page.
		if cap(es.buf) > maxRetainedStreamBuffer {
			es.buf, es.pending = nil, nil
		}
		if es.s.onStreamWait != nil {
			es.s.onStreamWait(cap(es.buf))
		}
		// A read of the store that failed (a stream behind its feed) is
		// tried again a poll interval later, not only when the feed
		// changes.
		var retry <-chan time.Time
		if es.failing && es.due {
			if es.retry == nil {
				es.retry = time.NewTimer(es.s.eventStreamPoll())
			} else {
				es.retry.Reset(es.s.eventStreamPoll())
			}
			retry = es.retry.C
		}
		select {
		case <-es.ctx.Done():
			return errStreamEnd
		case <-es.s.streams.closing:
			return errStreamEnd
		case <-es.changed:
			es.due = true
		case <-retry:
		case <-es.checks.C:
			// The checks run at the top of the loop.
		case <-es.heartbeat.C:
			es.pending = append(es.buf[:0], heartbeatFrame...)
			return es.ready()
		}
	}
}

// scheduleChecks sets when the token is authenticated again, a heartbeat
// interval after now or just after the token's expiry if that comes
// first, and arms the checks timer for that or the maximum age.
func (es *eventStream) scheduleChecks(now time.Time) {
	es.authAt = now.Add(es.s.eventStreamHeartbeat())
	if es.expires != nil {
		// Just after: the backends count a token valid up to its expiry.
		if at := es.expires.Add(10 * time.Millisecond); at.After(now) && at.Before(es.authAt) {
			es.authAt = at
		}
	}
	at := es.authAt
	if es.endAt.Before(at) {
		at = es.endAt
	}
	es.checks.Reset(max(0, at.Sub(now)))
}

// ready arms the write deadline and the heartbeat for the frames in
// pending.
func (es *eventStream) ready() error {
	if err := es.rc.SetWriteDeadline(time.Now().Add(es.writeTimeout())); err != nil {
		return errStreamEnd
	}
	es.heartbeat.Reset(es.s.eventStreamHeartbeat())
	return nil
}

// fill puts the frames of one page of the owner's events after the last
// one sent into pending: from the feed when it holds them, else read from
// the store. A full page leaves due set: the next page is taken without
// waiting.
func (es *eventStream) fill() error {
	if es.feed != nil {
		b, last, more, changed, ok := es.feed.since(es.buf[:0], es.last, eventStreamPage)
		es.changed = changed // taken before a read of the store: a change meanwhile is not missed
		if ok {
			es.buf, es.pending, es.last, es.due = b, b, last, more
			return nil
		}
	}
	if r := es.s.streams.reads; r != nil {
		r.WithLabelValues("stream").Inc()
	}
	events, more, err := es.s.EventService.FindEvents(es.ctx, plantstore.EventFilter{
		Owner: es.owner,
		After: es.last,
		Limit: eventStreamPage,
	})
	if err != nil {
		return err
	}
	if es.failing {
		es.failing = false
		es.s.logger().InfoContext(es.ctx, "event stream: reading events again", "owner", es.owner, "request_id", RequestID(es.ctx))
	}
	es.due = more
	b := es.buf[:0]
	for _, e := range events {
		if e.Seq <= es.last { // never twice, whatever the store answers
			continue
		}
		b = appendEventFrame(b, e)
		es.last = e.Seq
	}
	es.buf, es.pending = b, b
	return nil
}

// appendEventFrame appends e as one SSE message: its seq as the id, its
// type as the event name, its envelope (one line of JSON) as the data.
func appendEventFrame(b []byte, e *plantstore.Event) []byte {
	b = append(b, "id: "...)
	b = strconv.AppendInt(b, e.Seq, 10)
	b = append(b, "\nevent: "...)
	b = append(b, e.Type...)
	b = append(b, "\ndata: "...)
	b = eventjson.AppendEnvelope(b, e)
	return append(b, "\n\n"...)
}

// stillAuthorized authenticates the stream's token again (cached by the
// token service like any request's, a JWT verified again): false when it
// was revoked or expired since the stream began, or no longer carries the
// stream's scope or owner. A storage failure keeps the stream.
func (es *eventStream) stillAuthorized() bool {
	if es.secret == "" {
		return true
	}
	tok, err := es.s.authenticate(es.ctx, es.secret)
	switch {
	case err == nil && tok.Owner == es.owner && missingScope(tok, oapi.GetRolesForBearerAuth(oapi.StreamEventsOperation)) == "":
		es.expires = tok.ExpiresAt
		return true
	case err == nil:
		es.s.logger().LogAttrs(es.ctx, slog.LevelInfo, "event stream: token no longer has the scope: stream ended",
			slog.String("owner", es.owner), slog.String("request_id", RequestID(es.ctx)))
		return false
	}
	if code := plantstore.ErrorCode(err); code == plantstore.CodeTokenInvalid || code == plantstore.CodeTokenMissing {
		es.s.logger().LogAttrs(es.ctx, slog.LevelInfo, "event stream: token no longer valid: stream ended",
			slog.String("owner", es.owner), slog.String("request_id", RequestID(es.ctx)))
		return false
	}
	return es.ctx.Err() == nil
}

// bearerSecretKey is the context key of the bearer secret of a stream
// request, which the stream authenticates again (scheduleChecks).
type bearerSecretKey struct{}

// withBearerSecret returns ctx with the request's bearer secret.
func withBearerSecret(ctx context.Context, secret string) context.Context {
	return context.WithValue(ctx, bearerSecretKey{}, secret)
}

// bearerSecretFrom returns the bearer secret withBearerSecret stored, or "".
func bearerSecretFrom(ctx context.Context) string {
	s, _ := ctx.Value(bearerSecretKey{}).(string)
	return s
}
