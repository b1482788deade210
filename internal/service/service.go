// Package service implements the plantstore services once, over any
// backend's row stores: validation, page limits, the replay/conflict
// decision and its messages, events (their id, type and time: the store
// writes the plant's facts with them) and waking the dispatcher after their
// commit, the claim scheduler (Pick), token and subscription issuance and
// rotation, token checks with their cache, and one injected clock for every
// timestamp. It imports only the root package; the row stores it calls
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
	// Notifier, if set, is told after a commit that wrote webhook
	// deliveries (not after a create whose owner has no subscription), and
	// after a resend or recover: it wakes the dispatcher (webhook.Wake).
	Notifier plantstore.Notifier
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
	// Pinger makes the attempt of POST /webhooks/{id}/ping (webhook.Pinger:
	// the deliveries' client and in-flight bounds), given the deliveries
	// leased now, which the service counts; nil: pings fail with an
	// internal error.
	Pinger plantstore.Pinger
	// CheckWebhookURL, if set, refuses a subscription URL (POST /webhooks,
	// PATCH /webhooks/{id} with a url) that deliveries could never reach,
	// with an error whose message says why in a phrase that follows "url: "
	// in the 400 (40002). cmd wires webhook.CheckURL, or webhook.CheckHost
	// (hosts that are neither an address nor a name only) with
	// --webhook-allow-private; nil: every URL ValidateWebhookURL accepts.
	CheckWebhookURL func(url string) error
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
	// Events lists the events; Notifier wakes in-process waiters (the SSE
	// stream) after every commit that wrote events (plantstore.EventNotifier).
	Events   *EventService
	Notifier *Broadcaster
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
	notify := func() {}
	if c.Notifier != nil {
		notify = c.Notifier.Notify
	}
	events := NewBroadcaster()
	return &Services{
		Events:   &EventService{store: b, now: now},
		Notifier: events,
		Plants:   &PlantService{store: b, now: now, notify: notify, events: events, onEvent: c.OnEvent},
		Tokens: &TokenService{store: b, now: now, ttl: c.TokenCacheTTL, onCache: c.OnTokenCache,
			maxPerOwner: cmp.Or(c.MaxTokensPerOwner, plantstore.DefaultMaxTokensPerOwner)},
		Webhooks: &WebhookService{store: b, now: now, max: cmp.Or(c.MaxSubscriptions, plantstore.DefaultMaxSubscriptions), ping: c.Pinger, leases: b, notify: notify,
			checkURL: c.CheckWebhookURL},
		Outbox: &OutboxService{store: b, now: now, disableAfter: c.WebhookDisableAfter},
	}
}

// Compile-time checks that the services implement the root interfaces.
var (
	_ plantstore.PlantService   = (*PlantService)(nil)
	_ plantstore.TokenService   = (*TokenService)(nil)
	_ plantstore.WebhookService = (*WebhookService)(nil)
	_ plantstore.OutboxService  = (*OutboxService)(nil)
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
