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
	// the NewPlant body. The row stores keep them as Mask(Types).
	Types []string
}

// Takes reports whether s takes events of type t: a typed subscription the
// types it names, an untyped one creates (EventMask).
func (s *Subscription) Takes(t string) bool { return Mask(s.Types).Takes(t) }

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
