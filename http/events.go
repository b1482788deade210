package http

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/http/oapi"
)

// ListEvents handles the "GET /events" route: one keyset page of the
// owner's events by seq, with a Link header to the next page when more
// events follow.
func (h *handler) ListEvents(ctx context.Context, params oapi.ListEventsParams) (oapi.ListEventsRes, error) {
	if h.s.EventService == nil {
		return nil, internalError(errors.New("http: list events: no EventService"))
	}
	f := plantstore.EventFilter{
		Owner: plantstore.TokenFromContext(ctx).Owner,
		After: params.After.Or(0),
		Limit: int(params.Limit.Or(plantstore.DefaultPageSize)),
		Type:  string(params.Type.Or("")),
	}
	events, more, err := h.s.EventService.FindEvents(ctx, f)
	if err != nil {
		return nil, err
	}
	res := &oapi.ListEventsOKHeaders{Response: make([]oapi.PlantEvent, len(events))}
	for i, ev := range events {
		out, err := toAPIEvent(ev)
		if err != nil {
			return nil, internalError(err)
		}
		res.Response[i] = *out
	}
	if more && len(events) > 0 {
		res.Link = oapi.NewOptString(eventsNextLink(f, events[len(events)-1].Seq))
	}
	return res, nil
}

// HeadEvents handles the "HEAD /events" route: ListEvents's headers (the
// Link to the next page), without a body.
func (h *handler) HeadEvents(ctx context.Context, params oapi.HeadEventsParams) (oapi.HeadEventsRes, error) {
	res, err := h.ListEvents(ctx, oapi.ListEventsParams(params))
	if err != nil {
		return nil, err
	}
	return &oapi.HeadEventsOK{Link: res.(*oapi.ListEventsOKHeaders).Link}, nil
}

// eventsNextLink is the RFC 8288 Link header value for the page of events
// after seq last, relative like the plants' (nextLink).
func eventsNextLink(f plantstore.EventFilter, last int64) string {
	q := url.Values{}
	q.Set("after", strconv.FormatInt(last, 10))
	q.Set("limit", strconv.Itoa(f.Limit))
	if f.Type != "" {
		q.Set("type", f.Type)
	}
	return "</events?" + q.Encode() + `>; rel="next"`
}

// toAPIEvent maps an event to the contract's PlantEvent (its data is the
// stored Plant JSON).
func toAPIEvent(ev *plantstore.PlantEvent) (*oapi.PlantEvent, error) {
	out := &oapi.PlantEvent{
		Type:      oapi.EventType(ev.Type),
		ID:        ev.ID,
		Seq:       ev.Seq,
		CreatedAt: ev.CreatedAt.UTC().Truncate(time.Microsecond), // as in PlantEvent.Envelope
	}
	if err := out.Data.UnmarshalJSON(ev.Data); err != nil {
		return nil, fmt.Errorf("http: event %d of %s: data: %w", ev.Seq, ev.Owner, err)
	}
	return out, nil
}
