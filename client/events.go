package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/plantstore/plantstore/client/oapi"
)

// Event is one change of one of the owner's plants: an item of ListEvents,
// a message of TailEvents, the body of a typed subscription's delivery.
type Event struct {
	Type      string    `json:"type"` // "plant.created", "plant.updated" or "plant.deleted"
	ID        string    `json:"id"`   // evt_ and 24 hex digits, the same wherever the event is seen
	Seq       int64     `json:"seq"`  // the owner's sequence number, from 1, no gaps
	CreatedAt time.Time `json:"created_at"`
	Data      Plant     `json:"data"` // the plant after the change; for plant.deleted, as it was
}

// ListEventsOptions selects a page of events. The zero value asks for the
// first page of every event kept at the server's default page size.
type ListEventsOptions struct {
	After int64  // only events whose seq is greater (the cursor)
	Limit int    // page size, 1..1000; 0 for the server's default (100)
	Type  string // only events of this type; "" for all
}

// EventPage is one page of events. Next is the query of the following
// page, taken from the answer's Link header; nil on the last page.
type EventPage struct {
	Events []Event
	Next   *ListEventsOptions
}

// ListEvents returns one page of the owner's events, by seq ascending,
// and the query of the next page from the Link header.
func (c *Client) ListEvents(ctx context.Context, opts ListEventsOptions) (*EventPage, error) {
	ctx, x := withExchange(ctx)
	params := oapi.ListEventsParams{}
	if opts.After != 0 {
		params.After = oapi.NewOptInt64(opts.After)
	}
	if opts.Limit != 0 {
		params.Limit = oapi.NewOptInt32(int32(opts.Limit))
	}
	if opts.Type != "" {
		params.Type = oapi.NewOptEventsType(oapi.EventsType(opts.Type))
	}
	res, err := c.api.ListEvents(ctx, params)
	if err != nil {
		return nil, callError("list events", x, err)
	}
	r, ok := res.(*oapi.ListEventsOKHeaders)
	if !ok {
		return nil, answerError(x, res)
	}
	page := &EventPage{Events: make([]Event, len(r.Response))}
	for i := range r.Response {
		e := &r.Response[i]
		page.Events[i] = Event{Type: string(e.Type), ID: e.ID, Seq: e.Seq, CreatedAt: e.CreatedAt, Data: *fromAPI(&e.Data, "")}
	}
	if link, has := r.Link.Get(); has {
		q, err := nextQuery(x.url, link)
		if err != nil {
			return nil, fmt.Errorf("client: list events: %w", err)
		}
		if q != nil {
			next := &ListEventsOptions{Type: q.Get("type")}
			if next.Limit, err = limitParam(q); err != nil {
				return nil, fmt.Errorf("client: list events: %w", err)
			}
			if s := q.Get("after"); s != "" {
				if next.After, err = strconv.ParseInt(s, 10, 64); err != nil {
					return nil, fmt.Errorf("client: list events: link header: after %q: %w", s, err)
				}
			}
			page.Next = next
		}
	}
	return page, nil
}

// Events iterates over the owner's events that opts selects, from
// opts.After on, following each answer's Link rel="next" until there is
// none; breaking out of the loop stops the requests. An error ends the
// iteration after it is yielded.
func (c *Client) Events(ctx context.Context, opts ListEventsOptions) iter.Seq2[Event, error] {
	return paginate(opts, func(o ListEventsOptions) ([]Event, *ListEventsOptions, error) {
		page, err := c.ListEvents(ctx, o)
		if err != nil {
			return nil, nil, err
		}
		if n := page.Next; n != nil && n.After <= o.After {
			return nil, nil, fmt.Errorf("client: list events: next link does not advance past after=%d", o.After)
		}
		return page.Events, page.Next, nil
	})
}

// TailOptions are the optional parameters of TailEvents.
type TailOptions struct {
	// IdleTimeout ends a connection on which nothing arrived, not even a
	// heartbeat (the server sends one every 15 s by default), for this
	// long, and opens another; 0: one minute.
	IdleTimeout time.Duration
	// MaxRetryDelay bounds the wait before a reconnection (it doubles from
	// half a second, or from the server's retry: field, after each failed
	// attempt); 0: 30 seconds.
	MaxRetryDelay time.Duration
	// OnReconnect, if set, is called before each reconnection with the
	// cursor it resumes from and why the previous connection ended.
	OnReconnect func(after int64, err error)
}

