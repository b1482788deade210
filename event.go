// SSE: see http/events_stream.go (another engineer).

package plantstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/go-faster/jx"
)

// Event types: every change of a plant is one event of one of these types.
const (
	EventPlantCreated = "plant.created"
	EventPlantUpdated = "plant.updated"
	EventPlantDeleted = "plant.deleted"
)

// EventTypes lists every event type, in the order the contract lists them.
var EventTypes = []string{EventPlantCreated, EventPlantUpdated, EventPlantDeleted}

// ValidEventType reports whether t is one of EventTypes.
func ValidEventType(t string) bool { return slices.Contains(EventTypes, t) }

// DefaultEventRetention is how long events are kept unless the server is
// configured otherwise (--event-retention): 30 days, as Stripe keeps its
// events.
const DefaultEventRetention = 720 * time.Hour

// PlantEvent is one change of one plant (the name Event is the webhook
// outbox's, in webhook.go). The backend writes it in the transaction of the
// change, so a committed change always has its event and a failed one none.
//
// Seq is per owner: the owner's first event has 1 and each next one the
// previous plus 1, with no gaps; events of one owner become visible to
// readers in Seq order (a reader that sees Seq N has seen, or can see, every
// Seq below N of that owner, on PostgreSQL across replicas too). So
// "every event after Seq N" is a complete, resumable cursor: GET
// /events?after=N and the SSE stream's Last-Event-ID both use it.
type PlantEvent struct {
	Seq     int64  // per owner, from 1, +1 per event, no gaps
	ID      string // "evt_" + 24 hex digits (NewEventID): unique, for receivers to deduplicate
	Owner   string
	Type    string // EventPlantCreated, EventPlantUpdated or EventPlantDeleted
	PlantID int64
	// Data is the plant as the contract's Plant JSON (Plant.EventData):
	// after the change; for a delete, as it was.
	Data      json.RawMessage
	CreatedAt time.Time
}

// Envelope returns the event as the contract's PlantEvent JSON,
// {"type","id","seq","created_at","data"}: the body of a typed webhook
// delivery and the items of GET /events (and the data of an SSE message).
func (e *PlantEvent) Envelope() []byte {
	prefix, suffix := e.EnvelopeParts()
	return append(strconv.AppendInt(prefix, e.Seq, 10), suffix...)
}

// EnvelopeParts returns the envelope's JSON before and after the decimal
// Seq: a store that assigns Seq in its transaction writes a typed delivery's
// body as prefix, Seq, suffix, with no JSON encoder of its own.
func (e *PlantEvent) EnvelopeParts() (prefix, suffix []byte) {
	var w jx.Encoder
	w.SetBytes(make([]byte, 0, 40+len(e.Type)+len(e.ID)))
	w.ObjStart()
	w.FieldStart("type")
	w.Str(e.Type)
	w.FieldStart("id")
	w.Str(e.ID)
	w.FieldStart("seq")
	prefix = w.Bytes()
	var v jx.Encoder
	v.SetBytes(make([]byte, 0, 64+len(e.Data)))
	v.RawStr(`,"created_at":`)
	v.Str(e.CreatedAt.UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano)) // PostgreSQL's precision: the same on every backend and every read
	v.RawStr(`,"data":`)
	v.Raw(e.Data)
	v.RawStr(`}`)
	return prefix, v.Bytes()
}

// EventData returns the plant as an event's data: the contract's Plant,
// {"id","name","tag"} with tag absent when unset (the NewPlant JSON of
// WebhookPayload; the same fields).
func (p *Plant) EventData() json.RawMessage { return p.WebhookPayload() }

// NewEventID returns a fresh event id: "evt_" and 24 random hex digits.
func NewEventID() (string, error) {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("event: random: %w", err)
	}
	return "evt_" + hex.EncodeToString(b), nil
}

// EventFilter selects one page of an owner's events, by Seq ascending.
type EventFilter struct {
	Owner string
	After int64  // only events with Seq > After (0: from the first)
	Limit int    // page size, 1..MaxPageSize (EventService: 0 means DefaultPageSize)
	Type  string // "" for every type, else one of EventTypes
}

// EventService lists an owner's events (GET /events, and the SSE stream's
// catch-up). Errors a client may see are *Error values.
type EventService interface {
	// FindEvents returns one page of the owner's events with Seq >
	// f.After by Seq ascending, and whether another page follows. Events
	// older than the retention may be gone: the first Seq returned is then
	// higher than f.After+1 (a client can tell it missed events it never
	// fetched in time).
	FindEvents(ctx context.Context, f EventFilter) ([]*PlantEvent, bool, error)
}

// EventNotifier wakes in-process waiters (the SSE handler) when events of an
// owner were committed by this process. service.Broadcaster implements it;
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

// EventStore is a backend's events: written by the plant writes
// (InsertPlant, UpdatePlant, DeletePlant...) in their transactions; read and
// pruned here.
type EventStore interface {
	// ListEvents returns at most f.Limit of the owner's events with Seq >
	// f.After (and of type f.Type when set), by Seq ascending.
	ListEvents(ctx context.Context, f EventFilter) ([]*PlantEvent, error)
	// PruneEvents deletes at most limit events created before before, in
	// one short statement, and returns how many; fewer than limit means none
	// is left. It never deletes an owner's latest sequence counter, so the
	// next Seq continues after a prune.
	PruneEvents(ctx context.Context, before time.Time, limit int) (int, error)
}

// NormalizeEventTypes checks a subscription's event types and returns them
// in the order of EventTypes, each once; an empty list is nil (untyped).
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

// SetPlant sets ev's data to p (the plant after the change; for a delete,
// as it was) and its envelope parts: a store calls it when only it knows
// the plant (an update applied in SQL, a delete).
func (ev *Event) SetPlant(p *Plant) {
	ev.Data = p.EventData()
	pe := PlantEvent{ID: ev.EventID, Type: ev.EventType(), Data: ev.Data, CreatedAt: ev.CreatedAt}
	ev.EnvelopePrefix, ev.EnvelopeSuffix = pe.EnvelopeParts()
}
