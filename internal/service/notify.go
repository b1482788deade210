package service

import (
	"sync"

	"github.com/plantstore/plantstore"
)

// Notifier is told of every commit of the services that someone in this
// process waits on, and wakes them: the Dispatcher when the commit wrote
// deliveries (or re-queued some: a resend, a recover), and the event
// streams of the owner (Subscribe, plantstore.EventNotifier) when it wrote
// events. A wake is a hint, not the change: the woken read the storage.
// Wakes coalesce and waking never blocks the writer.
type Notifier struct {
	due chan struct{} // the Dispatcher's wake, a buffer of one

	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
	// onDue, if set, is told of each wake of the Dispatcher (tests).
	onDue func()
}

var _ plantstore.EventNotifier = (*Notifier)(nil)

// newNotifier returns a Notifier with no one waiting.
func newNotifier() *Notifier {
	return &Notifier{due: make(chan struct{}, 1), subs: make(map[string]map[chan struct{}]struct{})}
}

// committed wakes whoever waits on what a commit of owner wrote: the
// Dispatcher when it wrote deliveries, owner's event streams when it wrote
// events.
func (n *Notifier) committed(owner string, events, deliveries bool) {
	if deliveries {
		n.deliveriesDue()
	}
	if events {
		n.eventsWritten(owner)
	}
}

// deliveriesDue wakes the Dispatcher to claim at once instead of at the
// end of its poll interval.
func (n *Notifier) deliveriesDue() {
	if n.onDue != nil {
		n.onDue()
	}
	select {
	case n.due <- struct{}{}:
	default:
	}
}

// eventsWritten wakes every event stream of owner.
func (n *Notifier) eventsWritten(owner string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for ch := range n.subs[owner] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Subscribe returns a channel that receives after each commit of events of
// owner by this process, and cancel, which must be called once the caller
// stops waiting (it does not close the channel).
func (n *Notifier) Subscribe(owner string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	n.mu.Lock()
	set := n.subs[owner]
	if set == nil {
		set = make(map[chan struct{}]struct{})
		n.subs[owner] = set
	}
	set[ch] = struct{}{}
	n.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			n.mu.Lock()
			defer n.mu.Unlock()
			delete(n.subs[owner], ch)
			if len(n.subs[owner]) == 0 {
				delete(n.subs, owner)
			}
		})
	}
}

// Subscribers returns how many event streams wait (for a gauge).
func (n *Notifier) Subscribers() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	total := 0
	for _, set := range n.subs {
		total += len(set)
	}
	return total
}
