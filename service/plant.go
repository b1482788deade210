package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/plantstore/plantstore"
)

// PlantService implements plantstore.PlantService over a PlantStore.
type PlantService struct {
	store  plantstore.PlantStore
	now    func() time.Time
	notify func()
}

// CreatePlant validates p and stores it with its webhook event, or
// recognises an idempotent replay (same content: the stored plant,
// created=false) or a conflict (CodeConflict). The store makes the lookup
// and the insert atomic; the decision and its message are made here. The
// dispatcher is woken only when the event was written for at least one
// subscription.
func (s *PlantService) CreatePlant(ctx context.Context, p *plantstore.Plant) (*plantstore.Plant, bool, error) {
	if err := p.Validate(); err != nil {
		return nil, false, err
	}
	msgID, err := plantstore.NewMessageID()
	if err != nil {
		return nil, false, err
	}
	now := s.now().UTC()
	stored := *p
	stored.CreatedAt = now
	ev := &plantstore.Event{MessageID: msgID, PlantID: p.ID, Payload: p.WebhookPayload(), CreatedAt: now}
	existing, deliveries, err := s.store.InsertPlant(ctx, &stored, ev)
	switch {
	case errors.Is(err, plantstore.ErrContended):
		return nil, false, &plantstore.Error{Code: plantstore.CodeConflict,
			Message: fmt.Sprintf("plant %d is being created and deleted concurrently; retry", p.ID), Err: err}
	case err != nil:
		return nil, false, storeError("create plant", err)
	case existing == nil:
		if deliveries > 0 {
			s.notify() // the dispatcher has something to deliver
		}
		return &stored, true, nil
	case !existing.SameContent(p):
		return nil, false, plantstore.Errorf(plantstore.CodeConflict, "plant %d already exists with a different name or tag", p.ID)
	}
	return existing, false, nil
}

// FindPlantByID returns the owner's plant with id.
func (s *PlantService) FindPlantByID(ctx context.Context, owner string, id int64) (*plantstore.Plant, error) {
	p, err := s.store.FindPlant(ctx, owner, id)
	if err != nil {
		return nil, plantError("find plant", id, err)
	}
	return p, nil
}

// FindPlants returns one page of the owner's plants by id ascending and
// whether another page follows (it asks the store for one row more). It
// refuses a filter the stores cannot take (PlantFilter.Validate).
func (s *PlantService) FindPlants(ctx context.Context, f plantstore.PlantFilter) ([]*plantstore.Plant, bool, error) {
	if f.Limit == 0 {
		f.Limit = plantstore.DefaultPageSize
	}
	if f.Limit < 1 || f.Limit > plantstore.MaxPageSize {
		return nil, false, plantstore.Errorf(plantstore.CodeInvalidQuery, "limit must be from 1 to %d", plantstore.MaxPageSize)
	}
	if err := f.Validate(); err != nil {
		return nil, false, err
	}
	want := f.Limit
	f.Limit++
	plants, err := s.store.ListPlants(ctx, f)
	if err != nil {
		return nil, false, storeError("find plants", err)
	}
	if len(plants) > want {
		return plants[:want], true, nil
	}
	return plants, false, nil
}

// DeletePlant deletes the owner's plant with id.
func (s *PlantService) DeletePlant(ctx context.Context, owner string, id int64) error {
	if err := s.store.DeletePlant(ctx, owner, id); err != nil {
		return plantError("delete plant", id, err)
	}
	return nil
}

// ImportPlants validates every plant first (one invalid plant stores
// nothing), then stores them in one transaction, skipping ids that exist,
// with no webhook events.
func (s *PlantService) ImportPlants(ctx context.Context, plants []*plantstore.Plant) (int, error) {
	now := s.now().UTC()
	rows := make([]*plantstore.Plant, len(plants))
	for i, p := range plants {
		if err := p.Validate(); err != nil {
			return 0, err
		}
		row := *p
		row.CreatedAt = now
		rows[i] = &row
	}
	n, err := s.store.BulkInsertPlants(ctx, rows)
	if err != nil {
		return 0, storeError("import plants", err)
	}
	return n, nil
}

// plantError is storeError with ErrNotFound as the plant's CodeNotFound.
func plantError(op string, id int64, err error) error {
	if errors.Is(err, plantstore.ErrNotFound) {
		return plantstore.Errorf(plantstore.CodeNotFound, "plant %d not found", id)
	}
	return storeError(op, err)
}
