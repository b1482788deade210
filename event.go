package plantstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Event types: every change of a plant is one event.
const (
	EventPlantCreated = "plant.created"
	EventPlantUpdated = "plant.updated"
	EventPlantDeleted = "plant.deleted"
)

// EventTypes lists every event type, in the contract's order.
var EventTypes = []string{EventPlantCreated, EventPlantUpdated, EventPlantDeleted}

// ValidEventType reports whether t is one of EventTypes.
func ValidEventType(t string) bool { return slices.Contains(EventTypes, t) }

// DefaultEventRetention is how long events are kept unless --event-retention
// says otherwise: 30 days, as Stripe keeps its events.
const DefaultEventRetention = 720 * time.Hour

// Event is one change of one plant: what GET /events and the stream list,
// and what a webhook delivery announces. The service makes it (ID, Type,
// CreatedAt); the backend writes it in the change's transaction with the
// owner's next Seq, so a committed change always has its event and a failed
// one none.
//
// Seq has no gaps, and an owner's events become visible in Seq order (on
// PostgreSQL across replicas too), so "every event after Seq N" is a
// complete, resumable cursor: GET /events?after=N and Last-Event-ID.
type Event struct {
	Owner string
	Seq   int64  // per owner, from 1, +1 per event, no gaps; 0 until written
	ID    string // "evt_" + 24 hex digits (NewEventID): unique, for receivers to deduplicate
	Type  string // EventPlantCreated, EventPlantUpdated or EventPlantDeleted
	// The plant after the change; for a delete, as it was.
	PlantID   int64
	Name      string
	Tag       *string
	CreatedAt time.Time // the event's time
	// The plant's own times, as the change left them; zero when not known
	// (an event recorded before events kept them: the stores keep NULL).
	PlantCreatedAt, PlantUpdatedAt time.Time
}

// MessageID returns the webhook-id of the event's deliveries (to every
// subscription, on every attempt): "msg_" and the hex digits of its ID.
func (e *Event) MessageID() string {
	var buf [32]byte // an id of NewEventID's length fits: one allocation, the string's
	return string(e.AppendMessageID(buf[:0]))
}

// AppendMessageID appends the event's MessageID to b.
func (e *Event) AppendMessageID(b []byte) []byte {
	return append(append(b, "msg_"...), strings.TrimPrefix(e.ID, "evt_")...)
}

// EventIDOf is the inverse of Event.MessageID.
func EventIDOf(messageID string) string { return "evt_" + strings.TrimPrefix(messageID, "msg_") }

// NewEventID returns a fresh event id: "evt_" and 24 random hex digits.
func NewEventID() (string, error) {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("event: random: %w", err)
	}
	return "evt_" + hex.EncodeToString(b), nil
}

// EventMask says which events a subscription takes, and how: one bit per
// event type (EventBit), and MaskTyped for the PlantEvent envelope (else the
// NewPlant body). Computed once, by Mask; each backend's fan-out statement
// matches it against the event's bit.
type EventMask int64

// Bits of an EventMask.
const (
	MaskTyped   EventMask = 1 << iota // the PlantEvent envelope; else the NewPlant body
	MaskCreated                       // EventPlantCreated
	MaskUpdated                       // EventPlantUpdated
	MaskDeleted                       // EventPlantDeleted
)

// EventBit returns the bit of event type t (0 for an unknown type).
func EventBit(t string) EventMask {
	if i := slices.Index(EventTypes, t); i >= 0 {
		return MaskCreated << i
	}
	return 0
}

// Mask returns the events a subscription with types takes: untyped (nil),
// creates only with the NewPlant body; typed, its types with the envelope.
func Mask(types []string) EventMask {
	if types == nil {
		return MaskCreated
	}
	m := MaskTyped
	for _, t := range types {
		m |= EventBit(t)
	}
	return m
}

// Takes reports whether m takes events of type t.
func (m EventMask) Takes(t string) bool { return m&EventBit(t) != 0 }

// Types returns the subscription types m was made of: the inverse of Mask.
func (m EventMask) Types() []string {
	if m&MaskTyped == 0 {
		return nil
	}
	types := []string{}
	for _, t := range EventTypes {
		if m.Takes(t) {
			types = append(types, t)
		}
	}
	return types
}

// EventFilter selects a page of an owner's events, by Seq.
type EventFilter struct {
	Owner string
	After int64  // only events with Seq > After (0: from the first)
	Limit int    // page size, 1..MaxPageSize (EventService: 0 means DefaultPageSize)
	Type  string // "" for every type, else one of EventTypes
}

// EventService lists an owner's events (GET /events, the stream's catch-up).
type EventService interface {
	// FindEvents returns a page of the owner's events after f.After and
	// whether more follow. Past the retention, events may be gone: a first
	// Seq above f.After+1 tells a client it missed some.
	FindEvents(ctx context.Context, f EventFilter) ([]*Event, bool, error)
}

// EventNotifier wakes in-process waiters (the SSE handler) when events of an
// owner were committed by this process. service.Notifier implements it;
// the service pokes it after every commit that wrote events. A wake is a
// hint, not the event: on waking, read FindEvents after the last Seq seen.
// Wakes coalesce (the channel has a buffer of one), and writes by other
// processes (other replicas on PostgreSQL) do not wake anyone: a waiter
// that must see those polls FindEvents on a timer as well.
type EventNotifier interface {
	// Subscribe returns a channel that receives after each commit of
	// events of owner, and cancel, which must be called once the caller
	// stops waiting (it does not close the channel).
	Subscribe(owner string) (wake <-chan struct{}, cancel func())
}

// EventStore is a backend's events, read and pruned; the plant writes write
// them.
type EventStore interface {
	// ListEvents returns at most f.Limit of the owner's events matching f, by Seq.
	ListEvents(ctx context.Context, f EventFilter) ([]*Event, error)
	// PruneEvents deletes at most limit events created before before, in
	// one short statement, and returns how many. Seqs continue after a prune.
	PruneEvents(ctx context.Context, before time.Time, limit int) (int, error)
}

// NormalizeEventTypes checks a subscription's event types and returns them
// in EventTypes' order, each once; none is nil (untyped).
func NormalizeEventTypes(types []string) ([]string, error) {
	if len(types) == 0 {
		return nil, nil
	}
	for _, t := range types {
		if !ValidEventType(t) {
			return nil, Errorf(CodeInvalidBody, "invalid NewWebhook: types: %q is not an event type (plant.created, plant.updated, plant.deleted)", t)
		}
	}
	out := make([]string, 0, len(EventTypes))
	for _, t := range EventTypes {
		if slices.Contains(types, t) {
			out = append(out, t)
		}
	}
	return out, nil
}
