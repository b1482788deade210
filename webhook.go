package plantstore

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-faster/jx"
)

// ScopeWebhooksManage grants the subscription API (/webhooks).
const ScopeWebhooksManage = "webhooks:manage"

// Limits of a subscription.
const (
	MaxWebhookURLLength         = 2048
	MaxWebhookDescriptionLength = 256
	// SecretRotationGrace is how long the previous secret still signs after
	// a rotation.
	SecretRotationGrace = 24 * time.Hour
	// MaxDeliveriesListed bounds GET /webhooks/{id}/deliveries.
	MaxDeliveriesListed = 100
	// DefaultMaxSubscriptions is how many subscriptions an owner may have
	// unless the server is configured otherwise; MaxMaxSubscriptions bounds
	// that setting. Every subscription counts, disabled ones too, so the
	// cap also bounds the outbox rows one create writes.
	DefaultMaxSubscriptions = 16
	MaxMaxSubscriptions     = 1000
)

// Subscription is a webhook subscription: every plant its owner creates is
// POSTed to URL, signed with Secret (and PreviousSecret until
// PreviousSecretUntil, after a rotation). Secrets are stored as they are:
// signing needs them (as with Stripe's and Svix's endpoint secrets).
type Subscription struct {
	ID                  string // "whk_" + 16 hex digits (NewSubscription: time-ordered)
	Owner               string
	URL                 string
	Description         string
	Secret              string // "whsec_" + base64 of 32 random bytes
	PreviousSecret      string
	PreviousSecretUntil *time.Time
	CreatedAt           time.Time
	// DisabledAt is set when the subscription was disabled, for
	// DisabledReason; a disabled subscription gets no deliveries.
	DisabledAt     *time.Time
	DisabledReason DisabledReason // "" while enabled
	// FailingSince is the time of the first failed attempt after the last
	// successful one (nil while the receiver answers): when every attempt
	// has failed for long enough, the subscription is disabled.
	FailingSince *time.Time
	// Types are the event types a typed subscription takes (each of
	// EventTypes at most once, in that order), delivered as the PlantEvent
	// envelope; nil: untyped, the original contract: creates only, with
	// the NewPlant body.
	Types []string
}

// Takes reports whether s takes events of type t: a typed subscription the
// types it names, an untyped one creates.
func (s *Subscription) Takes(t string) bool {
	if s.Types == nil {
		return t == EventPlantCreated
	}
	return slices.Contains(s.Types, t)
}

// DisabledReason says why a subscription was disabled.
type DisabledReason string

// Reasons to disable a subscription.
const (
	// DisabledGone: a receiver answered 410 Gone.
	DisabledGone DisabledReason = "gone"
	// DisabledFailing: every attempt failed for longer than the server
	// allows (AttemptResult.FailingCutoff).
	DisabledFailing DisabledReason = "failing"
)

// SigningSecrets returns the secrets that sign a delivery at now.
func (s *Subscription) SigningSecrets(now time.Time) []string {
	secrets := []string{s.Secret}
	if s.PreviousSecret != "" && s.PreviousSecretUntil != nil && now.Before(*s.PreviousSecretUntil) {
		secrets = append(secrets, s.PreviousSecret)
	}
	return secrets
}

// SubscriptionFilter selects one page of an owner's subscriptions, by id
// ascending.
type SubscriptionFilter struct {
	Owner string
	After *string // only ids after this one (exclusive)
	Limit int     // page size, 1..MaxPageSize (WebhookService: 0 means DefaultPageSize)
}

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
	Error          string // why no answer came
	Duration       time.Duration
	ResponseBody   string        // the first bytes of the answer (ResponseExcerpt)
	State          DeliveryState // the delivery's state after this attempt
	NextAttemptAt  *time.Time    // pending only
	SubscriptionID string
}

