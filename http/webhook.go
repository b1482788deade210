package http

import (
	"context"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/http/oapi"
)

// CreateWebhook handles the "POST /webhooks" route: a new subscription, with
// its signing secret shown this once.
func (h *handler) CreateWebhook(ctx context.Context, req *oapi.NewWebhook) (oapi.CreateWebhookRes, error) {
	sub, err := h.s.WebhookService.CreateSubscription(ctx, plantstore.TokenFromContext(ctx).Owner, req.URL.String(), req.Description.Or(""))
	if err != nil {
		return nil, err
	}
	return withSecret(sub), nil
}

// ListWebhooks handles the "GET /webhooks" route.
func (h *handler) ListWebhooks(ctx context.Context) (oapi.ListWebhooksRes, error) {
	subs, err := h.s.WebhookService.FindSubscriptions(ctx, plantstore.TokenFromContext(ctx).Owner)
	if err != nil {
		return nil, err
	}
	out := make(oapi.ListWebhooksOKApplicationJSON, len(subs))
	for i, sub := range subs {
		out[i] = *toAPIWebhook(sub)
	}
	return &out, nil
}

// GetWebhook handles the "GET /webhooks/{id}" route.
func (h *handler) GetWebhook(ctx context.Context, params oapi.GetWebhookParams) (oapi.GetWebhookRes, error) {
	sub, err := h.s.WebhookService.FindSubscriptionByID(ctx, plantstore.TokenFromContext(ctx).Owner, params.ID)
	if err != nil {
		return nil, err
	}
	return toAPIWebhook(sub), nil
}

// DeleteWebhook handles the "DELETE /webhooks/{id}" route.
func (h *handler) DeleteWebhook(ctx context.Context, params oapi.DeleteWebhookParams) (oapi.DeleteWebhookRes, error) {
	if err := h.s.WebhookService.DeleteSubscription(ctx, plantstore.TokenFromContext(ctx).Owner, params.ID); err != nil {
		return nil, err
	}
	return &oapi.DeleteWebhookNoContent{}, nil
}

// RotateWebhookSecret handles the "POST /webhooks/{id}/rotate-secret" route:
// a new secret; the old one keeps signing for plantstore.SecretRotationGrace.
func (h *handler) RotateWebhookSecret(ctx context.Context, params oapi.RotateWebhookSecretParams) (oapi.RotateWebhookSecretRes, error) {
	sub, err := h.s.WebhookService.RotateSecret(ctx, plantstore.TokenFromContext(ctx).Owner, params.ID)
	if err != nil {
		return nil, err
	}
	return withSecret(sub), nil
}

// ListWebhookDeliveries handles the "GET /webhooks/{id}/deliveries" route.
func (h *handler) ListWebhookDeliveries(ctx context.Context, params oapi.ListWebhookDeliveriesParams) (oapi.ListWebhookDeliveriesRes, error) {
	attempts, err := h.s.WebhookService.FindAttempts(ctx, plantstore.TokenFromContext(ctx).Owner, params.ID)
	if err != nil {
		return nil, err
	}
	out := make(oapi.ListWebhookDeliveriesOKApplicationJSON, len(attempts))
	for i, a := range attempts {
		d := oapi.Delivery{
			WebhookID:   a.MessageID,
			PlantID:     oapi.NewOptInt64(a.PlantID),
			Attempt:     int32(a.Attempt),
			AttemptedAt: a.AttemptedAt.UTC(),
			DurationMs:  oapi.NewOptFloat64(float64(a.Duration.Microseconds()) / 1000),
			State:       oapi.DeliveryState(a.State),
		}
		if a.StatusCode != 0 {
			d.StatusCode = oapi.NewOptInt32(int32(a.StatusCode))
		}
		if a.Error != "" {
			d.Error = oapi.NewOptString(a.Error)
		}
		if a.NextAttemptAt != nil {
			d.NextAttemptAt = oapi.NewOptDateTime(a.NextAttemptAt.UTC())
		}
		out[i] = d
	}
	return &out, nil
}

func toAPIWebhook(s *plantstore.Subscription) *oapi.Webhook {
	w := &oapi.Webhook{ID: s.ID, URL: s.URL, CreatedAt: s.CreatedAt.UTC().Truncate(time.Microsecond), Enabled: s.DisabledAt == nil}
	if s.Description != "" {
		w.Description = oapi.NewOptString(s.Description)
	}
	return w
}

func withSecret(s *plantstore.Subscription) *oapi.WebhookWithSecret {
	w := toAPIWebhook(s)
	return &oapi.WebhookWithSecret{ID: w.ID, URL: w.URL, Description: w.Description, CreatedAt: w.CreatedAt, Enabled: w.Enabled, Secret: s.Secret}
}
