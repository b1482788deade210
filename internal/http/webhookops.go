package http

import (
	"context"
	"net/url"
	"strconv"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/http/oapi"
)

// ListWebhookDeliveries handles the "GET /webhooks/{id}/deliveries" route:
// one page of the attempt log, newest first, with a Link header to the next
// page when more attempts follow.
func (h *handler) ListWebhookDeliveries(ctx context.Context, params oapi.ListWebhookDeliveriesParams) (oapi.ListWebhookDeliveriesRes, error) {
	attempts, link, err := h.findAttempts(ctx, params)
	if err != nil {
		return nil, err
	}
	out := make([]oapi.Delivery, len(attempts))
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
		if a.ResponseBody != "" {
			d.ResponseBody = oapi.NewOptString(a.ResponseBody)
		}
		if a.NextAttemptAt != nil {
			d.NextAttemptAt = oapi.NewOptDateTime(a.NextAttemptAt.UTC())
		}
		out[i] = d
	}
	return &oapi.ListWebhookDeliveriesOKHeaders{Response: out, Link: link}, nil
}

// HeadWebhookDeliveries handles the "HEAD /webhooks/{id}/deliveries" route.
func (h *handler) HeadWebhookDeliveries(ctx context.Context, params oapi.HeadWebhookDeliveriesParams) (oapi.HeadWebhookDeliveriesRes, error) {
	_, link, err := h.findAttempts(ctx, oapi.ListWebhookDeliveriesParams(params))
	if err != nil {
		return nil, err
	}
	return &oapi.HeadWebhookDeliveriesOK{Link: link}, nil
}

// findAttempts reads one page of the attempt log and its next Link.
func (h *handler) findAttempts(ctx context.Context, params oapi.ListWebhookDeliveriesParams) ([]*plantstore.Attempt, oapi.OptString, error) {
	f := plantstore.AttemptFilter{
		Owner:          plantstore.TokenFromContext(ctx).Owner,
		SubscriptionID: params.ID,
		Limit:          int(params.Limit.Or(plantstore.DefaultPageSize)),
		State:          plantstore.DeliveryState(params.State.Or("")),
	}
	if after, ok := params.After.Get(); ok {
		c, err := plantstore.ParseAttemptCursor(after)
		if err != nil {
			return nil, oapi.OptString{}, err
		}
		f.After = &c
	}
	attempts, more, err := h.s.WebhookService.FindAttempts(ctx, f)
	if err != nil {
		return nil, oapi.OptString{}, err
	}
	var link oapi.OptString
	if more && len(attempts) > 0 {
		q := url.Values{}
		q.Set("after", attempts[len(attempts)-1].Cursor().String())
		q.Set("limit", strconv.Itoa(f.Limit))
		if f.State != "" {
			q.Set("state", string(f.State))
		}
		link = oapi.NewOptString("</webhooks/" + url.PathEscape(params.ID) + "/deliveries?" + q.Encode() + `>; rel="next"`)
	}
	return attempts, link, nil
}

// UpdateWebhook handles the "PATCH /webhooks/{id}" route: a merge patch of
// url, description and enabled; the answer to a re-enable carries
// missed_since.
func (h *handler) UpdateWebhook(ctx context.Context, req oapi.UpdateWebhookReq, params oapi.UpdateWebhookParams) (oapi.UpdateWebhookRes, error) {
	var p oapi.WebhookPatch
	switch r := req.(type) {
	case *oapi.UpdateWebhookApplicationJSON:
		p = oapi.WebhookPatch(*r)
	case *oapi.UpdateWebhookApplicationMergePatchJSON:
		p = oapi.WebhookPatch(*r)
	}
	var u plantstore.SubscriptionUpdate
	if v, ok := p.URL.Get(); ok {
		s := v.String()
		u.URL = &s
	}
	if p.Description.Set {
		d := ""
		if !p.Description.Null {
			d = p.Description.Value
		}
		u.Description = &d
	}
	if v, ok := p.Enabled.Get(); ok {
		u.Enabled = &v
	}
	if p.Types != nil { // present: [] makes the subscription untyped
		types := make([]string, len(p.Types))
		for i, t := range p.Types {
			types[i] = string(t)
		}
		u.Types = &types
	}
	sub, missed, err := h.s.WebhookService.UpdateSubscription(ctx, plantstore.TokenFromContext(ctx).Owner, params.ID, u)
	if err != nil {
		return nil, err
	}
	w := toAPIWebhook(sub)
	if missed != nil {
		w.MissedSince = oapi.NewOptDateTime(missed.UTC().Truncate(time.Microsecond))
	}
	return &oapi.WebhookHeaders{Response: *w}, nil
}

