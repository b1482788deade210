package sqlite

import (
	"testing"
	"time"
)

// TestReaderDeadline: a plant read's query is cancelled once it runs past
// its deadline, and only then: a timer that fires early, or late (after
// the query ended), cancels nothing; the next query gets a live context.
func TestReaderDeadline(t *testing.T) {
	r := &reader{}
	r.timer = time.AfterFunc(time.Hour, r.expire)
	r.timer.Stop()

	ctx := r.begin(time.Hour)
	r.expire() // fires before the deadline (a late timer of an earlier query)
	if ctx.Err() != nil {
		t.Fatal("a query was cancelled before its deadline")
	}
	if r.end() {
		t.Fatal("end reports a query that was not cancelled as expired")
	}
	r.expire() // fires after the query ended
	if ctx.Err() != nil {
		t.Fatal("a timer that fired after the query ended cancelled its context")
	}

	ctx = r.begin(10 * time.Millisecond)
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a query running past its deadline was not cancelled")
	}
	if !r.end() {
		t.Fatal("end does not report the query cancelled at its deadline")
	}
	if next := r.begin(time.Hour); next.Err() != nil {
		t.Fatal("the query after a cancelled one got a cancelled context")
	}
	r.end()
}
