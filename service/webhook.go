package service

import (
	"context"
	"errors"
	"time"

	"github.com/plantstore/plantstore"
)

// WebhookService implements plantstore.WebhookService over a WebhookStore.
type WebhookService struct {
	store plantstore.WebhookStore
	now   func() time.Time
}

// CreateSubscription checks url and description and stores a subscription
// with a fresh id and secret.
func (s *WebhookService) CreateSubscription(ctx context.Context, owner, url, description string) (*plantstore.Subscription, error) {
	sub, err := plantstore.NewSubscription(owner, url, description, s.now())
	if err != nil {
		return nil, err
	}
	if err := s.store.InsertSubscription(ctx, sub); err != nil {
		return nil, storeError("create webhook", err)
	}
	return sub, nil
}

// FindSubscriptions returns the owner's subscriptions, oldest first.
func (s *WebhookService) FindSubscriptions(ctx context.Context, owner string) ([]*plantstore.Subscription, error) {
	subs, err := s.store.ListSubscriptions(ctx, owner)
	if err != nil {
		return nil, storeError("find webhooks", err)
	}
	return subs, nil
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
// signing for plantstore.SecretRotationGrace.
func (s *WebhookService) RotateSecret(ctx context.Context, owner, id string) (*plantstore.Subscription, error) {
	secret, err := plantstore.NewWebhookSecret()
	if err != nil {
		return nil, err
	}
	until := s.now().Add(plantstore.SecretRotationGrace).UTC()
	sub, err := s.store.RotateSecret(ctx, owner, id, secret, until)
	if err != nil {
		return nil, webhookError("rotate webhook secret", id, err)
	}
	return sub, nil
}

// FindAttempts returns the subscription's latest attempts, newest first, at
// most plantstore.MaxDeliveriesListed.
func (s *WebhookService) FindAttempts(ctx context.Context, owner, id string) ([]*plantstore.Attempt, error) {
	attempts, err := s.store.ListAttempts(ctx, owner, id, plantstore.MaxDeliveriesListed)
	if err != nil {
		return nil, webhookError("find webhook attempts", id, err)
	}
	return attempts, nil
}

// webhookError is storeError with ErrNotFound as CodeWebhookNotFound.
func webhookError(op, id string, err error) error {
	if errors.Is(err, plantstore.ErrNotFound) {
		return plantstore.Errorf(plantstore.CodeWebhookNotFound, "webhook %s not found", id)
	}
	return storeError(op, err)
}

// OutboxService implements plantstore.OutboxService over an OutboxStore:
// the dispatcher's side of the transactional outbox.
type OutboxService struct {
	store plantstore.OutboxStore
	now   func() time.Time
}

// ClaimTasks leases up to limit due deliveries until now+lease and sets
// each task's URL and the signing secrets valid at now.
func (s *OutboxService) ClaimTasks(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]*plantstore.Task, error) {
	if limit < 1 {
		return nil, nil
	}
	now = now.UTC()
	tasks, err := s.store.ClaimDeliveries(ctx, now, now.Add(lease), limit)
	if err != nil {
		return nil, storeError("claim webhook tasks", err)
	}
	for _, t := range tasks {
		t.URL = t.Subscription.URL
		t.Secrets = t.Subscription.SigningSecrets(now)
	}
	return tasks, nil
}

// CompleteTask records an attempt; a zero r.AttemptedAt means now.
func (s *OutboxService) CompleteTask(ctx context.Context, t *plantstore.Task, r plantstore.AttemptResult) error {
	switch {
	case r.State == plantstore.DeliveryPending && r.NextAttemptAt == nil:
		return errors.New("service: complete webhook task: pending state without a next attempt time")
	case r.State != plantstore.DeliveryPending:
		r.NextAttemptAt = nil
	}
	if r.AttemptedAt.IsZero() {
		r.AttemptedAt = s.now()
	}
	r.AttemptedAt = r.AttemptedAt.UTC()
	if err := s.store.CompleteDelivery(ctx, t, r); err != nil {
		return storeError("complete webhook task", err)
	}
	return nil
}

// OutboxStats returns how many deliveries are pending and when the oldest
// of them was created.
func (s *OutboxService) OutboxStats(ctx context.Context) (int, time.Time, error) {
	n, oldest, err := s.store.OutboxStats(ctx)
	if err != nil {
		return 0, time.Time{}, storeError("outbox stats", err)
	}
	return n, oldest, nil
}
