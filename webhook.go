package plantstore

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
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

// WebhookService stores subscriptions. Every method is scoped to one owner.
type WebhookService interface {
	// CreateSubscription stores s (ID, Secret, Owner, URL set by the caller).
	CreateSubscription(ctx context.Context, s *Subscription) error
	// FindSubscriptions returns the owner's subscriptions, oldest first.
	FindSubscriptions(ctx context.Context, owner string) ([]*Subscription, error)
	// FindSubscriptionByID returns one, or a CodeWebhookNotFound error.
	FindSubscriptionByID(ctx context.Context, owner, id string) (*Subscription, error)
	// DeleteSubscription deletes it and its pending deliveries, or returns
	// a CodeWebhookNotFound error.
	DeleteSubscription(ctx context.Context, owner, id string) error
	// RotateSecret makes secret the signing secret and keeps the old one
	// signing until previousUntil; it returns the updated subscription.
	RotateSecret(ctx context.Context, owner, id, secret string, previousUntil time.Time) (*Subscription, error)
	// FindAttempts returns the subscription's latest attempts, newest
	// first, at most limit; a CodeWebhookNotFound error if it is not the
	// owner's.
	FindAttempts(ctx context.Context, owner, id string, limit int) ([]*Attempt, error)
}

// Task is one pending delivery handed to a dispatcher: the event's payload
// for one subscription, claimed under a lease.
type Task struct {
	MessageID      string // webhook-id: the same on every attempt
	SubscriptionID string
	Owner          string
	PlantID        int64
	Payload        []byte // the NewPlant JSON
	URL            string
	Secrets        []string // signing secrets valid now
	Attempts       int      // attempts made before this one
	CreatedAt      time.Time
}

// AttemptResult is what one delivery attempt came to.
type AttemptResult struct {
	AttemptedAt time.Time
	StatusCode  int
	Error       string
	Duration    time.Duration
	// Outcome: succeeded, failed (give up), or pending with NextAttemptAt.
	State         DeliveryState
	NextAttemptAt *time.Time
	// Disable marks the subscription disabled (the receiver answered 410).
	Disable bool
}

// OutboxService is the dispatcher's side of the transactional outbox: the
// deliveries written in the same transaction as their plant.
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
// contract's NewPlant, `{"id","name","tag"}` with tag absent when unset.
func (p *Plant) WebhookPayload() []byte {
	var b strings.Builder
	b.WriteString(`{"id":`)
	b.WriteString(fmt.Sprint(p.ID))
	b.WriteString(`,"name":`)
	b.Write(jsonString(p.Name))
	if p.Tag != nil {
		b.WriteString(`,"tag":`)
		b.Write(jsonString(*p.Tag))
	}
	b.WriteByte('}')
	return []byte(b.String())
}

func jsonString(s string) []byte {
	out, _ := json.Marshal(s) // a string always marshals
	return out
}
