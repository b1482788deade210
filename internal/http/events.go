package http

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/eventjson"
	"github.com/plantstore/plantstore/internal/http/oapi"
)

// ListEvents handles the "GET /events" route: one keyset page of the
// owner's events by seq, with a Link header to the next page when more
// events follow. Its body is the events rendered by package eventjson (the
// encoder of the stream and the webhooks too), written in place of the
// generated encoder's (rawBody).
func (h *handler) ListEvents(ctx context.Context, params oapi.ListEventsParams) (oapi.ListEventsRes, error) {
	body := rawBodyFrom(ctx)
	if body == nil {
		return nil, internalError(errors.New("http: list events: no raw body writer"))
	}
	events, link, err := h.findEvents(ctx, params)
	if err != nil {
		return nil, err
	}
	body.set(eventjson.AppendEvents(nil, events))
	return &oapi.ListEventsOKHeaders{Link: link}, nil
}

// HeadEvents handles the "HEAD /events" route: ListEvents's headers (the
// Link to the next page), without a body.
func (h *handler) HeadEvents(ctx context.Context, params oapi.HeadEventsParams) (oapi.HeadEventsRes, error) {
	_, link, err := h.findEvents(ctx, oapi.ListEventsParams(params))
	if err != nil {
		return nil, err
	}
	return &oapi.HeadEventsOK{Link: link}, nil
}

// findEvents reads the page of events params ask for, and the Link to the
// next page when more follow.
func (h *handler) findEvents(ctx context.Context, params oapi.ListEventsParams) ([]*plantstore.Event, oapi.OptString, error) {
	if h.s.EventService == nil {
		return nil, oapi.OptString{}, internalError(errors.New("http: list events: no EventService"))
	}
	f := plantstore.EventFilter{
		Owner: plantstore.TokenFromContext(ctx).Owner,
		After: params.After.Or(0),
		Limit: int(params.Limit.Or(plantstore.DefaultPageSize)),
		Type:  string(params.Type.Or("")),
	}
	events, more, err := h.s.EventService.FindEvents(ctx, f)
	if err != nil {
		return nil, oapi.OptString{}, err
	}
	var link oapi.OptString
	if more && len(events) > 0 {
		link = oapi.NewOptString(eventsNextLink(f, events[len(events)-1].Seq))
	}
	return events, link, nil
}

// eventsNextLink is the RFC 8288 Link header value for the page of events
// after seq last (pageLink).
func eventsNextLink(f plantstore.EventFilter, last int64) string {
	q := url.Values{}
	if f.Type != "" {
		q.Set("type", f.Type)
	}
	return pageLink("/events", q, strconv.FormatInt(last, 10), f.Limit)
}

// rawBody is the ResponseWriter of a route whose 200 body a handler renders
// itself (GET /events: package eventjson) rather than through the generated
// encoder: the handler sets the bytes and returns an empty response, and
// what the generated encoder then writes of its body is replaced by them.
// Other statuses (the errors) pass as they are. route installs it.
type rawBody struct {
	http.ResponseWriter
	body   []byte // nil: nothing to replace
	status int
	done   bool
}

type rawBodyKey struct{}

// withRawBody returns w as a rawBody and r with it in its context.
func withRawBody(w http.ResponseWriter, r *http.Request) (*rawBody, *http.Request) {
	rb := &rawBody{ResponseWriter: w}
	return rb, r.WithContext(context.WithValue(r.Context(), rawBodyKey{}, rb))
}

// rawBodyFrom returns the rawBody of ctx's request, or nil.
func rawBodyFrom(ctx context.Context) *rawBody {
	rb, _ := ctx.Value(rawBodyKey{}).(*rawBody)
	return rb
}

func (w *rawBody) set(body []byte) { w.body = body }

func (w *rawBody) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *rawBody) Write(p []byte) (int, error) {
	if w.body == nil || (w.status != 0 && w.status != http.StatusOK) {
		return w.ResponseWriter.Write(p)
	}
	if !w.done {
		w.done = true
		if _, err := w.ResponseWriter.Write(w.body); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Unwrap returns the ResponseWriter underneath (http.ResponseController).
func (w *rawBody) Unwrap() http.ResponseWriter { return w.ResponseWriter }
