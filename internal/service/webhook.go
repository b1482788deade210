package service

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/plantstore/plantstore"
)

// WebhookService implements plantstore.WebhookService over a WebhookStore.
type WebhookService struct {
	store    plantstore.WebhookStore
	now      func() time.Time
	max      int                    // subscriptions per owner
	leases   plantstore.OutboxStore // CountLeased, for a ping's bounds
	notifier *Notifier              // wakes the Dispatcher after a resend or recover
	// sender makes the pings and judges URLs (Config.Sender); nil: no
	// pings, every URL accepted.
	sender   Sender
	delivery DeliveryConfig // a ping's bounds and timeout
	pings    *pingTable

	mu   sync.Mutex
	last uint64 // the last id issued, as a number: ids of one process increase
}

// idTries bounds the inserts of a new subscription whose fresh id was taken
// (ids two processes issue in one millisecond collide with a probability of
// 1/65536).
const idTries = 4

// CreateSubscription checks url and description and stores a subscription
// with a fresh id and secret, unless the owner has as many as allowed
// (CodeTooManyWebhooks). An id that happens to be taken is drawn again.
func (s *WebhookService) CreateSubscription(ctx context.Context, owner, url, description string, types ...string) (*plantstore.Subscription, error) {
	sub, err := plantstore.NewSubscription(owner, url, description, s.now())
	if err != nil {
		return nil, err
	}
	if err := s.reachable("NewWebhook", url); err != nil {
		return nil, err
	}
	if sub.Types, err = plantstore.NormalizeEventTypes(types); err != nil {
		return nil, err
	}
	for try := 1; ; try++ {
		if sub.ID, err = s.newID(sub.CreatedAt); err != nil {
			return nil, err
		}
		err = s.store.InsertSubscription(ctx, sub, s.max)
		if !errors.Is(err, plantstore.ErrExists) || try == idTries {
			break
		}
	}
	switch {
	case errors.Is(err, plantstore.ErrLimit):
		return nil, &plantstore.Error{Code: plantstore.CodeTooManyWebhooks, Err: err,
			Message: fmt.Sprintf("the owner has %d webhook subscriptions, the most allowed: delete one first", s.max)}
	case err != nil:
		return nil, storeError("create webhook", err)
	}
	return sub, nil
}

// reachable refuses (400 40002, in the schema's name) a URL that
// deliveries could never reach, as the sender says.
func (s *WebhookService) reachable(schema, url string) error {
	if s.sender == nil {
		return nil
	}
	if err := s.sender.CheckURL(url); err != nil {
		return &plantstore.Error{Code: plantstore.CodeInvalidBody, Err: err,
			Message: fmt.Sprintf("invalid %s: url: %v", schema, err)}
	}
	return nil
}

