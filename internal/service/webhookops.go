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
	s.notifier.deliveriesDue()
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
			s.notifier.deliveriesDue()
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
// once, through the Sender, and returns what came of it; nothing is
// stored. A disabled subscription is not pinged (CodeWebhookDisabled, as
// resend). A ping counts against the bounds of deliveries
// (DeliveryConfig.MaxInFlight and MaxInFlightPerOwner): when the
// deliveries leased now to the subscription (resp. the owner, over every
// replica: OutboxStore.CountLeased) plus this process's pings in flight to
// it reach the bound, nothing is sent and the answer is CodeWebhookBusy,
// whose RetryAfter is the attempt timeout (by then every attempt in flight
// now has ended).
func (s *WebhookService) PingSubscription(ctx context.Context, owner, id string) (*plantstore.PingResult, error) {
	sub, err := s.enabledSubscription(ctx, owner, id)
	if err != nil {
		return nil, err
	}
	if s.sender == nil {
		return nil, errors.New("service: ping webhook: no sender configured")
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
	c := s.delivery
	retry := (c.AttemptTimeout + time.Second - 1).Truncate(time.Second)
	release, err := s.pings.acquire(sub.ID, owner, leasedSub, leasedOwner, c.MaxInFlight, c.MaxInFlightPerOwner, retry)
	if err != nil {
		return nil, err
	}
	defer release()
	actx, cancel := context.WithTimeout(ctx, c.AttemptTimeout)
	defer cancel()
	r := s.sender.Send(actx, t)
	if r.Cause != nil {
		// The answer names the kind of failure only; the cause, which may
		// name the address the host resolved to or the server's name
		// servers, is for the operator.
		c.Logger.Info("webhook: ping failed", "subscription_id", t.SubscriptionID, "message_id", t.MessageID,
			"error", r.Error, "err", r.Cause, "duration", r.Duration)
	}
	return &plantstore.PingResult{MessageID: msgID, SendResult: r}, nil
}
