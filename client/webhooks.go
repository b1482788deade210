package client

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/url"
	"time"

	"github.com/plantstore/plantstore/client/oapi"
)

// Webhook is a subscription: the server POSTs each new plant of the token's
// owner to URL, signed the Standard Webhooks way.
type Webhook struct {
	ID          string    `json:"id"` // whk_ and 16 hex digits
	URL         string    `json:"url"`
	Description string    `json:"description,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	// Enabled is false once the receiver answered 410 (DisabledReason
	// "gone") or its deliveries failed for days ("failing").
	Enabled        bool       `json:"enabled"`
	DisabledAt     *time.Time `json:"disabled_at,omitempty"`
	DisabledReason string     `json:"disabled_reason,omitempty"`
	// Secret is the signing secret (whsec_ and base64), set only by
	// CreateWebhook and RotateWebhookSecret: the server shows it nowhere
	// else.
	Secret string `json:"secret,omitempty"`
}

// NewWebhook is a subscription to create.
type NewWebhook struct {
	URL         string // absolute http:// or https:// URL of the receiver
	Description string // optional, at most 256 characters
}

// ListWebhooksOptions selects a page of subscriptions. The zero value asks
// for the first page at the server's default page size.
type ListWebhooksOptions struct {
	Limit int    // page size, 1..1000; 0 for the server's default (100)
	After string // only subscriptions whose id sorts after this one (the cursor)
}

// WebhookPage is one page of subscriptions. Next is the query of the
// following page, taken from the answer's Link header; nil on the last page.
type WebhookPage struct {
	Webhooks []Webhook
	Next     *ListWebhooksOptions
}

// Delivery is one delivery attempt of a subscription.
type Delivery struct {
	// MessageID is the message id sent as the webhook-id header, the same
	// on every attempt of one delivery.
	MessageID   string    `json:"webhook_id"`
	PlantID     *int64    `json:"plant_id,omitempty"`
	Attempt     int       `json:"attempt"` // 1 for the first
	AttemptedAt time.Time `json:"attempted_at"`
	// StatusCode is the receiver's HTTP status; 0 when no answer came, and
	// Error says why.
	StatusCode int     `json:"status_code,omitempty"`
	Error      string  `json:"error,omitempty"`
	DurationMS float64 `json:"duration_ms,omitempty"`
	// State is the delivery's state after this attempt: "pending",
	// "succeeded" or "failed".
	State string `json:"state"`
	// NextAttemptAt is when the next retry is due (pending only).
	NextAttemptAt *time.Time `json:"next_attempt_at,omitempty"`
}

// CreateWebhook subscribes w.URL to the new plants of the token's owner and
// returns the subscription with its signing secret. The token needs the
// webhooks:manage scope; an owner with as many subscriptions as allowed
// gets an *Error with Code 40902.
func (c *Client) CreateWebhook(ctx context.Context, w NewWebhook) (*Webhook, error) {
	u, err := url.Parse(w.URL)
	if err != nil {
		return nil, fmt.Errorf("client: create webhook: url: %w", err)
	}
	ctx, x := withExchange(ctx)
	req := &oapi.NewWebhook{URL: *u}
	if w.Description != "" {
		req.Description = oapi.NewOptString(w.Description)
	}
	res, err := c.api.CreateWebhook(ctx, req)
	if err != nil {
		return nil, callError("create webhook", x, err)
	}
	if r, ok := res.(*oapi.WebhookWithSecretHeaders); ok {
		return fromAPIWithSecret(&r.Response), nil
	}
	return nil, answerError(x, res)
}

// GetWebhook returns the subscription id (without its secret); an unknown
// id is an *Error with Code 40403.
func (c *Client) GetWebhook(ctx context.Context, id string) (*Webhook, error) {
	ctx, x := withExchange(ctx)
	res, err := c.api.GetWebhook(ctx, oapi.GetWebhookParams{ID: id})
	if err != nil {
		return nil, callError("get webhook", x, err)
	}
	if r, ok := res.(*oapi.WebhookHeaders); ok {
		return fromAPIWebhook(&r.Response), nil
	}
	return nil, answerError(x, res)
}

// DeleteWebhook deletes the subscription id, pending retries included; an
// unknown id is an *Error with Code 40403.
func (c *Client) DeleteWebhook(ctx context.Context, id string) error {
	ctx, x := withExchange(ctx)
	res, err := c.api.DeleteWebhook(ctx, oapi.DeleteWebhookParams{ID: id})
	if err != nil {
		return callError("delete webhook", x, err)
	}
	if _, ok := res.(*oapi.DeleteWebhookNoContent); ok {
		return nil
	}
	return answerError(x, res)
}

// RotateWebhookSecret gives the subscription id a new signing secret and
// returns the subscription with it. For 24 hours the server signs
// deliveries with both the new and the previous secret.
func (c *Client) RotateWebhookSecret(ctx context.Context, id string) (*Webhook, error) {
	ctx, x := withExchange(ctx)
	res, err := c.api.RotateWebhookSecret(ctx, oapi.RotateWebhookSecretParams{ID: id})
	if err != nil {
		return nil, callError("rotate webhook secret", x, err)
	}
	if r, ok := res.(*oapi.WebhookWithSecretHeaders); ok {
		return fromAPIWithSecret(&r.Response), nil
	}
	return nil, answerError(x, res)
}

// ListWebhookDeliveries returns the recent delivery attempts of the
// subscription id, the latest first (at most 100: the list has no pages).
func (c *Client) ListWebhookDeliveries(ctx context.Context, id string) ([]Delivery, error) {
	ctx, x := withExchange(ctx)
	res, err := c.api.ListWebhookDeliveries(ctx, oapi.ListWebhookDeliveriesParams{ID: id})
	if err != nil {
		return nil, callError("list webhook deliveries", x, err)
	}
	r, ok := res.(*oapi.ListWebhookDeliveriesOKHeaders)
	if !ok {
		return nil, answerError(x, res)
	}
	out := make([]Delivery, len(r.Response))
	for i, d := range r.Response {
		out[i] = Delivery{
			MessageID:   d.WebhookID,
			Attempt:     int(d.Attempt),
			AttemptedAt: d.AttemptedAt,
			StatusCode:  int(d.StatusCode.Or(0)),
			Error:       d.Error.Or(""),
			DurationMS:  d.DurationMs.Or(0),
			State:       string(d.State),
		}
		if v, ok := d.PlantID.Get(); ok {
			out[i].PlantID = &v
		}
		if v, ok := d.NextAttemptAt.Get(); ok {
			out[i].NextAttemptAt = &v
		}
	}
	return out, nil
}

// ListWebhooks returns one page of the owner's subscriptions, by id
// ascending, and the query of the next page from the Link header.
func (c *Client) ListWebhooks(ctx context.Context, opts ListWebhooksOptions) (*WebhookPage, error) {
	ctx, x := withExchange(ctx)
	params := oapi.ListWebhooksParams{}
	if opts.Limit != 0 {
		params.Limit = oapi.NewOptInt32(int32(opts.Limit))
	}
	if opts.After != "" {
		params.After = oapi.NewOptString(opts.After)
	}
	res, err := c.api.ListWebhooks(ctx, params)
	if err != nil {
		return nil, callError("list webhooks", x, err)
	}
	r, ok := res.(*oapi.ListWebhooksOKHeaders)
	if !ok {
		return nil, answerError(x, res)
	}
	page := &WebhookPage{Webhooks: make([]Webhook, len(r.Response))}
	for i := range r.Response {
		page.Webhooks[i] = *fromAPIWebhook(&r.Response[i])
	}
	if link, has := r.Link.Get(); has {
		q, err := nextQuery(x.url, link)
		if err != nil {
			return nil, fmt.Errorf("client: list webhooks: %w", err)
		}
		if q != nil {
			next := &ListWebhooksOptions{After: q.Get("after")}
			if next.Limit, err = limitParam(q); err != nil {
				return nil, fmt.Errorf("client: list webhooks: %w", err)
			}
			page.Next = next
		}
	}
	return page, nil
}

// Webhooks iterates over the owner's subscriptions from opts.After on,
// requesting page after page by following each answer's Link rel="next"
// until there is none; breaking out of the loop stops the requests. An
// error ends the iteration after it is yielded.
func (c *Client) Webhooks(ctx context.Context, opts ListWebhooksOptions) iter.Seq2[Webhook, error] {
	return paginate(opts, func(o ListWebhooksOptions) ([]Webhook, *ListWebhooksOptions, error) {
		page, err := c.ListWebhooks(ctx, o)
		if err != nil {
			return nil, nil, err
		}
		if n := page.Next; n != nil && n.After <= o.After {
			return nil, nil, errors.New("client: list webhooks: next link does not advance past after=" + o.After)
		}
		return page.Webhooks, page.Next, nil
	})
}

func fromAPIWebhook(w *oapi.Webhook) *Webhook {
	out := &Webhook{
		ID:             w.ID,
		URL:            w.URL,
		Description:    w.Description.Or(""),
		CreatedAt:      w.CreatedAt,
		Enabled:        w.Enabled,
		DisabledReason: string(w.DisabledReason.Or("")),
	}
	if t, ok := w.DisabledAt.Get(); ok {
		out.DisabledAt = &t
	}
	return out
}

func fromAPIWithSecret(w *oapi.WebhookWithSecret) *Webhook {
	out := fromAPIWebhook(&oapi.Webhook{
		ID:          w.ID,
		URL:         w.URL,
		Description: w.Description,
		CreatedAt:   w.CreatedAt,
		Enabled:     w.Enabled,
		DisabledAt:  w.DisabledAt,
	})
	out.DisabledReason = string(w.DisabledReason.Or(""))
	out.Secret = w.Secret
	return out
}