// newID returns a fresh subscription id for a subscription created at now
// (plantstore.NewSubscriptionID): within the millisecond of the last id
// this service issued, the next id is past it (the last one plus one, as
// monotonic ULIDs do), so that ids sort by creation time even within a
// millisecond. (A clock that steps back gives ids that sort by the times
// it gave.)
func (s *WebhookService) newID(now time.Time) (string, error) {
	id, err := plantstore.NewSubscriptionID(now)
	if err != nil {
		return "", err
	}
	v, err := strconv.ParseUint(id[len("whk_"):], 16, 64)
	if err != nil {
		return "", fmt.Errorf("service: webhook id %q: %w", id, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	const millis = 16 // the bits below the milliseconds
	if v>>millis == s.last>>millis && v <= s.last {
		v = s.last + 1
	}
	s.last = v
	return fmt.Sprintf("whk_%016x", v), nil
}

// FindSubscriptions returns one page of the owner's subscriptions by id
// ascending and whether another page follows (it asks the store for one row
// more).
func (s *WebhookService) FindSubscriptions(ctx context.Context, f plantstore.SubscriptionFilter) ([]*plantstore.Subscription, bool, error) {
	if f.Limit == 0 {
		f.Limit = plantstore.DefaultPageSize
	}
	if f.Limit < 1 || f.Limit > plantstore.MaxPageSize {
		return nil, false, plantstore.Errorf(plantstore.CodeInvalidQuery, "limit must be from 1 to %d", plantstore.MaxPageSize)
	}
	if f.After != nil && !plantstore.ValidSubscriptionID(*f.After) {
		return nil, false, plantstore.Errorf(plantstore.CodeInvalidQuery, "after must be a webhook id (whk_ and 16 hex digits)")
	}
	want := f.Limit
	f.Limit++
	subs, err := s.store.ListSubscriptions(ctx, f)
	if err != nil {
		return nil, false, storeError("find webhooks", err)
	}
	if len(subs) > want {
		return subs[:want], true, nil
	}
	return subs, false, nil
}

// FindSubscriptionByID returns the owner's subscription id.
func (s *WebhookService) FindSubscriptionByID(ctx context.Context, owner, id string) (*plantstore.Subscription, error) {
	sub, err := s.store.FindSubscription(ctx, owner, id)
	if err != nil {
		return nil, webhookError("find webhook", id, err)
	}
	return sub, nil
}

// DeleteSubscription deletes the owner's subscription id with its
// deliveries and attempts.
func (s *WebhookService) DeleteSubscription(ctx context.Context, owner, id string) error {
	if err := s.store.DeleteSubscription(ctx, owner, id); err != nil {
		return webhookError("delete webhook", id, err)
	}
	return nil
}

// RotateSecret gives the subscription a fresh secret; the current one keeps
// signing for oldExpiresIn (nil: plantstore.SecretRotationGrace, 0: not at
// all, at most plantstore.MaxOldSecretExpiry).
func (s *WebhookService) RotateSecret(ctx context.Context, owner, id string, oldExpiresIn *time.Duration) (*plantstore.Subscription, error) {
	grace := plantstore.SecretRotationGrace
	if oldExpiresIn != nil {
		grace = *oldExpiresIn
	}
	if grace < 0 || grace > plantstore.MaxOldSecretExpiry {
		return nil, plantstore.Errorf(plantstore.CodeInvalidBody, "invalid RotateSecret: old_secret_expires_in: must be from 0 to %d seconds", int64(plantstore.MaxOldSecretExpiry/time.Second))
	}
	secret, err := plantstore.NewWebhookSecret()
	if err != nil {
		return nil, err
	}
	until := s.now().Add(grace).UTC()
	sub, err := s.store.RotateSecret(ctx, owner, id, secret, until)
	if err != nil {
		return nil, webhookError("rotate webhook secret", id, err)
	}
	return sub, nil
}

// FindAttempts returns one page of the subscription's attempt log, newest
// first, and whether another page follows (it asks the store for one row
// more).
func (s *WebhookService) FindAttempts(ctx context.Context, f plantstore.AttemptFilter) ([]*plantstore.Attempt, bool, error) {
	if f.Limit == 0 {
		f.Limit = plantstore.DefaultPageSize
	}
	if f.Limit < 1 || f.Limit > plantstore.MaxPageSize {
		return nil, false, plantstore.Errorf(plantstore.CodeInvalidQuery, "limit must be from 1 to %d", plantstore.MaxPageSize)
	}
	switch f.State {
	case "", plantstore.DeliveryPending, plantstore.DeliverySucceeded, plantstore.DeliveryFailed:
	default:
		return nil, false, plantstore.Errorf(plantstore.CodeInvalidQuery, "state must be pending, succeeded or failed")
	}
	want := f.Limit
	f.Limit++
	attempts, err := s.store.ListAttempts(ctx, f)
	if err != nil {
		return nil, false, webhookError("find webhook attempts", f.SubscriptionID, err)
	}
	if len(attempts) > want {
		return attempts[:want], true, nil
	}
	return attempts, false, nil
}

// webhookError is storeError with ErrNotFound as CodeWebhookNotFound.
func webhookError(op, id string, err error) error {
	if errors.Is(err, plantstore.ErrNotFound) {
		return plantstore.Errorf(plantstore.CodeWebhookNotFound, "webhook %s not found", id)
	}
	return storeError(op, err)
}
