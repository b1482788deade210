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

// Task is one attempt to send: a delivery claimed under a lease, or a ping.
// It carries the facts its body is rendered from (internal/eventjson), not
// the body.
type Task struct {
	MessageID      string // webhook-id: the same on every attempt (Event.MessageID)
	SubscriptionID string
	Owner          string
	Body           Body
	// Event is the event delivered (not for a ping); Seq 0 in a delivery
	// whose body has none.
	Event Event
	// StoredBody, when set, is sent as it is: the bytes of a delivery whose
	// facts would render others (stored JSON that escaped <, > and &).
	StoredBody []byte
	Attempts   int // attempts made before this one
	CreatedAt  time.Time

	Subscription *Subscription // as the row store read it with the lease
	// URL and Secrets (valid at the claim) are set from Subscription by
	// the service.
	URL     string
	Secrets []string
}

// Body names the JSON body of a Task.
type Body uint8

// Bodies of a Task.
const (
	BodyNewPlant Body = iota // the contract's NewPlant: an untyped subscription's
	BodyEvent                // the contract's PlantEvent envelope: a typed subscription's
	BodyPing                 // a ping, of POST /webhooks/{id}/ping
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
	// Error says why no answer came, the kind of failure only ("connection
	// refused"); addresses and name servers go to the log.
	Error         string
	Duration      time.Duration
	ResponseBody  string        // the first bytes of the answer (ResponseExcerpt)
	State         DeliveryState // succeeded, failed (give up), or pending with NextAttemptAt
	NextAttemptAt *time.Time
	// Disable disables the subscription (DisabledGone: the receiver
	// answered 410) and fails its other pending deliveries.
	Disable bool
	// FailingCutoff, when not zero, disables it as Disable does
	// (DisabledFailing) when this attempt failed and its FailingSince is
	// before FailingCutoff. The service sets it.
	FailingCutoff time.Time
}

// Claim is what the dispatcher asks of the outbox: due deliveries, leased
// to it, chosen fairly (the service's scheduler: service.Pick).
type Claim struct {
	// Lease is how long the deliveries stay with the claimer, by the
	// database's clock, so that replicas whose clocks differ cannot take
	// each other's leases early.
	Lease time.Duration
	Limit int // how many deliveries at most
	// PerSubscription and PerOwner bound the leased deliveries of one
	// subscription and of one owner, over every claimer (0: no bound).
	PerSubscription int
	PerOwner        int
	// Busy counts attempts in flight that hold no lease (pings), against
	// both bounds.
	Busy []InFlight
}

// DueDelivery is a delivery a claim may take: pending, due by the database's
// clock, not leased; Live: its subscription is there and enabled.
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

// OutboxStore is a backend's outbox: the deliveries and their attempts.
type OutboxStore interface {
	// DueDeliveries reads, by the database's clock, at most
	// perSubscription of the earliest due deliveries of each subscription,
	// and the deliveries leased now per subscription (none when nothing is
	// due). Its cost grows with the subscriptions that have pending
	// deliveries, not with the deliveries.
	DueDeliveries(ctx context.Context, perSubscription int) (due []DueDelivery, leased []InFlight, err error)
	// ClaimDeliveries leases, in one transaction, the deliveries of picked
	// still due and unleased whose subscription is enabled, and returns
	// them with their Subscription set; it fails the pending deliveries of
	// dead's gone or disabled subscriptions. Concurrent leases never
	// return the same delivery.
	ClaimDeliveries(ctx context.Context, picked []DueDelivery, dead []string, lease time.Duration) ([]*Task, error)
	// CompleteDelivery records attempt r of t, sets the delivery's state
	// and releases its lease. A failed attempt sets the subscription's
	// FailingSince unless set, a success clears it; r.Disable or
	// r.FailingCutoff may disable it. A delivery no longer pending is left
	// alone, with no error.
	CompleteDelivery(ctx context.Context, t *Task, r AttemptResult) error
	// OutboxStats returns how many deliveries are pending and when the
	// oldest of them was created (zero time when none).
	OutboxStats(ctx context.Context) (pending int, oldest time.Time, err error)
	// CountLeased counts the deliveries leased now, as DueDeliveries
	// counts them, of subscriptionID and of all the owner's subscriptions.
	CountLeased(ctx context.Context, owner, subscriptionID string) (subscription, ownerTotal int, err error)
	// PruneOutbox deletes at most limit attempts made before before, then
	// finished deliveries created before it, and returns how many.
	PruneOutbox(ctx context.Context, before time.Time, limit int) (int, error)
}

// NewMessageID returns a ping's webhook-id: "msg_" and 24 random hex digits.
func NewMessageID() (string, error) {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("webhook: random: %w", err)
	}
	return "msg_" + hex.EncodeToString(b), nil
}
