package client

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/plantstore/plantstore/client/oapi"
)

// Head is the answer to a HEAD request: the headers the GET of the same
// URL would send, without its body. Fields the operation does not send are
// empty.
type Head struct {
	ETag            string // HeadPlant: the plant's current ETag
	Link            string // HeadPlants, HeadWebhooks: the next page's link, "" on the last page
	RateLimit       string // the token's remaining quota (IETF RateLimit header)
	RateLimitPolicy string // the token's quota policy (IETF RateLimit-Policy header)
	// Total and TotalEstimated: HeadPlants with a Count, as in PlantPage.
	Total          *int64
	TotalEstimated bool
}

// HeadPlant asks for the headers of GET /plants/{id}: whether the plant
// exists and its ETag, without transferring it. An unknown id is an *Error
// with Status 404 (HEAD answers have no body, so no Code).
func (c *Client) HeadPlant(ctx context.Context, id int64) (*Head, error) {
	ctx, x := withExchange(ctx)
	res, err := c.api.HeadPlant(ctx, oapi.HeadPlantParams{ID: id})
	if err != nil {
		return nil, callError("head plant", x, err)
	}
	if r, ok := res.(*oapi.HeadPlantOK); ok {
		return &Head{ETag: r.ETag.Or(""), RateLimit: r.RateLimit.Or(""), RateLimitPolicy: r.RateLimitPolicy.Or("")}, nil
	}
	return nil, headError("head plant", x)
}

// HeadPlants asks for the headers of GET /plants with opts: the Link to the
// next page, if any, the rate limit, and the total when opts.Count asks for
// it (how many plants a query matches, without any of them).
func (c *Client) HeadPlants(ctx context.Context, opts ListPlantsOptions) (*Head, error) {
	params, err := opts.params()
	if err != nil {
		return nil, fmt.Errorf("client: head plants: %w", err)
	}
	ctx, x := withExchange(ctx)
	res, err := c.api.HeadPlants(ctx, oapi.HeadPlantsParams(params))
	if err != nil {
		return nil, callError("head plants", x, err)
	}
	if r, ok := res.(*oapi.HeadPlantsOK); ok {
		h := &Head{Link: r.Link.Or(""), RateLimit: r.RateLimit.Or(""), RateLimitPolicy: r.RateLimitPolicy.Or("")}
		h.Total, h.TotalEstimated = total(r.XTotalCount, r.PreferenceApplied)
		return h, nil
	}
	return nil, headError("head plants", x)
}

// HeadWebhooks asks for the headers of GET /webhooks with opts.
func (c *Client) HeadWebhooks(ctx context.Context, opts ListWebhooksOptions) (*Head, error) {
	ctx, x := withExchange(ctx)
	res, err := c.api.HeadWebhooks(ctx, oapi.HeadWebhooksParams(opts.params()))
	if err != nil {
		return nil, callError("head webhooks", x, err)
	}
	if r, ok := res.(*oapi.HeadWebhooksOK); ok {
		return &Head{Link: r.Link.Or(""), RateLimit: r.RateLimit.Or(""), RateLimitPolicy: r.RateLimitPolicy.Or("")}, nil
	}
	return nil, headError("head webhooks", x)
}

// HeadWebhook asks for the headers of GET /webhooks/{id}: whether the
// subscription exists.
func (c *Client) HeadWebhook(ctx context.Context, id string) (*Head, error) {
	ctx, x := withExchange(ctx)
	res, err := c.api.HeadWebhook(ctx, oapi.HeadWebhookParams{ID: id})
	if err != nil {
		return nil, callError("head webhook", x, err)
	}
	if r, ok := res.(*oapi.HeadWebhookOK); ok {
		return &Head{RateLimit: r.RateLimit.Or(""), RateLimitPolicy: r.RateLimitPolicy.Or("")}, nil
	}
	return nil, headError("head webhook", x)
}

// HeadWebhookDeliveries asks for the headers of GET
// /webhooks/{id}/deliveries.
func (c *Client) HeadWebhookDeliveries(ctx context.Context, id string) (*Head, error) {
	ctx, x := withExchange(ctx)
	res, err := c.api.HeadWebhookDeliveries(ctx, oapi.HeadWebhookDeliveriesParams{ID: id})
	if err != nil {
		return nil, callError("head webhook deliveries", x, err)
	}
	if r, ok := res.(*oapi.HeadWebhookDeliveriesOK); ok {
		return &Head{RateLimit: r.RateLimit.Or(""), RateLimitPolicy: r.RateLimitPolicy.Or("")}, nil
	}
	return nil, headError("head webhook deliveries", x)
}

// headError is the *Error of a HEAD answer that is not a success: its
// status and Retry-After; HEAD answers carry no body, so no Code.
func headError(op string, x *exchange) error {
	e := &Error{Status: x.status, Message: fmt.Sprintf("%s: %s", op, http.StatusText(x.status))}
	if s, err := strconv.Atoi(x.header.Get("Retry-After")); err == nil {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	return e
}
