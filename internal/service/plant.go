package service

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/plantstore/plantstore"
)

// PlantService implements plantstore.PlantService over a PlantStore.
type PlantService struct {
	store    plantstore.PlantStore
	now      func() time.Time
	notifier *Notifier // told after every commit that wrote events or deliveries
	onEvent  func(typ string)
}

// newEvent returns the event of a change of type typ of owner's plant, at
// now, as the store takes it: a fresh id, the type, the time (the store
// adds the seq and the plant as the change leaves it).
func newEvent(owner, typ string, now time.Time) (*plantstore.Event, error) {
	id, err := plantstore.NewEventID()
	if err != nil {
		return nil, err
	}
	return &plantstore.Event{Owner: owner, ID: id, Type: typ, CreatedAt: now}, nil
}

// written tells the Notifier what a committed write of an event of type
// typ wrote: seq 0 is no event, deliveries the outbox rows (the Dispatcher
// is woken only when there are some).
func (s *PlantService) written(owner, typ string, seq int64, deliveries int) {
	s.notifier.committed(owner, seq != 0, deliveries > 0)
	if seq != 0 && s.onEvent != nil {
		s.onEvent(typ)
	}
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
	now := plantstore.TruncateTime(s.now())
	stored := *p
	stored.CreatedAt, stored.UpdatedAt = now, now
	ev, err := newEvent(p.Owner, plantstore.EventPlantCreated, now)
	if err != nil {
		return nil, false, err
	}
	res, err := s.store.InsertPlant(ctx, &stored, ev)
	existing := res.Existing
	switch {
	case errors.Is(err, plantstore.ErrContended):
		return nil, false, &plantstore.Error{Code: plantstore.CodeConflict,
			Message: fmt.Sprintf("plant %d is being created and deleted concurrently; retry", p.ID), Err: err}
	case err != nil:
		return nil, false, storeError("create plant", err)
	case existing == nil:
		s.written(p.Owner, ev.Type, res.Seq, res.Deliveries)
		return &stored, true, nil
	case !existing.SameContent(p):
		return nil, false, conflictError(p.ID)
	}
	return existing, false, nil
}

// CreatePlants validates a batch of one owner's plants and stores them in
// one transaction, each with its webhook event, or none of them: each
// item as CreatePlant would take it (an item identical to the stored
// plant of its id is a replay: the stored plant, no event), but an invalid
// item, an id given twice or a conflict fails the whole batch with an
// *Error whose Index names the item. It returns the plants as stored, in
// the batch's order. The caller bounds the batch's size.
func (s *PlantService) CreatePlants(ctx context.Context, plants []*plantstore.Plant) ([]*plantstore.Plant, error) {
	if len(plants) == 0 {
		return nil, plantstore.Errorf(plantstore.CodeInvalidBody, "invalid NewPlants: plants: must have at least 1 item")
	}
	first := make(map[int64]int, len(plants))
	for i, p := range plants {
		if err := p.Validate(); err != nil {
			return nil, itemError(i, err)
		}
		if j, ok := first[p.ID]; ok {
			return nil, itemError(i, plantstore.Errorf(plantstore.CodeInvalidBody, "id %d is also the id of plants[%d]: a batch holds each id once", p.ID, j))
		}
		first[p.ID] = i
	}
	now := plantstore.TruncateTime(s.now())
	stored := make([]plantstore.Plant, len(plants))
	out := make([]*plantstore.Plant, len(plants))
	evs := make([]*plantstore.Event, len(plants))
	for i, p := range plants {
		stored[i] = *p
		stored[i].CreatedAt, stored[i].UpdatedAt = now, now
		out[i] = &stored[i]
		ev, err := newEvent(p.Owner, plantstore.EventPlantCreated, now)
		if err != nil {
			return nil, err
		}
		evs[i] = ev
	}
	res, err := s.store.InsertPlants(ctx, out, evs)
	var conflict *plantstore.ConflictError
	switch {
	case errors.As(err, &conflict):
		return nil, itemError(conflict.Index, conflictError(conflict.Existing.ID))
	case errors.Is(err, plantstore.ErrContended):
		return nil, &plantstore.Error{Code: plantstore.CodeConflict,
			Message: "a plant of the batch is being created and deleted concurrently; retry", Err: err}
	case err != nil:
		return nil, storeError("create plants", err)
	case len(res) != len(out):
		return nil, fmt.Errorf("service: create plants: %d results for %d plants", len(res), len(out))
	}
	events, deliveries := false, false
	for i, r := range res {
		if r.Existing != nil {
			out[i] = r.Existing
			continue
		}
		events, deliveries = events || r.Seq != 0, deliveries || r.Deliveries > 0
		if r.Seq != 0 && s.onEvent != nil {
			s.onEvent(plantstore.EventPlantCreated)
		}
	}
	s.notifier.committed(plants[0].Owner, events, deliveries) // one wake for the batch
	return out, nil
}

