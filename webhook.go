package plantstore

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/url"
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
)

// Subscription is a webhook subscription: every plant its owner creates is
// POSTed to URL, signed with Secret (and PreviousSecret until
// PreviousSecretUntil, after a rotation). Secrets are stored as they are:
// signing needs them (as with Stripe's and Svix's endpoint secrets).
type Subscription struct {
	ID                  string // "whk_" + 16 hex digits
	Owner               string
	URL                 string
	Description         string
	Secret              string // "whsec_" + base64 of 32 random bytes
	PreviousSecret      string
	PreviousSecretUntil *time.Time
	CreatedAt           time.Time
	DisabledAt          *time.Time // set when a receiver answered 410
}

// SigningSecrets returns the secrets that sign a delivery at now.
func (s *Subscription) SigningSecrets(now time.Time) []string {
	secrets := []string{s.Secret}
	if s.PreviousSecret != "" && s.PreviousSecretUntil != nil && now.Before(*s.PreviousSecretUntil) {
		secrets = append(secrets, s.PreviousSecret)
	}
	return secrets
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
	State          DeliveryState // the delivery's state after this attempt
	NextAttemptAt  *time.Time    // pending only
	SubscriptionID string
}

// WebhookService manages an owner's webhook subscriptions. Every method is
// scoped to one owner; errors a client may see are *Error values.
type WebhookService interface {
	// CreateSubscription checks the URL and description and stores a new
	// subscription with a fresh id and signing secret.
	CreateSubscription(ctx context.Context, owner, url, description string) (*Subscription, error)
	// FindSubscriptions returns the owner's subscriptions, oldest first.
	FindSubscriptions(ctx context.Context, owner string) ([]*Subscription, error)
	// FindSubscriptionByID returns one, or a CodeWebhookNotFound error.
	FindSubscriptionByID(ctx context.Context, owner, id string) (*Subscription, error)
	// DeleteSubscription deletes it with its deliveries and attempts, or
	// returns a CodeWebhookNotFound error.
	DeleteSubscription(ctx context.Context, owner, id string) error
	// RotateSecret gives the subscription a new signing secret; the old one
	// keeps signing for SecretRotationGrace. It returns the subscription.
	RotateSecret(ctx context.Context, owner, id string) (*Subscription, error)
	// FindAttempts returns the subscription's latest delivery attempts,
	// newest first, at most MaxDeliveriesListed, or a CodeWebhookNotFound
	// error.
	FindAttempts(ctx context.Context, owner, id string) ([]*Attempt, error)
}

// WebhookStore is a backend's subscriptions: rows in, rows out, sentinel
// errors.
type WebhookStore interface {
	// InsertSubscription stores s, or returns ErrExists when its id is taken.
	InsertSubscription(ctx context.Context, s *Subscription) error
	// ListSubscriptions returns the owner's subscriptions, oldest first.
	ListSubscriptions(ctx context.Context, owner string) ([]*Subscription, error)
	// FindSubscription returns the owner's subscription or ErrNotFound.
	FindSubscription(ctx context.Context, owner, id string) (*Subscription, error)
	// DeleteSubscription deletes the owner's subscription with its
	// deliveries and attempts in one transaction, or returns ErrNotFound.
	DeleteSubscription(ctx context.Context, owner, id string) error
	// RotateSecret makes secret the signing secret and keeps the current
	// one as the previous secret until previousUntil; it returns the updated
	// subscription or ErrNotFound.
	RotateSecret(ctx context.Context, owner, id, secret string, previousUntil time.Time) (*Subscription, error)
	// ListAttempts returns the subscription's latest attempts, newest
	// first, at most limit, or ErrNotFound when the subscription is not the
	// owner's.
	ListAttempts(ctx context.Context, owner, id string, limit int) ([]*Attempt, error)
}

// Event is a webhook event, written to the outbox in the transaction of the
// change it reports: one delivery row per enabled subscription of the owner.
type Event struct {
	MessageID string // the webhook-id header: the same on every attempt
	PlantID   int64
	Payload   []byte // the body POSTed to receivers
	CreatedAt time.Time
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
	// Outcome: succeeded, failed (give up), or pending with NextAttemptAt.
	State         DeliveryState
	NextAttemptAt *time.Time
	// Disable marks the subscription disabled (the receiver answered 410),
	// as of AttemptedAt, and fails its other pending deliveries.
	Disable bool
}

// OutboxService is the dispatcher's side of the transactional outbox.
type OutboxService interface {
	// ClaimTasks leases up to limit due deliveries (next attempt at or
	// before now, not leased by another dispatcher) until now+lease.
	ClaimTasks(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]*Task, error)
	// CompleteTask records an attempt and the delivery's new state, and
	// releases the lease.
	CompleteTask(ctx context.Context, t *Task, r AttemptResult) error
	// OutboxStats returns how many deliveries are pending and when the
	// oldest of them was created (zero time when none).
	OutboxStats(ctx context.Context) (pending int, oldest time.Time, err error)
}

// OutboxStore is a backend's outbox: the deliveries written with their
// plants, and the attempts made.
type OutboxStore interface {
	// ClaimDeliveries leases up to limit due deliveries (state pending,
	// next attempt at or before now, no lease or an expired one) until
	// leaseUntil, the earliest next attempt first, and returns them with
	// their Subscription set. A due delivery whose subscription is disabled
	// or gone is marked failed instead and not returned, so fewer than
	// limit may come back while more are due. Concurrent claims (other
	// processes included) never return the same delivery.
	ClaimDeliveries(ctx context.Context, now, leaseUntil time.Time, limit int) ([]*Task, error)
	// CompleteDelivery records attempt r of t (r.AttemptedAt set), sets the
	// delivery's state and releases its lease; with r.Disable it also
	// disables the subscription and fails its other pending deliveries. A
	// delivery no longer pending (completed, or deleted with its
	// subscription) is left alone: no error.
	CompleteDelivery(ctx context.Context, t *Task, r AttemptResult) error
	// OutboxStats returns how many deliveries are pending and when the
	// oldest of them was created (zero time when none).
	OutboxStats(ctx context.Context) (pending int, oldest time.Time, err error)
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
	id := make([]byte, 8)
	if _, err := rand.Read(id); err != nil {
		return nil, fmt.Errorf("webhook: random: %w", err)
	}
	secret, err := NewWebhookSecret()
	if err != nil {
		return nil, err
	}
	return &Subscription{
		ID:          "whk_" + hex.EncodeToString(id),
		Owner:       owner,
		URL:         rawURL,
		Description: description,
		Secret:      secret,
		CreatedAt:   now.UTC(),
	}, nil
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
