package http

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/plantstore/plantstore"
)

// Event feeds: one reader of the store per owner with open streams, shared
// by all of them.
//
// Without it every stream of an owner would read the store after each
// commit of that owner's events: the cost would grow with streams ×
// commits. A feed reads the owner's new events once per wake (a commit in
// this process: EventNotifier) or poll tick (EventStreamPoll: another
// replica's commits wake nobody here), keeps the frames of the last
// feedKeep of them, and wakes the owner's streams, which take their frames
// from it. A stream that is behind what the feed keeps (its catch-up from
// Last-Event-ID, or a client slower than the owner's event rate) reads the
// store itself, a page at a time, until it is within the feed again: the
// slow pay for themselves, and never slow the feed or the others.
//
// A feed starts at the position of the stream that opens it (after that
// stream's first page) and holds every event of the owner with base < seq
// <= last, in seq order: the backends make an owner's events visible in
// seq order (plantstore.Event), so a read after last misses none.

// feedKeep is how many events' frames a feed keeps: more than a batch
// create commits at once (--batch-max, 1000 by default), so that the
// streams of an owner that makes one take all of its events from the feed.
const feedKeep = 2048

// feedReadTimeout bounds one read of a feed.
const feedReadTimeout = 10 * time.Second

// feedTable holds the feeds of the owners with open streams.
type feedTable struct {
	mu    sync.Mutex
	feeds map[string]*ownerFeed
}

// ownerFeed is one owner's feed. Its reader goroutine runs while streams
// hold it (acquire, release).
type ownerFeed struct {
	s     *Server
	owner string
	refs  int           // under feedTable.mu
	stop  chan struct{} // closed by the last release

	mu      sync.Mutex
	base    int64       // the frames cover the owner's events with base < seq <= last
	last    int64       //
	frames  []feedFrame // ascending seq, at most feedKeep
	changed chan struct{}
	failing bool // the last read failed (logged once until one succeeds)
}

// feedFrame is one event's SSE frame.
type feedFrame struct {
	seq   int64
	frame []byte
}

// acquire returns owner's feed, started at start (the seq after which the
// first stream has sent everything) when it is new. The caller releases
// it.
func (t *feedTable) acquire(s *Server, owner string, start int64) *ownerFeed {
	t.mu.Lock()
	defer t.mu.Unlock()
	if f := t.feeds[owner]; f != nil {
		f.refs++
		return f
	}
	if t.feeds == nil {
		t.feeds = make(map[string]*ownerFeed)
	}
	f := &ownerFeed{s: s, owner: owner, refs: 1, stop: make(chan struct{}),
		base: start, last: start, changed: make(chan struct{})}
	t.feeds[owner] = f
	var wake <-chan struct{}
	unsubscribe := func() {}
	if s.EventNotifier != nil {
		// Before the first read, so that no commit after it goes
		// unnoticed.
		wake, unsubscribe = s.EventNotifier.Subscribe(owner)
	}
	go f.run(wake, unsubscribe)
	return f
}

// release gives back a stream's hold on f; the last one stops its reader.
func (t *feedTable) release(f *ownerFeed) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if f.refs--; f.refs == 0 {
		delete(t.feeds, f.owner)
		close(f.stop)
	}
}

// run reads the store at once, then at each wake and poll tick, until the
// feed stops or the server closes.
func (f *ownerFeed) run(wake <-chan struct{}, unsubscribe func()) {
	defer unsubscribe()
	poll := time.NewTicker(f.s.eventStreamPoll())
	defer poll.Stop()
	for {
		if f.read() {
			select {
			case <-f.stop:
				return
			case <-f.s.streams.closing:
				return
			default:
				continue // more to read
			}
		}
		select {
		case <-f.stop:
			return
		case <-f.s.streams.closing:
			return
		case <-wake:
		case <-poll.C:
		}
	}
}

// read reads the owner's events after last, a page at a time while pages
// come full, at most feedKeep events a turn, and wakes the streams after
// each page that had any. more is true when a turn ended with more to
// read.
func (f *ownerFeed) read() (more bool) {
	ctx, cancel := context.WithTimeout(context.Background(), feedReadTimeout)
	defer cancel()
	f.mu.Lock()
	after := f.last
	f.mu.Unlock()
	for n := 0; n < feedKeep; {
		if r := f.s.streams.reads; r != nil {
			r.WithLabelValues("feed").Inc()
		}
		events, more, err := f.s.EventService.FindEvents(ctx, plantstore.EventFilter{Owner: f.owner, After: after, Limit: eventStreamPage})
		if err != nil {
			f.mu.Lock()
			failing := f.failing
			f.failing = true
			f.mu.Unlock()
			if !failing {
				f.s.logger().Warn("event stream: read events", "owner", f.owner, "err", err)
			}
			return false // again at the next wake or tick
		}
		f.mu.Lock()
		if f.failing {
			f.failing = false
			f.s.logger().Info("event stream: reading events again", "owner", f.owner)
		}
		added := false
		for _, e := range events {
			if e.Seq <= f.last { // never twice, whatever the store answers
				continue
			}
			f.frames = append(f.frames, feedFrame{seq: e.Seq, frame: appendEventFrame(nil, e)})
			f.last, added = e.Seq, true
		}
		if over := len(f.frames) - feedKeep; over > 0 {
			f.base = f.frames[over-1].seq
			f.frames = append(f.frames[:0], f.frames[over:]...)
		}
		after = f.last
		if added {
			close(f.changed)
			f.changed = make(chan struct{})
		}
		f.mu.Unlock()
		n += len(events)
		if !more {
			return false
		}
	}
	return true
}

// since appends to b the frames of at most limit events after seq after,
// and returns them with the seq of the last one (after itself when none),
// whether the feed holds more after those, and the channel closed at the
// feed's next change. ok is false when the feed no longer holds the events
// right after after (the stream is behind it: it reads the store).
func (f *ownerFeed) since(b []byte, after int64, limit int) (out []byte, last int64, more bool, changed <-chan struct{}, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if after < f.base {
		return b, after, false, f.changed, false
	}
	i := sort.Search(len(f.frames), func(i int) bool { return f.frames[i].seq > after })
	end := min(len(f.frames), i+limit)
	last = after
	for _, fr := range f.frames[i:end] {
		b = append(b, fr.frame...)
		last = fr.seq
	}
	return b, last, end < len(f.frames), f.changed, true
}