// conflictError is the refusal of a create whose id the owner has with
// another name or tag.
func conflictError(id int64) *plantstore.Error {
	return plantstore.Errorf(plantstore.CodeConflict, "plant %d already exists with a different name or tag", id)
}

// itemError is err, an *Error about item i of a batch: its message
// prefixed with the item ("plants[17]: ...") and its Index set.
func itemError(i int, err error) error {
	var e *plantstore.Error
	if !errors.As(err, &e) {
		return err
	}
	item := *e
	item.Message = fmt.Sprintf("plants[%d]: %s", i, e.Message)
	item.Index = &i
	return &item
}

// FindPlantByID returns the owner's plant with id.
func (s *PlantService) FindPlantByID(ctx context.Context, owner string, id int64) (*plantstore.Plant, error) {
	p, err := s.store.FindPlant(ctx, owner, id)
	if err != nil {
		return nil, plantError("find plant", id, err)
	}
	return p, nil
}

// FindPlants returns one page of the owner's plants matching f, in f.Sort's
// order, and whether another page follows (it asks the store for one row
// more). It refuses a filter the stores cannot take (PlantFilter.Validate).
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

// CountPlants returns how many of the owner's plants match f (its page
// aside), exactly or estimated as mode says.
func (s *PlantService) CountPlants(ctx context.Context, f plantstore.PlantFilter, mode plantstore.CountMode) (int64, error) {
	if err := f.Validate(); err != nil {
		return 0, err
	}
	f.After, f.Limit = nil, 0
	n, err := s.store.CountPlants(ctx, f, mode == plantstore.CountEstimated)
	if err != nil {
		return 0, storeError("count plants", err)
	}
	return n, nil
}

// DeletePlant deletes the owner's plant with id.
func (s *PlantService) DeletePlant(ctx context.Context, owner string, id int64) error {
	ev, err := newEvent(owner, plantstore.EventPlantDeleted, s.now().UTC())
	if err != nil {
		return err
	}
	res, err := s.store.DeletePlant(ctx, owner, id, ev)
	if err != nil {
		return plantError("delete plant", id, err)
	}
	s.written(owner, ev.Type, res.Seq, res.Deliveries)
	return nil
}

// DeletePlantIf deletes the owner's plant with id only while its ETag is one
// ifMatch lists (strong comparison). The ETag is checked on the plant as
// read, and the store deletes it only while it still has that content, so a
// change in between is a 412 too, never a lost update.
func (s *PlantService) DeletePlantIf(ctx context.Context, owner string, id int64, ifMatch string) error {
	if anyETag(ifMatch) {
		return s.DeletePlant(ctx, owner, id) // any existing plant: 404 when there is none
	}
	cur, err := s.checkIfMatch(ctx, owner, id, ifMatch)
	if err != nil {
		return err
	}
	ev, err := newEvent(owner, plantstore.EventPlantDeleted, s.now().UTC())
	if err != nil {
		return err
	}
	res, err := s.store.DeletePlantIf(ctx, owner, id, cur, ev)
	if err != nil {
		return conditionalError("delete plant", id, err)
	}
	s.written(owner, ev.Type, res.Seq, res.Deliveries)
	return nil
}

