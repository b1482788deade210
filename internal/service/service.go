// Package service implements the plantstore services once, over any
// backend's row stores: validation, page limits, the replay/conflict
// decision and its messages, events (their id, type and time: the store
// writes the plant's facts with them), token and subscription issuance and
// rotation, token checks with their cache, and one injected clock for every
// timestamp. It owns every webhook scheduling decision: what to claim
// (Pick), the in-flight bounds of deliveries and pings, retries and their
// backoff; the Dispatcher runs that loop and has a Sender (internal/sender)
// make each request. One Notifier, told after each commit, wakes the
// Dispatcher and the event streams. It imports the root package and two
// small helpers (internal/outage, internal/prune); the row stores it calls
// (plantstore.PlantStore, ...) hold nothing but storage code.
package service

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	"github.com/plantstore/plantstore"
)

// Config holds what the services share.
type Config struct {
	// Now is the clock of every timestamp the services set (creation,
	// revocation, rotation, attempts); nil: time.Now.
	Now func() time.Time
	// TokenCacheTTL is how long a verified token is trusted without a
	// storage lookup, and so the bound on how late a revocation takes
	// effect; zero turns the cache off (revocation is then immediate).
	TokenCacheTTL time.Duration
	// OnTokenCache, if set, is told the result of each token cache lookup
	// (hit: no storage lookup) while the cache is on.
	OnTokenCache func(hit bool)
	// MaxTokensPerOwner bounds each owner's live tokens (neither revoked
	// nor expired) that MintToken leaves it: the token API's mints (0:
	// plantstore.DefaultMaxTokensPerOwner). CreateToken, the operator's,
	// is not bound.
	MaxTokensPerOwner int
	// MaxSubscriptions bounds each owner's webhook subscriptions, disabled
	// ones included (0: plantstore.DefaultMaxSubscriptions).
	MaxSubscriptions int
	// WebhookDisableAfter disables a subscription whose delivery attempts
	// have all failed for longer than this, at its next failed attempt (0:
	// never; a 410 still disables it).
	WebhookDisableAfter time.Duration
	// Sender makes the requests of the deliveries (the Dispatcher's) and
	// of POST /webhooks/{id}/ping, and judges subscription URLs (POST
	// /webhooks, PATCH /webhooks/{id} with a url): one it could never reach
	// is refused with 400 40002. nil: every URL ValidateWebhookURL accepts,
	// pings fail with an internal error and NewDispatcher fails.
	Sender Sender
	// Delivery configures the deliveries and the pings (their in-flight
	// bounds, attempt timeout, schedule).
	Delivery DeliveryConfig
	// OnEvent, if set, is told the type of every event written, after its
	// commit (the events-written counter).
	OnEvent func(typ string)
}

// Services are the services over one backend.
type Services struct {
	Plants   *PlantService
	Tokens   *TokenService
	Webhooks *WebhookService
	Outbox   *OutboxService
	Events   *EventService
	// Notifier is told after every commit that wrote events or
	// deliveries: it wakes the Dispatcher and the event streams
	// (plantstore.EventNotifier).
	Notifier *Notifier

	now      func() time.Time
	sender   Sender
	delivery DeliveryConfig // with its defaults
	pings    *pingTable     // shared by the pings and the Dispatcher's claims
}

// Stores is what New needs of a backend: its row stores.
type Stores interface {
	plantstore.PlantStore
	plantstore.TokenStore
	plantstore.WebhookStore
	plantstore.OutboxStore
	plantstore.EventStore
}

// New returns the services over b's row stores.
func New(b Stores, c Config) *Services {
	now := c.Now
	if now == nil {
		now = time.Now
	}
	notifier := newNotifier()
	delivery := c.Delivery.withDefaults()
	pings := new(pingTable)
	return &Services{
		Events:   &EventService{store: b, now: now},
		Notifier: notifier,
		Plants:   &PlantService{store: b, now: now, notifier: notifier, onEvent: c.OnEvent},
		Tokens: &TokenService{store: b, now: now, ttl: c.TokenCacheTTL, onCache: c.OnTokenCache,
			maxPerOwner: cmp.Or(c.MaxTokensPerOwner, plantstore.DefaultMaxTokensPerOwner)},
		Webhooks: &WebhookService{store: b, now: now, max: cmp.Or(c.MaxSubscriptions, plantstore.DefaultMaxSubscriptions),
			leases: b, notifier: notifier, sender: c.Sender, delivery: delivery, pings: pings},
		Outbox: &OutboxService{store: b, now: now, disableAfter: c.WebhookDisableAfter},

		now: now, sender: c.Sender, delivery: delivery, pings: pings,
	}
}

// Compile-time checks that the services implement the root interfaces.
var (
	_ plantstore.PlantService   = (*PlantService)(nil)
	_ plantstore.TokenService   = (*TokenService)(nil)
	_ plantstore.WebhookService = (*WebhookService)(nil)
	_ Queue                     = (*OutboxService)(nil)
	_ plantstore.EventService   = (*EventService)(nil)
)

// Unavailable returns the error a client gets when the storage cannot
// serve: for an err that is (or wraps) plantstore.ErrUnavailable, a
// CodeStorageUnavailable *plantstore.Error (503) that keeps err as its
// cause, for the log; any other err unchanged. The services map every row
// store error through it; cmd/ maps the backend's own calls (Open, Migrate)
// with it too.
func Unavailable(err error) error {
	var domain *plantstore.Error
	if !errors.Is(err, plantstore.ErrUnavailable) || errors.As(err, &domain) {
		return err
	}
	return &plantstore.Error{Code: plantstore.CodeStorageUnavailable, Message: "storage is not available; retry later", Err: err}
}

// storeError turns a row store's error into the service's: ErrUnavailable
// as Unavailable does; anything else is internal (500), with op for context.
func storeError(op string, err error) error {
	if errors.Is(err, plantstore.ErrUnavailable) {
		return Unavailable(err)
	}
	return fmt.Errorf("service: %s: %w", op, err)
}
