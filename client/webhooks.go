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
	// Types are the event types of a typed subscription ("plant.created",
	// "plant.updated", "plant.deleted"), each delivered as an Event
	// envelope; empty for an untyped one (bare new plants, creates only).
	Types []string `json:"types,omitempty"`
	// MissedSince is set only by an UpdateWebhook that re-enabled the
	// subscription: pass it to RecoverWebhook to re-queue what failed
	// meanwhile (and read Events for what was not written).
	MissedSince *time.Time `json:"missed_since,omitempty"`
	// Secret is the signing secret (whsec_ and base64), set only by
	// CreateWebhook and RotateWebhookSecret: the server shows it nowhere
	// else.
	Secret string `json:"secret,omitempty"`
}

// NewWebhook is a subscription to create.
type NewWebhook struct {
	URL         string // absolute http:// or https:// URL of the receiver
	Description string // optional, at most 256 characters
	// Types makes the subscription typed: it gets these event types as
	// Event envelopes. Empty: untyped, each new plant as a bare plant.
	Types []string
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
	// ResponseBody is the first 1024 bytes of the receiver's answer.
	ResponseBody string `json:"response_body,omitempty"`
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
	req.Types = eventTypes(w.Types, false)
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

// RotateSecretOptions are the optional parameters of RotateWebhookSecret.
type RotateSecretOptions struct {
	// OldSecretExpiresIn is how long the previous secret keeps signing
	// (whole seconds, at most 7 days); a pointer to 0 stops it now (after a
	// leak). nil: the server's default, 24 hours.
	OldSecretExpiresIn *time.Duration
}

// RotateWebhookSecret gives the subscription id a new signing secret and
// returns the subscription with it. Until the previous secret expires
// (opts.OldSecretExpiresIn, 24 hours by default) the server signs
// deliveries with both the new and the previous secret.
func (c *Client) RotateWebhookSecret(ctx context.Context, id string, opts RotateSecretOptions) (*Webhook, error) {
	ctx, x := withExchange(ctx)
	var req oapi.OptRotateSecret
	if d := opts.OldSecretExpiresIn; d != nil {
		if *d < 0 || *d%time.Second != 0 {
			return nil, fmt.Errorf("client: rotate webhook secret: OldSecretExpiresIn %v: want whole seconds, 0 or more", *d)
		}
		req = oapi.NewOptRotateSecret(oapi.RotateSecret{OldSecretExpiresIn: oapi.NewOptInt64(int64(*d / time.Second))})
	}
	res, err := c.api.RotateWebhookSecret(ctx, req, oapi.RotateWebhookSecretParams{ID: id})
	if err != nil {
		return nil, callError("rotate webhook secret", x, err)
	}
	if r, ok := res.(*oapi.WebhookWithSecretHeaders); ok {
		return fromAPIWithSecret(&r.Response), nil
	}
	return nil, answerError(x, res)
}

// ListDeliveriesOptions selects a page of a subscription's delivery
// attempts. The zero value asks for the first page (the latest attempts) of
// every state at the server's default page size.
type ListDeliveriesOptions struct {
	Limit int    // page size, 1..1000; 0 for the server's default (100)
	After string // the cursor of the next page, as DeliveryPage.Next gives it (opaque)
	// State keeps only the attempts after which the delivery was in this
	// state: "pending", "succeeded" or "failed" ("" for all).
	State string
}

// DeliveryPage is one page of delivery attempts. Next is the query of the
// following page, taken from the answer's Link header; nil on the last page.
type DeliveryPage struct {
	Deliveries []Delivery
	Next       *ListDeliveriesOptions
}

// ListWebhookDeliveries returns one page of the delivery attempts of the
// subscription id, the latest first, and the query of the next page from
// the Link header. An unknown id is an *Error with Code 40403.
func (c *Client) ListWebhookDeliveries(ctx context.Context, id string, opts ListDeliveriesOptions) (*DeliveryPage, error) {
	ctx, x := withExchange(ctx)
	params := oapi.ListWebhookDeliveriesParams{ID: id}
	if opts.Limit != 0 {
		params.Limit = oapi.NewOptInt32(int32(opts.Limit))
	}
	if opts.After != "" {
		params.After = oapi.NewOptString(opts.After)
	}
	if opts.State != "" {
		params.State = oapi.NewOptDeliveriesState(oapi.DeliveriesState(opts.State))
	}
	res, err := c.api.ListWebhookDeliveries(ctx, params)
	if err != nil {
		return nil, callError("list webhook deliveries", x, err)
	}
	r, ok := res.(*oapi.ListWebhookDeliveriesOKHeaders)
	if !ok {
		return nil, answerError(x, res)
	}
	page := &DeliveryPage{Deliveries: make([]Delivery, len(r.Response))}
	for i, d := range r.Response {
		out := Delivery{
			MessageID:    d.WebhookID,
			Attempt:      int(d.Attempt),
			AttemptedAt:  d.AttemptedAt,
			StatusCode:   int(d.StatusCode.Or(0)),
			Error:        d.Error.Or(""),
			DurationMS:   d.DurationMs.Or(0),
			ResponseBody: d.ResponseBody.Or(""),
			State:        string(d.State),
		}
		if v, ok := d.PlantID.Get(); ok {
			out.PlantID = &v
		}
		if v, ok := d.NextAttemptAt.Get(); ok {
			out.NextAttemptAt = &v
		}
		page.Deliveries[i] = out
	}
	if link, has := r.Link.Get(); has {
		q, err := nextQuery(x.url, link)
		if err != nil {
			return nil, fmt.Errorf("client: list webhook deliveries: %w", err)
		}
		if q != nil {
			next := &ListDeliveriesOptions{After: q.Get("after"), State: q.Get("state")}
			if next.Limit, err = limitParam(q); err != nil {
				return nil, fmt.Errorf("client: list webhook deliveries: %w", err)
			}
			page.Next = next
		}
	}
	return page, nil
}

// WebhookDeliveries iterates over the delivery attempts of the
// subscription id that opts selects, the latest first, following each
// answer's Link rel="next" until there is none; breaking out of the loop
// stops the requests. An error ends the iteration after it is yielded.
func (c *Client) WebhookDeliveries(ctx context.Context, id string, opts ListDeliveriesOptions) iter.Seq2[Delivery, error] {
	return paginate(opts, func(o ListDeliveriesOptions) ([]Delivery, *ListDeliveriesOptions, error) {
		page, err := c.ListWebhookDeliveries(ctx, id, o)
		if err != nil {
			return nil, nil, err
		}
		if n := page.Next; n != nil && (n.After == "" || n.After == o.After) {
			return nil, nil, errors.New("client: list webhook deliveries: next link does not advance past after=" + o.After)
		}
		return page.Deliveries, page.Next, nil
	})
}

// ListWebhooks returns one page of the owner's subscriptions, by id
// ascending, and the query of the next page from the Link header.
func (c *Client) ListWebhooks(ctx context.Context, opts ListWebhooksOptions) (*WebhookPage, error) {
	ctx, x := withExchange(ctx)
	res, err := c.api.ListWebhooks(ctx, opts.params())
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

// params are the query parameters of opts (HEAD /webhooks takes the same).
func (opts ListWebhooksOptions) params() oapi.ListWebhooksParams {
	var params oapi.ListWebhooksParams
	if opts.Limit != 0 {
		params.Limit = oapi.NewOptInt32(int32(opts.Limit))
	}
	if opts.After != "" {
		params.After = oapi.NewOptString(opts.After)
	}
	return params
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
	if t, ok := w.MissedSince.Get(); ok {
		out.MissedSince = &t
	}
	for _, t := range w.Types {
		out.Types = append(out.Types, string(t))
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
		Types:       w.Types,
		MissedSince: w.MissedSince,
	})
	out.DisabledReason = string(w.DisabledReason.Or(""))
	out.Secret = w.Secret
	return out
}
