package http

import (
	"context"
	"net/url"
	"strconv"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/http/oapi"
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
	return toAPI(stored), nil
}

// GetPlant handles the "GET /plants/{id}" route.
func (h *handler) GetPlant(ctx context.Context, params oapi.GetPlantParams) (oapi.GetPlantRes, error) {
	p, err := h.s.PlantService.FindPlantByID(ctx, plantstore.TokenFromContext(ctx).Owner, params.ID)
	if err != nil {
		return nil, err
	}
	return toAPI(p), nil
}

// DeletePlant handles the "DELETE /plants/{id}" route.
func (h *handler) DeletePlant(ctx context.Context, params oapi.DeletePlantParams) (oapi.DeletePlantRes, error) {
	if err := h.s.PlantService.DeletePlant(ctx, plantstore.TokenFromContext(ctx).Owner, params.ID); err != nil {
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

// nextLink is the RFC 8288 Link header value for the page after lastID. The
// URL is relative to the request's, so it stays right behind a proxy.
func nextLink(f plantstore.PlantFilter, lastID int64) string {
	q := url.Values{}
	q.Set("after", strconv.FormatInt(lastID, 10))
	q.Set("limit", strconv.Itoa(f.Limit))
	if f.Tag != nil {
		q.Set("tag", *f.Tag)
	}
	return "</plants?" + q.Encode() + `>; rel="next"`
}

func toAPI(p *plantstore.Plant) *oapi.Plant {
	out := &oapi.Plant{ID: oapi.NewOptInt64(p.ID), Name: p.Name}
	if p.Tag != nil {
		out.Tag = oapi.NewOptString(*p.Tag)
	}
	return out
}
