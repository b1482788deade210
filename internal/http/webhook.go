package http

import (
	"context"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/http/oapi"
)

// CreateWebhook handles the "POST /webhooks" route: a new subscription, with
// its signing secret shown this once.
func (h *handler) CreateWebhook(ctx context.Context, req *oapi.NewWebhook) (oapi.CreateWebhookRes, error) {
	types := make([]string, len(req.Types))
	for i, t := range req.Types {
		types[i] = string(t)
	}
	sub, err := h.s.WebhookService.CreateSubscription(ctx, plantstore.TokenFromContext(ctx).Owner, req.URL.String(), req.Description.Or(""), types...)
	if err != nil {
		return nil, err
	}
	return &oapi.WebhookWithSecretHeaders{Response: *withSecret(sub)}, nil
}

// ListWebhooks handles the "GET /webhooks" route: one keyset page by id,
// with a Link header to the next page when more subscriptions follow.
func (h *handler) ListWebhooks(ctx context.Context, params oapi.ListWebhooksParams) (oapi.ListWebhooksRes, error) {
	f := plantstore.SubscriptionFilter{
		Owner: plantstore.TokenFromContext(ctx).Owner,
		Limit: int(params.Limit.Or(plantstore.DefaultPageSize)),
	}
	if after, ok := params.After.Get(); ok {
		f.After = &after
	}
	subs, more, err := h.s.WebhookService.FindSubscriptions(ctx, f)
	if err != nil {
		return nil, err
	}
	res := &oapi.ListWebhooksOKHeaders{Response: make([]oapi.Webhook, len(subs))}
	for i, sub := range subs {
		res.Response[i] = *toAPIWebhook(sub)
	}
	if more && len(subs) > 0 {
		res.Link = oapi.NewOptString(pageLink("/webhooks", nil, subs[len(subs)-1].ID, f.Limit))
	}
	return res, nil
}

// GetWebhook handles the "GET /webhooks/{id}" route.
func (h *handler) GetWebhook(ctx context.Context, params oapi.GetWebhookParams) (oapi.GetWebhookRes, error) {
	sub, err := h.s.WebhookService.FindSubscriptionByID(ctx, plantstore.TokenFromContext(ctx).Owner, params.ID)
	if err != nil {
		return nil, err
	}
	return &oapi.WebhookHeaders{Response: *toAPIWebhook(sub)}, nil
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
// With old_secret_expires_in, the old one signs for that many seconds.
func (h *handler) RotateWebhookSecret(ctx context.Context, req oapi.OptRotateSecret, params oapi.RotateWebhookSecretParams) (oapi.RotateWebhookSecretRes, error) {
	var expiresIn *time.Duration
	if body, ok := req.Get(); ok {
		if secs, ok := body.OldSecretExpiresIn.Get(); ok {
			d := time.Duration(secs) * time.Second // 0..604800 (the contract)
			expiresIn = &d
		}
	}
	sub, err := h.s.WebhookService.RotateSecret(ctx, plantstore.TokenFromContext(ctx).Owner, params.ID, expiresIn)
	if err != nil {
		return nil, err
	}
	return &oapi.WebhookWithSecretHeaders{Response: *withSecret(sub)}, nil
}

// HeadWebhooks handles the "HEAD /webhooks" route: the headers of "GET
// /webhooks" (the Link to the next page), without a body.
func (h *handler) HeadWebhooks(ctx context.Context, params oapi.HeadWebhooksParams) (oapi.HeadWebhooksRes, error) {
	res, err := h.ListWebhooks(ctx, oapi.ListWebhooksParams(params))
	if err != nil {
		return nil, err
	}
	return &oapi.HeadWebhooksOK{Link: res.(*oapi.ListWebhooksOKHeaders).Link}, nil
}

// HeadWebhook handles the "HEAD /webhooks/{id}" route.
func (h *handler) HeadWebhook(ctx context.Context, params oapi.HeadWebhookParams) (oapi.HeadWebhookRes, error) {
	if _, err := h.s.WebhookService.FindSubscriptionByID(ctx, plantstore.TokenFromContext(ctx).Owner, params.ID); err != nil {
		return nil, err
	}
	return &oapi.HeadWebhookOK{}, nil
}

// toAPIWebhook maps a subscription to the contract's Webhook: disabled_at
// and disabled_reason only once it is disabled.
func toAPIWebhook(s *plantstore.Subscription) *oapi.Webhook {
	w := &oapi.Webhook{ID: s.ID, URL: s.URL, CreatedAt: s.CreatedAt.UTC().Truncate(time.Microsecond), Enabled: s.DisabledAt == nil}
	if s.Description != "" {
		w.Description = oapi.NewOptString(s.Description)
	}
	for _, t := range s.Types {
		w.Types = append(w.Types, oapi.EventType(t))
	}
	if s.DisabledAt != nil {
		w.DisabledAt = oapi.NewOptDateTime(s.DisabledAt.UTC().Truncate(time.Microsecond))
		if s.DisabledReason != "" {
			w.DisabledReason = oapi.NewOptWebhookDisabledReason(oapi.WebhookDisabledReason(s.DisabledReason))
		}
	}
	return w
}

func withSecret(s *plantstore.Subscription) *oapi.WebhookWithSecret {
	w := toAPIWebhook(s)
	out := &oapi.WebhookWithSecret{ID: w.ID, URL: w.URL, Description: w.Description, CreatedAt: w.CreatedAt, Enabled: w.Enabled,
		DisabledAt: w.DisabledAt, Types: w.Types, Secret: s.Secret}
	if reason, ok := w.DisabledReason.Get(); ok {
		out.DisabledReason = oapi.NewOptWebhookWithSecretDisabledReason(oapi.WebhookWithSecretDisabledReason(reason))
	}
	return out
}