// TailEvents follows the owner's event stream (GET /events/stream, Server
// -Sent Events): every event after the seq after, then each new one as it
// is committed, in seq order, each once. When the connection drops (or
// stays silent past opts.IdleTimeout, or the server answers 429 or 5xx) it
// reconnects with Last-Event-ID set to the last seq yielded, so no event
// is missed or repeated, until ctx is done: the iteration then yields
// ctx's error and ends. An answer that retrying cannot change (401: the
// token was revoked, 403, 400) is yielded as an *Error and ends it, as
// does breaking out of the loop.
func (c *Client) TailEvents(ctx context.Context, after int64, opts TailOptions) iter.Seq2[Event, error] {
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = time.Minute
	}
	if opts.MaxRetryDelay <= 0 {
		opts.MaxRetryDelay = 30 * time.Second
	}
	// The stream lasts: no overall timeout, IdleTimeout instead.
	hc := *c.http
	hc.Timeout = 0
	return func(yield func(Event, error) bool) {
		t := &tail{c: c, hc: &hc, opts: opts, last: after, retry: 500 * time.Millisecond}
		delay := t.retry
		for {
			got, err := t.connect(ctx, yield)
			if t.stopped {
				return
			}
			if ctx.Err() != nil {
				yield(Event{}, ctx.Err())
				return
			}
			var apiErr *Error
			if errors.As(err, &apiErr) && apiErr.Status != http.StatusTooManyRequests && apiErr.Status < 500 {
				yield(Event{}, err)
				return
			}
			if got {
				delay = t.retry // the connection worked: start again from the shortest wait
			}
			wait := delay
			if apiErr != nil && apiErr.RetryAfter > wait {
				wait = apiErr.RetryAfter
			}
			if opts.OnReconnect != nil {
				opts.OnReconnect(t.last, err)
			}
			timer := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				timer.Stop()
				yield(Event{}, ctx.Err())
				return
			case <-timer.C:
			}
			delay = min(2*delay, opts.MaxRetryDelay)
		}
	}
}

// tail is the state of one TailEvents iteration across its connections.
type tail struct {
	c       *Client
	hc      *http.Client
	opts    TailOptions
	last    int64         // the seq of the last event yielded (the cursor)
	retry   time.Duration // the first reconnection delay (the server's retry: field)
	stopped bool          // the loop body broke out
}

// errStreamEnded is why a stream that the server ended cleanly is
// reconnected.
var errStreamEnded = errors.New("client: event stream: the server ended the stream")

// connect opens one stream from t.last and yields its events until it
// ends; got reports whether it was answered 200.
func (t *tail) connect(ctx context.Context, yield func(Event, error) bool) (got bool, err error) {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodGet, t.c.base+"/events/stream", nil)
	if err != nil {
		return false, fmt.Errorf("client: event stream: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+t.c.token)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Cache-Control", "no-store")
	req.Header.Set("Last-Event-ID", strconv.FormatInt(t.last, 10))
	idle := time.AfterFunc(t.opts.IdleTimeout, cancel)
	defer idle.Stop()
	resp, err := t.hc.Do(req)
	if err != nil {
		return false, fmt.Errorf("client: event stream: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, responseError(resp)
	}
	r := bufio.NewReaderSize(resp.Body, 64<<10)
	var data strings.Builder
	var id string
	hasData := false
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			if err == io.EOF && line == "" {
				return true, errStreamEnded
			}
			if ctx.Err() == nil && cctx.Err() != nil {
				return true, fmt.Errorf("client: event stream: nothing received for %v", t.opts.IdleTimeout)
			}
			return true, fmt.Errorf("client: event stream: %w", err)
		}
		idle.Reset(t.opts.IdleTimeout)
		line = strings.TrimRight(line, "\r\n")
		if line == "" { // the end of a message
			if hasData {
				ev, err := decodeEvent(id, data.String())
				if err != nil {
					t.stopped = true
					yield(Event{}, err)
					return true, err
				}
				if ev.Seq > t.last {
					t.last = ev.Seq
					if !yield(ev, nil) {
						t.stopped = true
						return true, nil
					}
				}
			}
			data.Reset()
			hasData, id = false, ""
			continue
		}
		if line[0] == ':' { // a comment: the heartbeat
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "data":
			if hasData {
				data.WriteByte('\n')
			}
			data.WriteString(value)
			hasData = true
		case "id":
			id = value
		case "retry":
			if ms, err := strconv.Atoi(value); err == nil && ms > 0 {
				t.retry = time.Duration(ms) * time.Millisecond
			}
		}
	}
}

// decodeEvent reads a message's data, checking that its id is its seq.
func decodeEvent(id, data string) (Event, error) {
	var ev Event
	if err := json.Unmarshal([]byte(data), &ev); err != nil {
		return Event{}, fmt.Errorf("client: event stream: message %s: %w", id, err)
	}
	if id != "" && id != strconv.FormatInt(ev.Seq, 10) {
		return Event{}, fmt.Errorf("client: event stream: message id %s carries seq %d", id, ev.Seq)
	}
	return ev, nil
}