// WebhookService manages an owner's webhook subscriptions. Every method is
// scoped to one owner; errors a client may see are *Error values.
type WebhookService interface {
	// CreateSubscription checks the URL and description and stores a new
	// subscription with a fresh id and signing secret, or returns a
	// CodeTooManyWebhooks error when the owner has as many subscriptions as
	// allowed.
	// With types (NormalizeEventTypes) the subscription is typed.
	CreateSubscription(ctx context.Context, owner, url, description string, types ...string) (*Subscription, error)
	// FindSubscriptions returns one page of the owner's subscriptions by id
	// ascending (creation order for the ids NewSubscription issues), and
	// whether another page follows.
	FindSubscriptions(ctx context.Context, f SubscriptionFilter) ([]*Subscription, bool, error)
	// FindSubscriptionByID returns one, or a CodeWebhookNotFound error.
	FindSubscriptionByID(ctx context.Context, owner, id string) (*Subscription, error)
	// DeleteSubscription deletes it with its deliveries and attempts, or
	// returns a CodeWebhookNotFound error.
	DeleteSubscription(ctx context.Context, owner, id string) error
	// RotateSecret gives the subscription a new signing secret; the old one
	// keeps signing for oldExpiresIn (nil: SecretRotationGrace; 0: it
	// stops now). It returns the subscription.
	RotateSecret(ctx context.Context, owner, id string, oldExpiresIn *time.Duration) (*Subscription, error)
	// FindAttempts returns one page of the subscription's attempt log,
	// newest first, and whether another page follows, or a
	// CodeWebhookNotFound error.
	FindAttempts(ctx context.Context, f AttemptFilter) ([]*Attempt, bool, error)
	// UpdateSubscription applies a merge patch; re-enabling clears the
	// disabled state and the failing streak. When it re-enabled the
	// subscription it also returns since when deliveries were missed.
	UpdateSubscription(ctx context.Context, owner, id string, u SubscriptionUpdate) (*Subscription, *time.Time, error)
	// ResendDelivery queues a new attempt of one delivery now
	// (CodeDeliveryNotFound, CodeWebhookDisabled).
	ResendDelivery(ctx context.Context, owner, id, messageID string) (*Delivery, error)
	// RecoverDeliveries re-queues the subscription's failed deliveries
	// created at or after since that no recover re-queued yet (since their
	// last resend, or the subscription's last re-enable), whatever since
	// that recover had, and returns how many it re-queued (CodeInvalidBody
	// for a since before 1970 or in the future: CheckSince;
	// CodeWebhookDisabled).
	RecoverDeliveries(ctx context.Context, owner, id string, since time.Time) (int64, error)
	// PingSubscription POSTs a signed ping event to the subscription at
	// once and returns what came of it.
	PingSubscription(ctx context.Context, owner, id string) (*PingResult, error)
}

// WebhookStore is a backend's subscriptions: rows in, rows out, sentinel
// errors.
type WebhookStore interface {
	// InsertSubscription stores s, or returns ErrExists when its id is
	// taken, or ErrLimit when s.Owner has max subscriptions or more
	// (disabled ones count). The count and the insert are atomic: concurrent
	// inserts, from any number of processes, never leave an owner with
	// more than max.
	InsertSubscription(ctx context.Context, s *Subscription, max int) error
	// ListSubscriptions returns at most f.Limit of the owner's
	// subscriptions whose id sorts after f.After (when set), by id
	// ascending.
	ListSubscriptions(ctx context.Context, f SubscriptionFilter) ([]*Subscription, error)
	// FindSubscription returns the owner's subscription or ErrNotFound.
	FindSubscription(ctx context.Context, owner, id string) (*Subscription, error)
	// DeleteSubscription deletes the owner's subscription with its
	// deliveries and attempts in one transaction, or returns ErrNotFound.
	DeleteSubscription(ctx context.Context, owner, id string) error
	// RotateSecret makes secret the signing secret and keeps the current
	// one as the previous secret until previousUntil; it returns the updated
	// subscription or ErrNotFound.
	RotateSecret(ctx context.Context, owner, id, secret string, previousUntil time.Time) (*Subscription, error)
	// ListAttempts returns at most f.Limit of the subscription's attempts
	// after f.After (newest first, see AttemptFilter) in state f.State
	// (when set), or ErrNotFound when the subscription is not the owner's.
	ListAttempts(ctx context.Context, f AttemptFilter) ([]*Attempt, error)
	// UpdateSubscription applies u as of now (a disable sets DisabledAt to
	// now with no reason and fails the pending deliveries; an enable clears
	// DisabledAt, DisabledReason and FailingSince, and the recovered mark
	// of every delivery) and returns the subscription before and after, or
	// ErrNotFound.
	UpdateSubscription(ctx context.Context, owner, id string, u SubscriptionUpdate, now time.Time) (before, after *Subscription, err error)
	// ResendDelivery makes the subscription's delivery messageID pending
	// and due at now, whatever its state (a leased one keeps its lease),
	// clears its recovered mark, and returns it, or ErrNotFound.
	ResendDelivery(ctx context.Context, owner, id, messageID string, now time.Time) (*Delivery, error)
	// RecoverDeliveries makes at most limit of the subscription's failed
	// deliveries created at or after since and not marked recovered
	// pending and due at now, marking them recovered (at now); it returns
	// how many (fewer than limit: none is left), or ErrNotFound when the
	// subscription is not the owner's.
	RecoverDeliveries(ctx context.Context, owner, id string, since, now time.Time, limit int) (int, error)
}

