package http

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/http/oapi"
	"github.com/plantstore/plantstore/internal/textsearch"
)

// handler implements the generated server's Handler and SecurityHandler.
type handler struct {
	s *Server
}

var (
	_ oapi.Handler         = (*handler)(nil)
	_ oapi.SecurityHandler = (*handler)(nil)
)

// AddPlant handles the "POST /plants" route. The body has already been
// checked against the schema by the generated decoder; the service checks
// the rest, stores the plant and its webhook event, and wakes the dispatcher.
func (h *handler) AddPlant(ctx context.Context, req *oapi.NewPlant) (oapi.AddPlantRes, error) {
	p := &plantstore.Plant{
		Owner: plantstore.TokenFromContext(ctx).Owner,
		ID:    req.ID,
		Name:  req.Name,
	}
	if tag, ok := req.Tag.Get(); ok {
		p.Tag = &tag
	}
	stored, _, err := h.s.PlantService.CreatePlant(ctx, p)
	if err != nil {
		return nil, err
	}
	return &oapi.PlantHeaders{Response: *toAPI(stored)}, nil
}

// AddPlants handles the "POST /plants/batch" route: at most BatchMax
// plants (else 413), each plant one request of the owner's rate limit,
// stored in one transaction or none (PlantService.CreatePlants).
func (h *handler) AddPlants(ctx context.Context, req *oapi.NewPlants) (oapi.AddPlantsRes, error) {
	n := len(req.Plants)
	if max := h.s.batchMax(); n > max {
		return nil, plantstore.Errorf(plantstore.CodeBodyTooLarge, "a batch holds at most %d plants; this one has %d", max, n)
	}
	owner := plantstore.TokenFromContext(ctx).Owner
	if err := h.s.allowMore(ctx, owner, n-1); err != nil {
		return nil, err
	}
	in := make([]plantstore.Plant, n)
	plants := make([]*plantstore.Plant, n)
	for i, np := range req.Plants {
		in[i] = plantstore.Plant{Owner: owner, ID: np.ID, Name: np.Name}
		if tag, ok := np.Tag.Get(); ok {
			in[i].Tag = &tag
		}
		plants[i] = &in[i]
	}
	stored, err := h.s.PlantService.CreatePlants(ctx, plants)
	if err != nil {
		return nil, err
	}
	out := make([]oapi.Plant, len(stored))
	for i, p := range stored {
		out[i] = *toAPI(p)
	}
	return &oapi.PlantBatchHeaders{Response: oapi.PlantBatch{Plants: out}}, nil
}

// GetPlant handles the "GET /plants/{id}" route: the plant with its ETag, or
// 304 when If-None-Match lists that ETag (weak comparison, RFC 9110 §13.1.2).
func (h *handler) GetPlant(ctx context.Context, params oapi.GetPlantParams) (oapi.GetPlantRes, error) {
	p, err := h.s.PlantService.FindPlantByID(ctx, plantstore.TokenFromContext(ctx).Owner, params.ID)
	if err != nil {
		return nil, err
	}
	etag := p.ETag()
	if inm, ok := params.IfNoneMatch.Get(); ok && plantstore.MatchETag(inm, etag, true) {
		return &oapi.NotModified{ETag: oapi.NewOptString(etag)}, nil
	}
	return &oapi.GetPlantOKHeaders{ETag: oapi.NewOptString(etag), Response: *toAPI(p)}, nil
}

// HeadPlant handles the "HEAD /plants/{id}" route: GetPlant's headers.
func (h *handler) HeadPlant(ctx context.Context, params oapi.HeadPlantParams) (oapi.HeadPlantRes, error) {
	res, err := h.GetPlant(ctx, oapi.GetPlantParams(params))
	if err != nil {
		return nil, err
	}
	switch res := res.(type) {
	case *oapi.GetPlantOKHeaders:
		return &oapi.HeadPlantOK{ETag: res.ETag}, nil
	case *oapi.NotModified:
		return res, nil
	}
	return nil, fmt.Errorf("http: head plant: unexpected answer %T", res)
}