// ResendWebhookDelivery handles the "POST
// /webhooks/{id}/deliveries/{delivery_id}/resend" route: a new attempt of one
// delivery, now, by the dispatcher.
func (h *handler) ResendWebhookDelivery(ctx context.Context, params oapi.ResendWebhookDeliveryParams) (oapi.ResendWebhookDeliveryRes, error) {
	d, err := h.s.WebhookService.ResendDelivery(ctx, plantstore.TokenFromContext(ctx).Owner, params.ID, params.DeliveryID)
	if err != nil {
		return nil, err
	}
	h.s.metrics.resends.WithLabelValues("resend").Inc()
	out := oapi.QueuedDelivery{
		WebhookID: d.MessageID,
		PlantID:   oapi.NewOptInt64(d.PlantID),
		State:     oapi.QueuedDeliveryState(d.State),
		Attempts:  int32(d.Attempts),
		CreatedAt: d.CreatedAt.UTC().Truncate(time.Microsecond),
	}
	if d.NextAttemptAt != nil {
		out.NextAttemptAt = oapi.NewOptDateTime(d.NextAttemptAt.UTC().Truncate(time.Microsecond))
	}
	return &oapi.QueuedDeliveryHeaders{Response: out}, nil
}

// RecoverWebhook handles the "POST /webhooks/{id}/recover" route: the failed
// deliveries created since the time (an RFC 3339 time or a duration before
// now) are queued again, each once.
func (h *handler) RecoverWebhook(ctx context.Context, req *oapi.RecoverRequest, params oapi.RecoverWebhookParams) (oapi.RecoverWebhookRes, error) {
	since, err := plantstore.ParseSince(req.Since, h.s.Now())
	if err != nil {
		return nil, plantstore.Errorf(plantstore.CodeInvalidBody, "invalid RecoverRequest: since: %v", err)
	}
	// The answer's date-time goes out to the second: the since used is cut
	// to it, so the answer says which one was used (cutting can only take in
	// more deliveries).
	since = since.UTC().Truncate(time.Second)
	n, err := h.s.WebhookService.RecoverDeliveries(ctx, plantstore.TokenFromContext(ctx).Owner, params.ID, since)
	if n > 0 {
		h.s.metrics.resends.WithLabelValues("recover").Add(float64(n))
	}
	if err != nil {
		return nil, err
	}
	return &oapi.RecoveryHeaders{Response: oapi.Recovery{Since: since, Requeued: n}}, nil
}

// PingWebhook handles the "POST /webhooks/{id}/ping" route: a signed ping
// POSTed at once, its outcome answered.
func (h *handler) PingWebhook(ctx context.Context, params oapi.PingWebhookParams) (oapi.PingWebhookRes, error) {
	r, err := h.s.WebhookService.PingSubscription(ctx, plantstore.TokenFromContext(ctx).Owner, params.ID)
	if err != nil {
		return nil, err
	}
	out := oapi.PingResult{
		WebhookID:  r.MessageID,
		Succeeded:  r.StatusCode >= 200 && r.StatusCode < 300,
		DurationMs: float64(r.Duration.Microseconds()) / 1000,
	}
	if r.StatusCode != 0 {
		out.StatusCode = oapi.NewOptInt32(int32(r.StatusCode))
	}
	if r.Error != "" {
		out.Error = oapi.NewOptString(r.Error)
	}
	if r.ResponseBody != "" {
		out.ResponseBody = oapi.NewOptString(r.ResponseBody)
	}
	return &oapi.PingResultHeaders{Response: out}, nil
}
