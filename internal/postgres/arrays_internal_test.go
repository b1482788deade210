package postgres

import (
	"testing"

	"github.com/plantstore/plantstore"
)

// TestMessageIDsOf checks that a run's message ids are its events'
// (Event.MessageID), with "" for a create without an event.
func TestMessageIDsOf(t *testing.T) {
	t.Parallel()
	run := []*writeOp{
		{event: &plantstore.Event{ID: "evt_0123abcd"}},
		{},
		{event: &plantstore.Event{ID: "evt_"}},
		{event: &plantstore.Event{ID: "odd"}},
		{event: &plantstore.Event{ID: "evt_ff"}},
	}
	got := messageIDsOf(run)
	if len(got) != len(run) {
		t.Fatalf("%d ids for %d creates", len(got), len(run))
	}
	for i, op := range run {
		want := ""
		if op.event != nil {
			want = op.event.MessageID()
		}
		if got[i] != want {
			t.Errorf("id %d: got %q, want %q", i, got[i], want)
		}
	}
}