// UpdatePlant applies a merge patch (upd) to the owner's plant with id.
// Without ifMatch the store applies it atomically to whatever the plant
// holds. With ifMatch the plant is read, its ETag checked (412 when no
// listed tag matches), and the store applies upd only while the plant still
// has the content read (412 when it changed in between). A patch that
// changes nothing writes nothing, with or without ifMatch: no row, no
// event, no delivery (the store decides it in the write's transaction, so
// that without ifMatch too it is atomic). A change writes a plant.updated event
// (typed subscriptions that name it get it; untyped ones announce new plants
// only). A replay of the plant's create with its old content is then a
// conflict, 409, like any create of a taken id with other content.
func (s *PlantService) UpdatePlant(ctx context.Context, owner string, id int64, upd plantstore.PlantUpdate, ifMatch string) (*plantstore.Plant, error) {
	if err := upd.Validate(); err != nil {
		return nil, err
	}
	var expect *plantstore.Plant
	if ifMatch != "" && !anyETag(ifMatch) {
		cur, err := s.checkIfMatch(ctx, owner, id, ifMatch)
		if err != nil {
			return nil, err
		}
		if next := upd.Apply(cur); next.SameContent(cur) {
			return cur, nil
		}
		expect = cur
	} else if upd.Empty() {
		return s.FindPlantByID(ctx, owner, id)
	}
	upd.At = plantstore.TruncateTime(s.now())
	ev, err := newEvent(owner, plantstore.EventPlantUpdated, upd.At)
	if err != nil {
		return nil, err
	}
	res, err := s.store.UpdatePlant(ctx, owner, id, upd, expect, ev)
	if err != nil {
		return nil, conditionalError("update plant", id, err)
	}
	s.written(owner, ev.Type, res.Seq, res.Deliveries)
	return res.Plant, nil
}

// anyETag reports an If-Match of "*": any existing plant matches, which is
// what an unconditional write requires anyway (404 when there is none).
func anyETag(ifMatch string) bool { return strings.TrimSpace(ifMatch) == "*" }

// checkIfMatch reads the owner's plant and checks that ifMatch lists its
// ETag; it returns the plant as read. A missing plant is 404 whatever
// ifMatch says (RFC 9110 §13.2.1: preconditions are ignored when the answer
// without them would not be a 2xx).
func (s *PlantService) checkIfMatch(ctx context.Context, owner string, id int64, ifMatch string) (*plantstore.Plant, error) {
	cur, err := s.FindPlantByID(ctx, owner, id)
	if err != nil {
		return nil, err
	}
	if !plantstore.MatchETag(ifMatch, cur.ETag(), false) {
		return nil, preconditionFailed(id, nil)
	}
	return cur, nil
}

// preconditionFailed is the 412 of a plant whose ETag If-Match does not list.
func preconditionFailed(id int64, cause error) error {
	return &plantstore.Error{Code: plantstore.CodePreconditionFailed,
		Message: fmt.Sprintf("precondition failed: plant %d changed (its ETag is not one If-Match lists): read it again", id), Err: cause}
}

// conditionalError is plantError with ErrChanged as the plant's 412.
func conditionalError(op string, id int64, err error) error {
	if errors.Is(err, plantstore.ErrChanged) {
		return preconditionFailed(id, err)
	}
	return plantError(op, id, err)
}

// ImportPlants validates every plant first (one invalid plant stores
// nothing), then stores them in one transaction, skipping ids that exist,
// with no webhook events.
func (s *PlantService) ImportPlants(ctx context.Context, plants []*plantstore.Plant) (int, error) {
	now := plantstore.TruncateTime(s.now())
	rows := make([]*plantstore.Plant, len(plants))
	for i, p := range plants {
		if err := p.Validate(); err != nil {
			return 0, err
		}
		row := *p
		row.CreatedAt, row.UpdatedAt = now, now
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
