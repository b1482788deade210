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
)

// ScopeWebhooksManage grants the subscription API (/webhooks).
const ScopeWebhooksManage = "webhooks:manage"

// Limits of a subscription.
const (
	MaxWebhookURLLength         = 2048
	MaxWebhookDescriptionLength = 256
	SecretRotationGrace         = 24 * time.Hour // the previous secret signs this long after a rotation
	// MaxDeliveriesListed bounds GET /webhooks/{id}/deliveries.
	MaxDeliveriesListed = 100
	// DefaultMaxSubscriptions is an owner's cap unless the server sets one
	// (at most MaxMaxSubscriptions). Disabled subscriptions count too, so
	// the cap also bounds the outbox rows one write makes.
	DefaultMaxSubscriptions = 16
	MaxMaxSubscriptions     = 1000
)

// Subscription is a webhook subscription: the owner's events it takes are
// POSTed to URL, signed with Secret (and PreviousSecret until
// PreviousSecretUntil). Secrets are stored as they are: signing needs them.
type Subscription struct {
	ID                  string // "whk_" + 16 hex digits (NewSubscription: time-ordered)
	Owner               string
	URL                 string
	Description         string
	Secret              string // "whsec_" + base64 of 32 random bytes
	PreviousSecret      string
	PreviousSecretUntil *time.Time
	CreatedAt           time.Time
	DisabledAt          *time.Time     // nil while enabled; a disabled subscription gets no deliveries
	DisabledReason      DisabledReason // "" while enabled
	// FailingSince is the first failed attempt after the last success (nil
	// while the receiver answers); failing long enough disables it.
	FailingSince *time.Time
	// Types are the event types a typed subscription takes (in EventTypes'
	// order), delivered as the PlantEvent envelope; nil: untyped, creates
	// only, with the NewPlant body. Stored as Mask(Types).
	Types []string
}

// Takes reports whether s takes events of type t.
func (s *Subscription) Takes(t string) bool { return Mask(s.Types).Takes(t) }

// DisabledReason says why a subscription was disabled.
type DisabledReason string

// Reasons to disable a subscription.
const (
	DisabledGone    DisabledReason = "gone"    // a receiver answered 410 Gone
	DisabledFailing DisabledReason = "failing" // every attempt failed for too long (AttemptResult.FailingCutoff)
)

// SigningSecrets returns the secrets that sign a delivery at now.
func (s *Subscription) SigningSecrets(now time.Time) []string {
	secrets := []string{s.Secret}
	if s.PreviousSecret != "" && s.PreviousSecretUntil != nil && now.Before(*s.PreviousSecretUntil) {
		secrets = append(secrets, s.PreviousSecret)
	}
	return secrets
}

// SubscriptionFilter selects a page of an owner's subscriptions, by id.
type SubscriptionFilter struct {
	Owner string
	After *string // only ids after this one (exclusive)
	Limit int     // page size, 1..MaxPageSize (WebhookService: 0 means DefaultPageSize)
}

// WebhookService manages an owner's webhook subscriptions; errors a client
// may see are *Error values.
type WebhookService interface {
	// CreateSubscription stores a new subscription (typed with types,
	// NormalizeEventTypes), or CodeTooManyWebhooks past the owner's cap.
	CreateSubscription(ctx context.Context, owner, url, description string, types ...string) (*Subscription, error)
	// FindSubscriptions returns a page of the owner's subscriptions by id
	// (creation order) and whether more follow.
	FindSubscriptions(ctx context.Context, f SubscriptionFilter) ([]*Subscription, bool, error)
	// FindSubscriptionByID returns one, or a CodeWebhookNotFound error.
	FindSubscriptionByID(ctx context.Context, owner, id string) (*Subscription, error)
	// DeleteSubscription deletes it with its deliveries and attempts, or
	// returns a CodeWebhookNotFound error.
	DeleteSubscription(ctx context.Context, owner, id string) error
	// RotateSecret gives the subscription a new signing secret; the old one
	// keeps signing for oldExpiresIn (nil: SecretRotationGrace).
	RotateSecret(ctx context.Context, owner, id string, oldExpiresIn *time.Duration) (*Subscription, error)
	// FindAttempts returns a page of the attempt log, newest first, and
	// whether more follow, or CodeWebhookNotFound.
	FindAttempts(ctx context.Context, f AttemptFilter) ([]*Attempt, bool, error)
	// UpdateSubscription applies a merge patch; a re-enable clears the
	// failing streak and also returns since when deliveries were missed.
	UpdateSubscription(ctx context.Context, owner, id string, u SubscriptionUpdate) (*Subscription, *time.Time, error)
	// ResendDelivery queues a new attempt of one delivery now
	// (CodeDeliveryNotFound, CodeWebhookDisabled).
	ResendDelivery(ctx context.Context, owner, id, messageID string) (*Delivery, error)
	// RecoverDeliveries re-queues the failed deliveries created at or after
	// since that no recover re-queued since their last resend or re-enable,
	// and returns how many (CheckSince; CodeWebhookDisabled).
	RecoverDeliveries(ctx context.Context, owner, id string, since time.Time) (int64, error)
	// PingSubscription POSTs a signed ping to the subscription at once.
	PingSubscription(ctx context.Context, owner, id string) (*PingResult, error)
}