// UpdatePlant handles the "PATCH /plants/{id}" route: a JSON merge patch
// (RFC 7396) of name and tag, conditional on If-Match when it is sent. The
// generated decoder has refused members other than name and tag, a null
// name and values out of the schema; the service checks the rest.
func (h *handler) UpdatePlant(ctx context.Context, req oapi.UpdatePlantReq, params oapi.UpdatePlantParams) (oapi.UpdatePlantRes, error) {
	var patch oapi.PlantPatch
	switch req := req.(type) {
	case *oapi.UpdatePlantApplicationMergePatchJSON:
		patch = oapi.PlantPatch(*req)
	case *oapi.UpdatePlantApplicationJSON:
		patch = oapi.PlantPatch(*req)
	default:
		return nil, fmt.Errorf("http: update plant: unexpected request %T", req)
	}
	var upd plantstore.PlantUpdate
	if name, ok := patch.Name.Get(); ok {
		upd.Name = &name
	}
	if patch.Tag.IsSet() {
		upd.SetTag = true
		if tag, ok := patch.Tag.Get(); ok {
			upd.Tag = &tag
		}
	}
	ifMatch, conditional := params.IfMatch.Get()
	if conditional && strings.Trim(ifMatch, " \t") == "" {
		// An If-Match that lists no entity tag can match no plant: 412,
		// as for DELETE (a client whose ETag variable was empty must not
		// overwrite). The service reads "" as no If-Match; "," is the
		// same empty list, written so that it does not.
		ifMatch = ","
	}
	p, err := h.s.PlantService.UpdatePlant(ctx, plantstore.TokenFromContext(ctx).Owner, params.ID, upd, ifMatch)
	if err != nil {
		return nil, err
	}
	return &oapi.GetPlantOKHeaders{ETag: oapi.NewOptString(p.ETag()), Response: *toAPI(p)}, nil
}

// DeletePlant handles the "DELETE /plants/{id}" route, conditional on
// If-Match when it is sent.
func (h *handler) DeletePlant(ctx context.Context, params oapi.DeletePlantParams) (oapi.DeletePlantRes, error) {
	owner := plantstore.TokenFromContext(ctx).Owner
	var err error
	if ifMatch, ok := params.IfMatch.Get(); ok {
		err = h.s.PlantService.DeletePlantIf(ctx, owner, params.ID, ifMatch)
	} else {
		err = h.s.PlantService.DeletePlant(ctx, owner, params.ID)
	}
	if err != nil {
		return nil, err
	}
	return &oapi.DeletePlantNoContent{}, nil
}

// ListPlants handles the "GET /plants" route: one keyset page of the plants
// the query selects, in its order, with a Link header to the next page when
// more follow, and the count the Prefer header asks for.
func (h *handler) ListPlants(ctx context.Context, params oapi.ListPlantsParams) (oapi.ListPlantsRes, error) {
	f, err := plantFilter(ctx, params)
	if err != nil {
		return nil, err
	}
	plants, more, err := h.s.PlantService.FindPlants(ctx, f)
	if err != nil {
		return nil, err
	}
	res := &oapi.ListPlantsOKHeaders{Response: make([]oapi.Plant, len(plants))}
	for i, p := range plants {
		res.Response[i] = *toAPI(p)
	}
	if more && len(plants) > 0 {
		res.Link = oapi.NewOptString(nextLink(f, params.Q.Or(""), plants[len(plants)-1]))
	}
	if mode := preferCount(params.Prefer.Or("")); mode != plantstore.CountNone {
		n, err := h.s.PlantService.CountPlants(ctx, f, mode)
		if err != nil {
			return nil, err
		}
		res.XTotalCount = oapi.NewOptInt64(n)
		res.PreferenceApplied = oapi.NewOptPreferenceApplied(oapi.PreferenceApplied("count=" + mode.String()))
	}
	return res, nil
}

// HeadPlants handles the "HEAD /plants" route: ListPlants's headers (the
// Link to the next page, the count asked for).
func (h *handler) HeadPlants(ctx context.Context, params oapi.HeadPlantsParams) (oapi.HeadPlantsRes, error) {
	res, err := h.ListPlants(ctx, oapi.ListPlantsParams(params))
	if err != nil {
		return nil, err
	}
	ok := res.(*oapi.ListPlantsOKHeaders)
	return &oapi.HeadPlantsOK{Link: ok.Link, XTotalCount: ok.XTotalCount, PreferenceApplied: ok.PreferenceApplied}, nil
}

