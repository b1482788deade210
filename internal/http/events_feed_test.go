package http_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
)

// countingEvents counts the reads of the store's events.
type countingEvents struct {
	plantstore.EventService // set once the test server has its services
	reads                   atomic.Int64
}

func (c *countingEvents) FindEvents(ctx context.Context, f plantstore.EventFilter) ([]*plantstore.Event, bool, error) {
	c.reads.Add(1)
	return c.EventService.FindEvents(ctx, f)
}

// TestEventStream_SharedReads: however many streams an owner has open, a
// commit costs at most one read of the store (the owner's feed), and every
// stream receives every event once, in seq order.
func TestEventStream_SharedReads(t *testing.T) {
	t.Parallel()
	events := &countingEvents{}
	ts := MustOpenServer(t, func(s *TestServer) {
		s.EventService = events
		s.EventStreamPoll = time.Hour // no poll ticks: only commits wake the feed
	})
	events.EventService = ts.Services.Events
	tok := ts.Token(t, "alice")
	const streams, creates = 40, 20
	ss := make([]*sseStream, streams)
	for i := range ss {
		_, ss[i] = openStream(t, ts, tok, "/events/stream", nil)
	}
	// A first create: once every stream has it, every stream waits on the
	// feed.
	if resp := ts.Post(t, tok, `{"id":1000,"name":"warm-up"}`); resp.Status != 200 {
		t.Fatalf("create: %d %s", resp.Status, resp.Body)
	}
	for _, s := range ss {
		if e := s.nextEvent(t); e.Seq != 1 {
			t.Fatalf("first event seq %d, want 1", e.Seq)
		}
	}
	before := events.reads.Load()
	for i := range creates {
		if resp := ts.Post(t, tok, fmt.Sprintf(`{"id":%d,"name":"p%d"}`, i+1, i+1)); resp.Status != 200 {
			t.Fatalf("create: %d %s", resp.Status, resp.Body)
		}
	}
	receiveAll(t, ss, 2, creates+1)
	if reads := events.reads.Load() - before; reads > creates {
		t.Fatalf("%d streams, %d commits: %d reads of the store, want at most %d (one a commit)", streams, creates, reads, creates)
	}
}

// TestEventStream_SharedReadsBatch: a batch create's thousand events reach
// every stream from the feed, which reads them once, a page at a time.
func TestEventStream_SharedReadsBatch(t *testing.T) {
	t.Parallel()
	events := &countingEvents{}
	ts := MustOpenServer(t, func(s *TestServer) {
		s.EventService = events
		s.EventStreamPoll = time.Hour
	})
	events.EventService = ts.Services.Events
	tok := ts.Token(t, "alice")
	const streams, plants = 10, 1000
	ss := make([]*sseStream, streams)
	for i := range ss {
		_, ss[i] = openStream(t, ts, tok, "/events/stream", nil)
	}
	if resp := ts.Post(t, tok, `{"id":100000,"name":"warm-up"}`); resp.Status != 200 {
		t.Fatalf("create: %d %s", resp.Status, resp.Body)
	}
	for _, s := range ss {
		s.nextEvent(t)
	}
	before := events.reads.Load()
	var body []byte
	body = append(body, `{"plants":[`...)
	for i := range plants {
		if i > 0 {
			body = append(body, ',')
		}
		body = fmt.Appendf(body, `{"id":%d,"name":"p%d"}`, i+1, i+1)
	}
	body = append(body, "]}"...)
	if resp := postBatch(t, ts, tok, string(body)); resp.Status != 200 {
		t.Fatalf("batch: %d %s", resp.Status, resp.Body)
	}
	receiveAll(t, ss, 2, plants+1)
	// Ten pages of a hundred, and the empty read that ends them.
	if reads, most := events.reads.Load()-before, int64(plants/100+1); reads > most {
		t.Fatalf("%d streams, one batch of %d: %d reads of the store, want at most %d", streams, plants, reads, most)
	}
}

// receiveAll reads the events of seq first to last, in order, from every
// stream at once.
func receiveAll(t *testing.T, ss []*sseStream, first, last int64) {
	t.Helper()
	var wg sync.WaitGroup
	for _, s := range ss {
		wg.Go(func() {
			for want := first; want <= last; want++ {
				if e := s.nextEvent(t); e.Seq != want {
					t.Errorf("event seq %d, want %d", e.Seq, want)
					return
				}
			}
		})
	}
	wg.Wait()
}

// failingCatchUp fails the reads of the store that start within
// [from, to) while fail is set: a stream's catch-up, not its first page.
type failingCatchUp struct {
	plantstore.EventService
	from, to int64
	fail     atomic.Bool
}

func (f *failingCatchUp) FindEvents(ctx context.Context, fl plantstore.EventFilter) ([]*plantstore.Event, bool, error) {
	if f.fail.Load() && fl.After >= f.from && fl.After < f.to {
		return nil, false, errors.New("storage trouble")
	}
	return f.EventService.FindEvents(ctx, fl)
}

// TestEventStream_CatchUpRetried: a stream behind its owner's feed whose
// read of the store fails reads it again a poll interval later, though the
// feed does not change and no heartbeat is due.
func TestEventStream_CatchUpRetried(t *testing.T) {
	t.Parallel()
	events := &failingCatchUp{from: 100, to: 200}
	ts := MustOpenServer(t, func(s *TestServer) {
		s.EventService = events
		s.EventStreamPoll = 50 * time.Millisecond
		s.EventStreamHeartbeat = time.Hour
	})
	events.EventService = ts.Services.Events
	tok := ts.Token(t, "alice")
	var body []byte
	body = append(body, `{"plants":[`...)
	for i := range 250 {
		if i > 0 {
			body = append(body, ',')
		}
		body = fmt.Appendf(body, `{"id":%d,"name":"p%d"}`, i+1, i+1)
	}
	if resp := postBatch(t, ts, tok, string(append(body, "]}"...))); resp.Status != 200 {
		t.Fatalf("batch: %d %s", resp.Status, resp.Body)
	}
	// The feed starts at 250, with the first stream.
	openStream(t, ts, tok, "/events/stream", map[string]string{"Last-Event-ID": "250"})
	events.fail.Store(true)
	_, s := openStream(t, ts, tok, "/events/stream", nil)
	for want := int64(1); want <= 100; want++ {
		if e := s.nextEvent(t); e.Seq != want {
			t.Fatalf("event seq %d, want %d", e.Seq, want)
		}
	}
	events.fail.Store(false)
	if e := s.nextEvent(t); e.Seq != 101 {
		t.Fatalf("event seq %d after the trouble, want 101", e.Seq)
	}
}
