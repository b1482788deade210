package postgres

import (
	"sync"
	"time"
)

// Readiness. Ping (GET /readyz) says whether writes can succeed now, and
// the writes themselves are the best witness: every write records its
// outcome (DB.wrote), so that a commit that succeeds makes the store ready
// at once and a write that fails for the storage (writeFault) makes it not
// ready at once, with no round trip of its own. A probe through the pool
// would lag behind them: after a failover it may wait for a connection,
// or meet one to the old server, while the writes already commit on the
// new one.
//
// Only when no write has said anything for readyFresh (an idle replica,
// or one that a load balancer took out of rotation and sends nothing)
// does Ping check by itself: a round trip, or a probe write when the last
// outcome was a failure, whose outcome it records like a write's.

// readyFresh is how long the outcome of a write answers Ping alone.
const readyFresh = time.Second

// readyState is what the recorded outcomes say of the writes.
type readyState int

const (
	stateIdle    readyState = iota // no outcome within readyFresh, the last one a success (or none): check
	stateOK                        // a write succeeded within readyFresh, and none failed since
	stateFailing                   // a write failed for the storage within readyFresh, and none succeeded since
	stateFailed                    // the last outcome is a failure older than readyFresh: probe
)

// readiness keeps the outcome of the last writes for Ping. The zero value
// has seen none. Its methods may be called from several goroutines.
type readiness struct {
	clock func() time.Time // nil: time.Now; tests set their own

	mu      sync.Mutex
	okAt    time.Time // when the last write that succeeded ended
	fault   error     // the last write's failure for the storage; nil once one succeeds
	faultAt time.Time // when that write ended
}

func (r *readiness) now() time.Time {
	if r.clock != nil {
		return r.clock()
	}
	return time.Now()
}

// succeeded records a write that committed: the store is ready at once,
// whatever failed before.
func (r *readiness) succeeded() {
	now := r.now()
	r.mu.Lock()
	r.okAt, r.fault = now, nil
	r.mu.Unlock()
}

// failed records a write, started at start, that failed for the storage
// with err, unless a write that ended after start succeeded: that one
// came through the same storage later, and says more of it now (the
// failure is old news, e.g. a statement on a connection to the old
// primary that ends after the new one took writes).
func (r *readiness) failed(start time.Time, err error) {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if start.Before(r.okAt) {
		return
	}
	r.fault, r.faultAt = err, now
}

// state returns what the outcomes say now, and the failure when they say
// the writes fail.
func (r *readiness) state() (readyState, error) {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.fault != nil && now.Sub(r.faultAt) < readyFresh:
		return stateFailing, r.fault
	case r.fault != nil:
		return stateFailed, r.fault
	case !r.okAt.IsZero() && now.Sub(r.okAt) < readyFresh:
		return stateOK, nil
	}
	return stateIdle, nil
}

// err returns the recorded failure, nil when there is none.
func (r *readiness) err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fault
}
