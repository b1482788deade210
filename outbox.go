package plantstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"
)

// DeliveryState is the state of one event's delivery to one subscription.
type DeliveryState string

// Delivery states.
const (
	DeliveryPending   DeliveryState = "pending"
	DeliverySucceeded DeliveryState = "succeeded"
	DeliveryFailed    DeliveryState = "failed" // retries exhausted, or the subscription was disabled
)

// Attempt is one delivery attempt, as GET /webhooks/{id}/deliveries shows it.
type Attempt struct {
	MessageID      string // the webhook-id header
	PlantID        int64
	Attempt        int
	AttemptedAt    time.Time
	StatusCode     int    // 0: no answer
	Error          string // why no answer came: the kind of failure only (AttemptResult.Error)
	Duration       time.Duration
	ResponseBody   string        // the first bytes of the answer (ResponseExcerpt)
	State          DeliveryState // the delivery's state after this attempt
	NextAttemptAt  *time.Time    // pending only
	SubscriptionID string
}

// Task is one attempt to make: a delivery of an event to one subscription,
// claimed under a lease, or a ping. It carries the facts its body is
// rendered from when it is sent (package eventjson), not the body.
type Task struct {
	MessageID      string // webhook-id: the same on every attempt (Event.MessageID)
	SubscriptionID string
	Owner          string
	// Body says which body is POSTed: the NewPlant JSON of Event's plant
	// (untyped subscriptions), Event's PlantEvent envelope (typed ones),
	// or a ping.
	Body Body
	// Event is the event delivered (not for a ping). Its Seq is 0 for a
	// delivery to an untyped subscription written before events existed
	// (its body has none).
	Event Event
	// StoredBody, when set, is the body as an earlier version stored it,
	// sent as it is: kept by the migration that made deliveries facts
	// where the facts would render other bytes (an encoder that escaped
	// <, > and &). nil for every delivery written since.
	StoredBody []byte
	Attempts   int // attempts made before this one
	CreatedAt  time.Time

	// Subscription is the row the delivery goes to, as the store read it
	// with the lease (the row store sets it).
	Subscription *Subscription
	// URL and Secrets (the signing secrets valid at the claim) are what the
	// request is sent to and signed with; the service sets them from
	// Subscription.
	URL     string
	Secrets []string
}

// Body names the JSON body of a Task.
type Body uint8

// Bodies of a Task.
const (
	// BodyNewPlant is the plant as the contract's NewPlant, {"id","name",
	// "tag"}: what an untyped subscription gets (creates only).
	BodyNewPlant Body = iota
	// BodyEvent is the event as the contract's PlantEvent envelope: what a
	// typed subscription gets.
	BodyEvent
	// BodyPing is a ping, {"type":"ping","id","created_at","data":
	// {"webhook"}}, of POST /webhooks/{id}/ping (MessageID, CreatedAt,
	// SubscriptionID).
	BodyPing
)

// SendResult is what one signed request of a Task came to, as the sender
// reports it: facts about the request only. The service decides from it
// what becomes of the delivery (AttemptResult).
type SendResult struct {
	AttemptedAt time.Time // when the request was signed
	StatusCode  int       // 0: no answer
	// Error says why no answer came, as the owner sees it (AttemptResult's
	// Error).
	Error    string
	Duration time.Duration
	// ResponseBody is the first bytes of the answer (ResponseExcerpt).
	ResponseBody string
	// RetryAfter is the wait the receiver asked for in a Retry-After
	// header, as it gave it (the service bounds it), when HasRetryAfter.
	RetryAfter    time.Duration
	HasRetryAfter bool
	// Final says that no retry of the request can succeed: no valid
	// signing secret, a URL no request can be made of, or an address
	// deliveries may not reach (no connection was made).
	Final bool
	// Cause is the error whose kind Error names, for the server's log only:
	// it may name the address a host resolved to or the server's name
	// servers. nil when an answer came.
	Cause error
}

// AttemptResult is what one delivery attempt came to.
type AttemptResult struct {
	AttemptedAt time.Time // zero: the service records it as now
	StatusCode  int
	// Error says why no answer came, as the owner sees it: the kind of
	// failure only ("connection refused", "name did not resolve", ...:
	// the sender's Failure phrases), never an address a name resolved to or
	// the server's name servers, which go to the log.
	Error    string
	Duration time.Duration
	// ResponseBody is the first bytes of the answer (ResponseExcerpt).
	ResponseBody string
	// Outcome: succeeded, failed (give up), or pending with NextAttemptAt.
	State         DeliveryState
	NextAttemptAt *time.Time
	// Disable marks the subscription disabled (the receiver answered 410),
	// as of AttemptedAt with reason DisabledGone, and fails its other
	// pending deliveries.
	Disable bool
	// FailingCutoff, when not zero, disables the subscription as Disable
	// does, with reason DisabledFailing, when this attempt failed and every
	// attempt since one before FailingCutoff has failed (its FailingSince,
	// this attempt's time when not yet failing, is before FailingCutoff).
	// The service sets it from its disable-after setting.
	FailingCutoff time.Time
}