// plantFilter reads a plant list's query parameters (the generated decoder
// has checked their types, lengths and ranges). The cursor is read last:
// it is checked against the rest of the query.
func plantFilter(ctx context.Context, params oapi.ListPlantsParams) (plantstore.PlantFilter, error) {
	f := plantstore.PlantFilter{
		Owner: plantstore.TokenFromContext(ctx).Owner,
		Limit: int(params.Limit.Or(plantstore.DefaultPageSize)),
		Tags:  params.Tag,
	}
	if q, ok := params.Q.Get(); ok {
		f.Words = textsearch.Words(q)
	}
	// Plants are stored to the microsecond: a bound finer than that means
	// the same as the microsecond it falls in, rounded so that "after" and
	// "before" keep their meaning (and the cursor's fingerprint is the same
	// whichever of those equivalent bounds a client sends).
	if t, ok := params.CreatedAfter.Get(); ok {
		f.CreatedAfter = clampTime(plantstore.TruncateTime(t))
	}
	if t, ok := params.CreatedBefore.Get(); ok {
		if tt := plantstore.TruncateTime(t); tt.Equal(t) {
			f.CreatedBefore = clampTime(tt)
		} else {
			f.CreatedBefore = clampTime(tt.Add(time.Microsecond))
		}
	}
	if s, ok := params.Sort.Get(); ok {
		sort, err := plantstore.ParsePlantSort(string(s))
		if err != nil {
			return f, err
		}
		f.Sort = sort
	}
	if err := f.Validate(); err != nil {
		return f, err
	}
	if after, ok := params.After.Get(); ok {
		if err := f.SetCursor(after); err != nil {
			return f, err
		}
	}
	return f, nil
}

// The span of times a creation bound is moved into: every plant is created
// within it (the service stamps the clock's time), and SQLite keeps times
// as int64 nanoseconds since 1970, which end in 1677 and 2262. A bound
// outside selects the same plants as the end of the span it passes, and
// year 1 is never taken for the zero time that means "no bound".
var (
	minBound = time.Date(1678, 1, 1, 0, 0, 0, 0, time.UTC)
	maxBound = time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC)
)

// clampTime moves t into [minBound, maxBound].
func clampTime(t time.Time) time.Time {
	switch {
	case t.Before(minBound):
		return minBound
	case t.After(maxBound):
		return maxBound
	}
	return t
}

// preferCount reads the count preference of a Prefer header (RFC 7240:
// comma-separated preferences, each token[=value] with ;parameters):
// count=exact or count=estimated; any other preference, or another count
// value, is ignored, as the RFC asks of a preference a server does not
// support.
func preferCount(prefer string) plantstore.CountMode {
	mode := plantstore.CountNone
	for pref := range strings.SplitSeq(prefer, ",") {
		pref, _, _ = strings.Cut(pref, ";")
		name, value, _ := strings.Cut(strings.TrimSpace(pref), "=")
		if !strings.EqualFold(strings.TrimSpace(name), "count") {
			continue
		}
		switch strings.Trim(strings.TrimSpace(value), `"`) {
		case "exact":
			mode = plantstore.CountExact
		case "estimated":
			mode = plantstore.CountEstimated
		}
	}
	return mode
}

// nextLink is the RFC 8288 Link header value for the page of f's query
// after last; q is the query's search text as the client sent it.
func nextLink(f plantstore.PlantFilter, q string, last *plantstore.Plant) string {
	v := url.Values{}
	if q != "" {
		v.Set("q", q)
	}
	for _, tag := range f.Tags {
		v.Add("tag", tag)
	}
	if !f.CreatedAfter.IsZero() {
		v.Set("created_after", f.CreatedAfter.Format(time.RFC3339Nano))
	}
	if !f.CreatedBefore.IsZero() {
		v.Set("created_before", f.CreatedBefore.Format(time.RFC3339Nano))
	}
	if f.Sort != plantstore.SortID {
		v.Set("sort", f.Sort.String())
	}
	return pageLink("/plants", v, f.Cursor(last), f.Limit)
}

// pageLink is the RFC 8288 Link header value of the next page of the list
// at path: the items after the key after, limit of them, with the filter q
// (nil: none) of the page it follows. The URL is relative to the request's,
// so it stays right behind a proxy.
func pageLink(path string, q url.Values, after string, limit int) string {
	if q == nil {
		q = url.Values{}
	}
	q.Set("after", after)
	q.Set("limit", strconv.Itoa(limit))
	return "<" + path + "?" + q.Encode() + `>; rel="next"`
}

func toAPI(p *plantstore.Plant) *oapi.Plant {
	out := &oapi.Plant{ID: p.ID, Name: p.Name}
	if !p.CreatedAt.IsZero() {
		out.CreatedAt = oapi.NewOptDateTime(p.CreatedAt.UTC())
		out.UpdatedAt = oapi.NewOptDateTime(p.LastUpdated().UTC())
	}
	if p.Tag != nil {
		out.Tag = oapi.NewOptString(*p.Tag)
	}
	return out
}
