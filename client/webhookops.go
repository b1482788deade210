package client

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/plantstore/plantstore/client/oapi"
)

// WebhookPatch is a change of a subscription: each set field is changed,
// the others keep their value. A zero WebhookPatch changes nothing.
type WebhookPatch struct {
	URL         *string // the new receiver, an absolute http:// or https:// URL
	Description *string // the new description; a pointer to "" clears it
	// Enabled false disables the subscription (reason "manual"); true
	// re-enables a disabled one, whatever disabled it, and the answer's
	// MissedSince says since when deliveries were missed.
	Enabled *bool
	// Types makes the subscription receive these event types from now on;
	// nil keeps them. Untyped (which excludes Types) makes it untyped.
	Types   []string
	Untyped bool
}

// UpdateWebhook changes the subscription id as patch says (a JSON merge
// patch) and returns it as changed. An unknown id is an *Error with Code
// 40403, an invalid field one with Code 40002.
func (c *Client) UpdateWebhook(ctx context.Context, id string, patch WebhookPatch) (*Webhook, error) {
	if patch.Untyped && patch.Types != nil {
		return nil, errors.New("client: update webhook: WebhookPatch with both Types and Untyped")
	}
	req := oapi.UpdateWebhookApplicationMergePatchJSON{}
	if patch.URL != nil {
		u, err := url.Parse(*patch.URL)
		if err != nil {
			return nil, fmt.Errorf("client: update webhook: url: %w", err)
		}
		req.URL = oapi.NewOptURI(*u)
	}
	if patch.Description != nil {
		req.Description = oapi.NewOptNilString(*patch.Description)
	}
	if patch.Enabled != nil {
		req.Enabled = oapi.NewOptBool(*patch.Enabled)
	}
	req.Types = eventTypes(patch.Types, patch.Untyped)
	ctx, x := withExchange(ctx)
	res, err := c.api.UpdateWebhook(ctx, &req, oapi.UpdateWebhookParams{ID: id})
	if err != nil {
		return nil, callError("update webhook", x, err)
	}
	if r, ok := res.(*oapi.WebhookHeaders); ok {
		return fromAPIWebhook(&r.Response), nil
	}
	return nil, answerError(x, res)
}

// eventTypes is the contract's list of types; nil (the member left out)
// unless types has some or empty asks for [] (untyped).
func eventTypes(types []string, empty bool) []oapi.EventType {
	if len(types) == 0 && !empty {
		return nil
	}
	out := make([]oapi.EventType, 0, len(types))
	for _, t := range types {
		out = append(out, oapi.EventType(t))
	}
	return out
}

// QueuedDelivery is one delivery (one message to one subscription) and
// its state, as ResendDelivery answers it.
type QueuedDelivery struct {
	MessageID     string     `json:"webhook_id"` // the webhook-id header, the delivery's id
	PlantID       *int64     `json:"plant_id,omitempty"`
	State         string     `json:"state"`    // "pending", "succeeded" or "failed"
	Attempts      int        `json:"attempts"` // attempts made so far
	CreatedAt     time.Time  `json:"created_at"`
	NextAttemptAt *time.Time `json:"next_attempt_at,omitempty"` // pending only
}

// ResendDelivery queues a new attempt, now, of the delivery deliveryID
// (the MessageID of its attempts, msg_...) of the subscription id, whatever
// its state; the dispatcher makes it in the background (its outcome shows
// in ListWebhookDeliveries). An unknown delivery is an *Error with Code
// 40404, a disabled subscription one with Code 40903.
func (c *Client) ResendDelivery(ctx context.Context, id, deliveryID string) (*QueuedDelivery, error) {
	ctx, x := withExchange(ctx)
	res, err := c.api.ResendWebhookDelivery(ctx, oapi.ResendWebhookDeliveryParams{ID: id, DeliveryID: deliveryID})
	if err != nil {
		return nil, callError("resend webhook delivery", x, err)
	}
	r, ok := res.(*oapi.QueuedDeliveryHeaders)
	if !ok {
		return nil, answerError(x, res)
	}
	d := r.Response
	out := &QueuedDelivery{MessageID: d.WebhookID, State: string(d.State), Attempts: int(d.Attempts), CreatedAt: d.CreatedAt}
	if v, ok := d.PlantID.Get(); ok {
		out.PlantID = &v
	}
	if v, ok := d.NextAttemptAt.Get(); ok {
		out.NextAttemptAt = &v
	}
	return out, nil
}

// Recovery is the answer of RecoverWebhook.
type Recovery struct {
	Since time.Time `json:"since"`
	// Requeued is how many failed deliveries this call re-queued (0 when
	// earlier recovers re-queued them all).
	Requeued int64 `json:"requeued"`
}

// RecoverWebhook re-queues every delivery of the subscription id that
// failed and was created at or after since; the dispatcher attempts them
// in the background. Each failed delivery is re-queued by a recover once:
// calling it again, with any since, re-queues nothing more, until the
// delivery is resent or the subscription re-enabled. The server cuts since
// to the second, which can only take in more deliveries, and
// Recovery.Since says which second was used. A since in the future or
// before 1970 is an *Error with Code 40002; a disabled subscription one
// with Code 40903 (re-enable it with UpdateWebhook first).
func (c *Client) RecoverWebhook(ctx context.Context, id string, since time.Time) (*Recovery, error) {
	return c.RecoverWebhookSince(ctx, id, since.Format(time.RFC3339Nano))
}

// RecoverWebhookSince is RecoverWebhook with since as the contract takes
// it: an RFC 3339 time, or a duration before now ("24h") that the server
// resolves with its own clock.
func (c *Client) RecoverWebhookSince(ctx context.Context, id, since string) (*Recovery, error) {
	ctx, x := withExchange(ctx)
	res, err := c.api.RecoverWebhook(ctx, &oapi.RecoverRequest{Since: since}, oapi.RecoverWebhookParams{ID: id})
	if err != nil {
		return nil, callError("recover webhook", x, err)
	}
	if r, ok := res.(*oapi.RecoveryHeaders); ok {
		return &Recovery{Since: r.Response.Since, Requeued: r.Response.Requeued}, nil
	}
	return nil, answerError(x, res)
}

// PingResult is what came of a ping.
type PingResult struct {
	MessageID  string  `json:"webhook_id"` // the ping's webhook-id
	Succeeded  bool    `json:"succeeded"`  // the receiver answered 2xx
	StatusCode int     `json:"status_code,omitempty"`
	Error      string  `json:"error,omitempty"` // why no answer came
	DurationMS float64 `json:"duration_ms"`
	// ResponseBody is the first 1024 bytes of the receiver's answer.
	ResponseBody string `json:"response_body,omitempty"`
}

// PingWebhook makes the server POST a signed ping event to the
// subscription id at once (a disabled one too) and returns what came of
// it; a receiver that failed is not an error: Succeeded is false.
func (c *Client) PingWebhook(ctx context.Context, id string) (*PingResult, error) {
	ctx, x := withExchange(ctx)
	res, err := c.api.PingWebhook(ctx, oapi.PingWebhookParams{ID: id})
	if err != nil {
		return nil, callError("ping webhook", x, err)
	}
	r, ok := res.(*oapi.PingResultHeaders)
	if !ok {
		return nil, answerError(x, res)
	}
	p := r.Response
	return &PingResult{
		MessageID:    p.WebhookID,
		Succeeded:    p.Succeeded,
		StatusCode:   int(p.StatusCode.Or(0)),
		Error:        p.Error.Or(""),
		DurationMS:   p.DurationMs,
		ResponseBody: p.ResponseBody.Or(""),
	}, nil
}