// Event is the change a plant write reports, written in the transaction of
// the change: a PlantEvent (event.go) in the events table, with the owner's
// next Seq, and the outbox rows: one delivery per enabled subscription of
// the owner that takes it (an untyped subscription takes creates only, with
// Payload as body; a typed one the types it names, with the envelope as
// body: EnvelopePrefix, the Seq, EnvelopeSuffix).
type Event struct {
	MessageID string // the webhook-id header: the same on every attempt
	PlantID   int64
	Payload   []byte // the body POSTed to untyped subscriptions (creates only): NewPlant
	CreatedAt time.Time

	// Type is the event type ("": EventPlantCreated); EventID the
	// PlantEvent's id; Data its data (nil: Payload).
	Type    string
	EventID string
	Data    []byte
	// EnvelopePrefix and EnvelopeSuffix are a typed delivery's body around
	// the decimal Seq (PlantEvent.EnvelopeParts); nil: no typed delivery.
	EnvelopePrefix, EnvelopeSuffix []byte

	// Set by the store when the write committed: the event's Seq (0: no
	// event was written, e.g. a create whose key was taken) and how many
	// deliveries it wrote.
	Seq        int64
	Deliveries int
}

// EventType returns ev.Type, EventPlantCreated when unset.
func (ev *Event) EventType() string {
	if ev.Type == "" {
		return EventPlantCreated
	}
	return ev.Type
}

// EventData returns ev.Data, Payload when unset, and JSON null when
// neither is (an event made by a test or tool with no body).
func (ev *Event) EventData() []byte {
	switch {
	case ev.Data != nil:
		return ev.Data
	case ev.Payload != nil:
		return ev.Payload
	}
	return []byte("null")
}

// Task is one pending delivery handed to a dispatcher: the event's payload
// for one subscription, claimed under a lease.
type Task struct {
	MessageID      string // webhook-id: the same on every attempt
	SubscriptionID string
	Owner          string
	PlantID        int64
	Payload        []byte // the NewPlant JSON
	Attempts       int    // attempts made before this one
	CreatedAt      time.Time

	// Subscription is the row the delivery goes to, as the store read it
	// with the claim (the row store sets it).
	Subscription *Subscription
	// URL and Secrets (the signing secrets valid at the claim) are what the
	// dispatcher uses; the OutboxService sets them from Subscription.
	URL     string
	Secrets []string
}

// AttemptResult is what one delivery attempt came to.
type AttemptResult struct {
	AttemptedAt time.Time // OutboxService: zero means now
	StatusCode  int
	Error       string
	Duration    time.Duration
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
	// The OutboxService sets it from its disable-after setting.
	FailingCutoff time.Time
}

// Claim is what a dispatcher asks of the outbox: due deliveries, leased to
// it, chosen fairly (the service's scheduler: service.Pick).
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
	// Busy counts attempts in flight that hold no lease (the claimer's
	// pings): the scheduler counts them with the leased ones against both
	// bounds.
	Busy []InFlight
}

// DueDelivery is a delivery a claim may take: pending, due by the
// database's clock, not leased. Live says that its subscription is there
// and enabled; a claim fails the pending deliveries of one that is not
// (OutboxStore.LeaseDeliveries).
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