// Claim is what the dispatcher asks of the outbox: due deliveries, leased
// to it, chosen fairly (the service's scheduler: service.Pick).
type Claim struct {
	// Lease is how long the deliveries stay with the claimer: until the
	// database's clock passes the claim's time plus Lease (on PostgreSQL
	// the server's now(), so that replicas whose clocks differ cannot take
	// each other's leases early; SQLite is one process, whose clock is the
	// database's).
	Lease time.Duration
	// Limit bounds how many deliveries come back.
	Limit int
	// PerSubscription bounds the leased deliveries of one subscription, in
	// flight at once, counted over every claimer sharing the database (0:
	// no bound).
	PerSubscription int
	// PerOwner bounds the leased deliveries of one owner, counted the same
	// way (0: no bound).
	PerOwner int
	// Busy counts attempts in flight that hold no lease (this process's
	// pings): the scheduler counts them with the leased ones against both
	// bounds.
	Busy []InFlight
}

// DueDelivery is a delivery a claim may take: pending, due by the
// database's clock, not leased. Live says that its subscription is there
// and enabled; a claim fails the pending deliveries of one that is not
// (OutboxStore.ClaimDeliveries).
type DueDelivery struct {
	MessageID      string
	SubscriptionID string
	Owner          string
	NextAttemptAt  time.Time
	Live           bool
}

// InFlight counts the leased deliveries (or other attempts in flight, see
// Claim.Busy) of one subscription (of Owner).
type InFlight struct {
	SubscriptionID string
	Owner          string
	N              int
}

// OutboxStore is a backend's outbox: the deliveries written with their
// plants, and the attempts made.
type OutboxStore interface {
	// DueDeliveries reads, by the database's clock, the earliest due
	// deliveries (state pending, next attempt at or before now, no lease or
	// an expired one) of each subscription that has any, at most
	// perSubscription of each, with whether the subscription is live, and
	// the deliveries leased now, counted per subscription over every
	// claimer sharing the database (none when nothing is due). It writes
	// nothing. Its cost grows with the number of subscriptions that have
	// pending deliveries, not with the number of deliveries.
	DueDeliveries(ctx context.Context, perSubscription int) (due []DueDelivery, leased []InFlight, err error)
	// ClaimDeliveries leases, in one transaction, each delivery of picked
	// (by MessageID and SubscriptionID) that is still pending, due and
	// unleased, and whose subscription is enabled, until the database's
	// now plus lease, and returns them with their Subscription set; those
	// no longer so are left out. It also marks failed the pending
	// deliveries of each subscription of dead that is gone or disabled.
	// Concurrent leases (other processes included) never return the same
	// delivery.
	ClaimDeliveries(ctx context.Context, picked []DueDelivery, dead []string, lease time.Duration) ([]*Task, error)
	// CompleteDelivery records attempt r of t (r.AttemptedAt set), sets the
	// delivery's state and releases its lease. A failed attempt (any state
	// but succeeded) sets the subscription's FailingSince to r.AttemptedAt
	// unless it is set; a successful one clears it. With r.Disable, or
	// r.FailingCutoff passed (see AttemptResult), it also disables the
	// subscription as of r.AttemptedAt and fails its other pending
	// deliveries. A delivery no longer pending (completed, or deleted with
	// its subscription) is left alone: no error.
	CompleteDelivery(ctx context.Context, t *Task, r AttemptResult) error
	// OutboxStats returns how many deliveries are pending and when the
	// oldest of them was created (zero time when none).
	OutboxStats(ctx context.Context) (pending int, oldest time.Time, err error)
	// CountLeased counts the deliveries leased now (pending, with a lease
	// that the database's clock has not passed), counted over every
	// claimer sharing the database as DueDeliveries counts them: those
	// of the owner's subscription subscriptionID, and those of all the
	// owner's subscriptions. An unknown subscription or owner counts 0.
	CountLeased(ctx context.Context, owner, subscriptionID string) (subscription, ownerTotal int, err error)
	// PruneOutbox deletes at most limit rows, each statement at most limit:
	// attempts made before before, then finished (succeeded or failed)
	// deliveries created before it. It returns how many it deleted; fewer
	// than limit means none of them is left.
	PruneOutbox(ctx context.Context, before time.Time, limit int) (int, error)
}

// NewMessageID returns a fresh webhook-id, for a ping (an event's is
// Event.MessageID): "msg_" and 24 random hex digits.
func NewMessageID() (string, error) {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("webhook: random: %w", err)
	}
	return "msg_" + hex.EncodeToString(b), nil
}