// WebhookStore is a backend's subscriptions: rows in, rows out, sentinel errors.
type WebhookStore interface {
	// InsertSubscription stores s, or returns ErrExists (its id taken) or
	// ErrLimit (s.Owner has max). The count and the insert are atomic:
	// concurrent inserts never pass max.
	InsertSubscription(ctx context.Context, s *Subscription, max int) error
	// ListSubscriptions returns at most f.Limit of the owner's
	// subscriptions after f.After, by id.
	ListSubscriptions(ctx context.Context, f SubscriptionFilter) ([]*Subscription, error)
	// FindSubscription returns the owner's subscription or ErrNotFound.
	FindSubscription(ctx context.Context, owner, id string) (*Subscription, error)
	// DeleteSubscription deletes the owner's subscription with its
	// deliveries and attempts in one transaction, or returns ErrNotFound.
	DeleteSubscription(ctx context.Context, owner, id string) error
	// RotateSecret makes secret the signing secret, the current one the
	// previous until previousUntil, or returns ErrNotFound.
	RotateSecret(ctx context.Context, owner, id, secret string, previousUntil time.Time) (*Subscription, error)
	// ListAttempts returns at most f.Limit attempts after f.After, newest
	// first (AttemptFilter), or ErrNotFound.
	ListAttempts(ctx context.Context, f AttemptFilter) ([]*Attempt, error)
	// UpdateSubscription applies u as of now (a disable fails the pending
	// deliveries; an enable clears the disabled state, FailingSince and
	// every delivery's recovered mark), or returns ErrNotFound.
	UpdateSubscription(ctx context.Context, owner, id string, u SubscriptionUpdate, now time.Time) (before, after *Subscription, err error)
	// ResendDelivery makes delivery messageID pending and due at now,
	// whatever its state (a lease is kept), clearing its recovered mark;
	// ErrNotFound when there is none.
	ResendDelivery(ctx context.Context, owner, id, messageID string, now time.Time) (*Delivery, error)
	// RecoverDeliveries makes at most limit failed deliveries created at or
	// after since and not marked recovered pending, due and marked at now,
	// and returns how many, or ErrNotFound.
	RecoverDeliveries(ctx context.Context, owner, id string, since, now time.Time, limit int) (int, error)
}

// NewSubscription checks the URL and description and makes a subscription.
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

// NewSubscriptionID returns "whk_", 12 hex digits of now's Unix milliseconds
// and 4 random ones, so that ids sort by creation time. Two processes' ids of
// one millisecond collide once in 65536: the service retries the insert.
func NewSubscriptionID(now time.Time) (string, error) {
	var b [2]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("webhook: random: %w", err)
	}
	ms := max(now.UnixMilli(), 0) & (1<<48 - 1)
	return fmt.Sprintf("whk_%012x%s", ms, hex.EncodeToString(b[:])), nil
}

// ValidSubscriptionID reports whether id is "whk_" and 16 lower-case hex digits.
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

// ValidateWebhookURL accepts an absolute http or https URL with a host and
// no user info; where it may point is decided at connect time.
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
