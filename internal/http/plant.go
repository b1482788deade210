package http

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/http/oapi"
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

// ListPlants handles the "GET /plants" route: one keyset page by id, with a
// Link header to the next page when more plants follow.
func (h *handler) ListPlants(ctx context.Context, params oapi.ListPlantsParams) (oapi.ListPlantsRes, error) {
	f := plantstore.PlantFilter{
		Owner: plantstore.TokenFromContext(ctx).Owner,
		Limit: int(params.Limit.Or(plantstore.DefaultPageSize)),
	}
	if tag, ok := params.Tag.Get(); ok {
		f.Tag = &tag
	}
	if after, ok := params.After.Get(); ok {
		f.After = &after
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
		res.Link = oapi.NewOptString(nextLink(f, plants[len(plants)-1].ID))
	}
	return res, nil
}

// HeadPlants handles the "HEAD /plants" route: ListPlants's headers (the
// Link to the next page).
func (h *handler) HeadPlants(ctx context.Context, params oapi.HeadPlantsParams) (oapi.HeadPlantsRes, error) {
	res, err := h.ListPlants(ctx, oapi.ListPlantsParams(params))
	if err != nil {
		return nil, err
	}
	return &oapi.HeadPlantsOK{Link: res.(*oapi.ListPlantsOKHeaders).Link}, nil
}

// nextLink is the RFC 8288 Link header value for the page of plants after
// lastID.
func nextLink(f plantstore.PlantFilter, lastID int64) string {
	q := url.Values{}
	if f.Tag != nil {
		q.Set("tag", *f.Tag)
	}
	return pageLink("/plants", q, strconv.FormatInt(lastID, 10), f.Limit)
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
	if p.Tag != nil {
		out.Tag = oapi.NewOptString(*p.Tag)
	}
	return out
}
