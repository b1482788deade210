package postgres

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// testClock is a clock that moves only when told, for readiness.clock;
// safe for the store's goroutines to read.
type testClock struct{ ns atomic.Int64 }

func newTestClock() *testClock {
	c := &testClock{}
	c.ns.Store(fixedNow.UnixNano())
	return c
}

func (c *testClock) Now() time.Time              { return time.Unix(0, c.ns.Load()) }
func (c *testClock) Advance(d time.Duration)     { c.ns.Add(int64(d)) }
func (c *testClock) set(r *readiness) *testClock { r.clock = c.Now; return c }

// AgeWrites makes the write outcomes db recorded older than readyFresh, as
// if no write had come for that long: Ping then checks by itself. The
// external tests of the package use it.
func AgeWrites(db *DB) {
	r := &db.ready
	r.mu.Lock()
	defer r.mu.Unlock()
	r.okAt = r.okAt.Add(-readyFresh)
	r.faultAt = r.faultAt.Add(-readyFresh)
}

// TestReadiness walks the state machine of ready.go through a failover as
// the writes see it: nothing known yet (check), writes that fail (not
// ready at once), idle while failing (probe), the first commit on the new
// primary (ready at once), a failure that started before that commit (old
// news: still ready), one that started after it (not ready), and idle
// after a success (check).
func TestReadiness(t *testing.T) {
	var r readiness
	clock := newTestClock().set(&r)
	gone := errors.New("server gone")
	want := func(step string, wantState readyState, wantErr error) {
		t.Helper()
		st, err := r.state()
		if st != wantState || err != wantErr {
			t.Fatalf("%s: state %v (%v), want %v (%v)", step, st, err, wantState, wantErr)
		}
	}

	want("no write yet", stateIdle, nil)

	r.succeeded()
	want("a write succeeded", stateOK, nil)
	clock.Advance(readyFresh - time.Nanosecond)
	want("just before readyFresh", stateOK, nil)
	clock.Advance(time.Nanosecond)
	want("readyFresh after the last write", stateIdle, nil)

	started := clock.Now()
	clock.Advance(10 * time.Millisecond)
	r.failed(started, gone)
	want("a write failed for the storage", stateFailing, gone)
	clock.Advance(readyFresh)
	want("failed, then idle", stateFailed, gone)
	other := errors.New("still gone")
	r.failed(clock.Now(), other)
	want("the probe failed too", stateFailing, other)
	if r.err() != other {
		t.Fatalf("err() = %v, want the last failure", r.err())
	}

	// Two writes in flight across the switch: one started on the old
	// primary, one that commits on the new one first.
	old := clock.Now()
	clock.Advance(100 * time.Millisecond)
	r.succeeded()
	want("the first commit after the outage", stateOK, nil)
	clock.Advance(5 * time.Millisecond)
	r.failed(old, gone)
	want("a failure of a write that started before that commit", stateOK, nil)
	if r.err() != nil {
		t.Fatalf("err() = %v after old news, want nil", r.err())
	}

	clock.Advance(time.Millisecond)
	r.failed(clock.Now(), gone)
	want("a failure of a write that started after the commit", stateFailing, gone)
	r.succeeded()
	want("a commit after that failure", stateOK, nil)
}

// A failure that arrives while writes keep failing stays fresh: the store
// does not probe while the writes say they fail, however long that lasts.
func TestReadiness_FailingStaysFresh(t *testing.T) {
	var r readiness
	clock := newTestClock().set(&r)
	gone := errors.New("server gone")
	for range 30 {
		r.failed(clock.Now(), gone)
		clock.Advance(readyFresh / 2)
		if st, _ := r.state(); st != stateFailing {
			t.Fatalf("state %v while a write fails every %v, want stateFailing", st, readyFresh/2)
		}
	}
}

// The outcome recorded concurrently by many writers is the store's: the
// race detector checks the locking, and the last call decides.
func TestReadiness_Concurrent(t *testing.T) {
	var r readiness
	newTestClock().set(&r)
	gone := errors.New("server gone")
	done := make(chan struct{})
	for i := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 1000 {
				if i%2 == 0 {
					r.succeeded()
				} else {
					r.failed(r.now(), gone)
				}
				r.state()
			}
		}()
	}
	for range 8 {
		<-done
	}
	r.succeeded()
	if st, err := r.state(); st != stateOK || err != nil {
		t.Fatalf("state %v (%v) after a final success, want stateOK", st, err)
	}
}
