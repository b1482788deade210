package service

import (
	"context"
	"errors"
	"time"

	"github.com/plantstore/plantstore"
)

// UpdateSubscription applies a merge patch of url, description and enabled.
// When it re-enables the subscription it returns since when deliveries were
// missed: the start of its failing streak, else when it was disabled.
func (s *WebhookService) UpdateSubscription(ctx context.Context, owner, id string, u plantstore.SubscriptionUpdate) (*plantstore.Subscription, *time.Time, error) {
	if u.URL != nil {
		if err := plantstore.ValidateWebhookURL(*u.URL); err != nil {
			return nil, nil, plantstore.Errorf(plantstore.CodeInvalidBody, "invalid WebhookPatch: %s", trimPrefix(err, "invalid NewWebhook: "))
		}
		if err := s.reachable("WebhookPatch", *u.URL); err != nil {
			return nil, nil, err
		}
	}
	if u.Description != nil && len([]rune(*u.Description)) > plantstore.MaxWebhookDescriptionLength {
		return nil, nil, plantstore.Errorf(plantstore.CodeInvalidBody, "invalid WebhookPatch: description: must have at most %d characters", plantstore.MaxWebhookDescriptionLength)
	}
	if u.Types != nil {
		types, err := plantstore.NormalizeEventTypes(*u.Types)
		if err != nil {
			return nil, nil, plantstore.Errorf(plantstore.CodeInvalidBody, "invalid WebhookPatch: %s", trimPrefix(err, "invalid NewWebhook: "))
		}
		u.Types = &types
	}
	before, after, err := s.store.UpdateSubscription(ctx, owner, id, u, s.now().UTC())
	if err != nil {
		return nil, nil, webhookError("update webhook", id, err)
	}
	var missed *time.Time
	if before.DisabledAt != nil && after.DisabledAt == nil {
		missed = before.DisabledAt
		if before.FailingSince != nil && before.FailingSince.Before(*missed) {
			missed = before.FailingSince
		}
	}
	return after, missed, nil
}

// trimPrefix returns err's message without prefix.
func trimPrefix(err error, prefix string) string {
	msg := err.Error()
	if len(msg) >= len(prefix) && msg[:len(prefix)] == prefix {
		return msg[len(prefix):]
	}
	return msg
}

// enabledSubscription returns the owner's subscription, or a
// CodeWebhookDisabled error when it is disabled.
func (s *WebhookService) enabledSubscription(ctx context.Context, owner, id string) (*plantstore.Subscription, error) {
	sub, err := s.FindSubscriptionByID(ctx, owner, id)
	if err != nil {
		return nil, err
	}
	if sub.DisabledAt != nil {
		return nil, plantstore.Errorf(plantstore.CodeWebhookDisabled,
			`webhook %s is disabled: re-enable it with PATCH /webhooks/{id} {"enabled": true} first`, id)
	}
	return sub, nil
}

// ResendDelivery queues a new attempt of the subscription's delivery
// messageID now, with the same message id.
func (s *WebhookService) ResendDelivery(ctx context.Context, owner, id, messageID string) (*plantstore.Delivery, error) {
	if _, err := s.enabledSubscription(ctx, owner, id); err != nil {
		return nil, err
	}
	d, err := s.store.ResendDelivery(ctx, owner, id, messageID, s.now().UTC())
	if errors.Is(err, plantstore.ErrNotFound) {
		return nil, plantstore.Errorf(plantstore.CodeDeliveryNotFound, "webhook %s has no delivery %s", id, messageID)
	} else if err != nil {
		return nil, storeError("resend webhook delivery", err)
	}
	s.notify()
	return d, nil
}

// RecoverDeliveries re-queues the subscription's failed deliveries created
// at or after since that no recover re-queued yet (since their last resend
// or the subscription's last re-enable), whatever since the earlier recover
// had, in batches of plantstore.RecoverBatch (one transaction each, so that
// writes of others wait for one batch at most), and returns how many. A
// since before 1970 or after now is a CodeInvalidBody error.
func (s *WebhookService) RecoverDeliveries(ctx context.Context, owner, id string, since time.Time) (int64, error) {
	now := s.now().UTC()
	if err := plantstore.CheckSince(since, now); err != nil {
		return 0, plantstore.Errorf(plantstore.CodeInvalidBody, "invalid RecoverRequest: since: %v", err)
	}
	if _, err := s.enabledSubscription(ctx, owner, id); err != nil {
		return 0, err
	}
	var total int64
	for {
		n, err := s.store.RecoverDeliveries(ctx, owner, id, since.UTC(), now, plantstore.RecoverBatch)
		total += int64(n)
		if n > 0 {
			s.notify()
		}
		if err != nil {
			return total, webhookError("recover webhook deliveries", id, err)
		}
		if n < plantstore.RecoverBatch {
			return total, nil
		}
	}
}

// PingSubscription POSTs a signed ping event to the subscription's URL at
// once, through the Pinger, and returns what came of it; nothing is stored.
// A disabled subscription is not pinged (CodeWebhookDisabled, as resend);
// past the attempts in flight the Pinger allows, counting the deliveries
// leased now (read here, OutboxStore.CountLeased), CodeWebhookBusy.
func (s *WebhookService) PingSubscription(ctx context.Context, owner, id string) (*plantstore.PingResult, error) {
	sub, err := s.enabledSubscription(ctx, owner, id)
	if err != nil {
		return nil, err
	}
	if s.ping == nil {
		return nil, errors.New("service: ping webhook: no pinger configured")
	}
	msgID, err := plantstore.NewMessageID()
	if err != nil {
		return nil, err
	}
	now := s.now().UTC()
	t := &plantstore.Task{
		MessageID: msgID, SubscriptionID: sub.ID, Owner: owner, Body: plantstore.BodyPing,
		CreatedAt: now, Subscription: sub, URL: sub.URL, Secrets: sub.SigningSecrets(now),
	}
	leasedSub, leasedOwner, err := s.leases.CountLeased(ctx, owner, sub.ID)
	if err != nil {
		return nil, storeError("count leased deliveries", err)
	}
	r, err := s.ping.Ping(ctx, t, leasedSub, leasedOwner)
	if err != nil {
		return nil, pingError(err)
	}
	return &plantstore.PingResult{MessageID: msgID, AttemptResult: r}, nil
}

// pingError is the service's error for a Pinger's: a domain error (busy)
// as it is, a storage failure as Unavailable, anything else internal.
func pingError(err error) error {
	var domain *plantstore.Error
	if errors.As(err, &domain) {
		return err
	}
	return storeError("ping webhook", err)
}