// OutboxService is the dispatcher's side of the transactional outbox.
type OutboxService interface {
	// ClaimTasks leases at most c.Limit due deliveries, chosen fairly
	// across owners and subscriptions within c's bounds, and sets each
	// task's URL and signing secrets. A due delivery whose subscription is
	// disabled or gone is marked failed instead and not returned, so fewer
	// than c.Limit may come back while more are due. Concurrent claims
	// (other processes included) never return the same delivery.
	ClaimTasks(ctx context.Context, c Claim) ([]*Task, error)
	// CompleteTask records an attempt and the delivery's new state, and
	// releases the lease; an attempt that failed may disable the
	// subscription (see AttemptResult.FailingCutoff).
	CompleteTask(ctx context.Context, t *Task, r AttemptResult) error
	// OutboxStats returns how many deliveries are pending and when the
	// oldest of them was created (zero time when none).
	OutboxStats(ctx context.Context) (pending int, oldest time.Time, err error)
	// PruneOutbox deletes at most limit rows of delivery history older
	// than before, as the store's PruneOutbox does, and returns how many.
	PruneOutbox(ctx context.Context, before time.Time, limit int) (int, error)
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
	// LeaseDeliveries leases, in one transaction, each delivery of picked
	// (by MessageID and SubscriptionID) that is still pending, due and
	// unleased, and whose subscription is enabled, until the database's
	// now plus lease, and returns them with their Subscription set; those
	// no longer so are left out. It also marks failed the pending
	// deliveries of each subscription of dead that is gone or disabled.
	// Concurrent leases (other processes included) never return the same
	// delivery.
	LeaseDeliveries(ctx context.Context, picked []DueDelivery, dead []string, lease time.Duration) ([]*Task, error)
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

// NewSubscription makes a subscription for owner with a fresh id and secret
// after checking the URL and description.
func NewSubscription(owner, rawURL, description string, now time.Time) (*Subscription, error) {
	if err := ValidateWebhookURL(rawURL); err != nil {
		return nil, err
	}
	if utf8.RuneCountInString(description) > MaxWebhookDescriptionLength {
		return nil, Errorf(CodeInvalidBody, "invalid NewWebhook: description: must have at most %d characters", MaxWebhookDescriptionLength)
	}
	id, err := NewSubscriptionID(now)
	if err != nil {
		return nil, err
	}
	secret, err := NewWebhookSecret()
	if err != nil {
		return nil, err
	}
	return &Subscription{
		ID:          id,
		Owner:       owner,
		URL:         rawURL,
		Description: description,
		Secret:      secret,
		CreatedAt:   now.UTC(),
	}, nil
}

// NewSubscriptionID returns a fresh subscription id for now: "whk_", 12 hex
// digits of now's Unix milliseconds and 4 random hex digits, so that ids
// sort by creation time (to the millisecond; the service also makes the
// ids it issues increase within one). Ids of one millisecond from two
// processes collide with a probability of 1/65536: the service retries the
// insert with a fresh id.
func NewSubscriptionID(now time.Time) (string, error) {
	var b [2]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("webhook: random: %w", err)
	}
	ms := max(now.UnixMilli(), 0) & (1<<48 - 1)
	return fmt.Sprintf("whk_%012x%s", ms, hex.EncodeToString(b[:])), nil
}

// ValidSubscriptionID reports whether id has the form of a subscription
// id: "whk_" and 16 lower-case hex digits.
func ValidSubscriptionID(id string) bool {
	if len(id) != 20 || !strings.HasPrefix(id, "whk_") {
		return false
	}
	for _, c := range id[4:] {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// NewWebhookSecret returns a Standard Webhooks secret: "whsec_" and the
// base64 of 32 random bytes.
func NewWebhookSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("webhook: random: %w", err)
	}
	return "whsec_" + base64.StdEncoding.EncodeToString(b), nil
}

// NewMessageID returns a webhook-id for a new event.
func NewMessageID() (string, error) {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("webhook: random: %w", err)
	}
	return "msg_" + hex.EncodeToString(b), nil
}

// ValidateWebhookURL accepts an absolute http or https URL with a host and
// no user info. Where it may point (private addresses) is the dispatcher's
// decision at connect time, not this check's.
func ValidateWebhookURL(raw string) error {
	bad := func(why string) error {
		return Errorf(CodeInvalidBody, "invalid NewWebhook: url: %s", why)
	}
	if raw == "" || len(raw) > MaxWebhookURLLength {
		return bad(fmt.Sprintf("must have 1 to %d characters", MaxWebhookURLLength))
	}
	u, err := url.Parse(raw)
	if err != nil {
		return bad("not a URL")
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return bad("must be an absolute http:// or https:// URL")
	case u.Host == "" || u.Hostname() == "":
		return bad("must have a host")
	case u.User != nil:
		return bad("must not carry user info")
	case strings.ContainsAny(raw, " \t\r\n"):
		return bad("must not contain white space")
	}
	return nil
}

// WebhookPayload is the body of the newPlant webhook: the plant as the
// contract's NewPlant, `{"id","name","tag"}` with tag absent when unset,
// encoded in one exactly sized buffer (it is built for every create).
func (p *Plant) WebhookPayload() []byte {
	n := len(`{"id":-9223372036854775808,"name":""}`) + len(p.Name) + len(p.Name)/8
	if p.Tag != nil {
		n += len(`,"tag":""`) + len(*p.Tag) + len(*p.Tag)/8
	}
	var e jx.Encoder
	e.SetBytes(make([]byte, 0, n))
	e.ObjStart()
	e.FieldStart("id")
	e.Int64(p.ID)
	e.FieldStart("name")
	e.Str(p.Name)
	if p.Tag != nil {
		e.FieldStart("tag")
		e.Str(*p.Tag)
	}
	e.ObjEnd()
	return e.Bytes()
}
