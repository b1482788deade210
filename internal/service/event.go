package service

import (
	"context"
	"log/slog"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/outage"
	"github.com/plantstore/plantstore/internal/prune"
)

// EventService implements plantstore.EventService over an EventStore.
type EventService struct {
	store plantstore.EventStore
	now   func() time.Time
}

// FindEvents returns one page of the owner's events after f.After by Seq
// ascending and whether another page follows (it asks the store for one row
// more). It refuses a page size out of range and an unknown type.
func (s *EventService) FindEvents(ctx context.Context, f plantstore.EventFilter) ([]*plantstore.Event, bool, error) {
	if f.Limit == 0 {
		f.Limit = plantstore.DefaultPageSize
	}
	if f.Limit < 1 || f.Limit > plantstore.MaxPageSize {
		return nil, false, plantstore.Errorf(plantstore.CodeInvalidQuery, "limit must be from 1 to %d", plantstore.MaxPageSize)
	}
	if f.After < 0 {
		return nil, false, plantstore.Errorf(plantstore.CodeInvalidQuery, "after must be 0 or more")
	}
	if f.Type != "" && !plantstore.ValidEventType(f.Type) {
		return nil, false, plantstore.Errorf(plantstore.CodeInvalidQuery, "type must be one of plant.created, plant.updated, plant.deleted")
	}
	want := f.Limit
	f.Limit++
	events, err := s.store.ListEvents(ctx, f)
	if err != nil {
		return nil, false, storeError("find events", err)
	}
	if len(events) > want {
		return events[:want], true, nil
	}
	return events, false, nil
}

// PruneEvents deletes at most limit events created before the service's
// now minus retention, and returns how many (fewer than limit: none is
// left).
func (s *EventService) PruneEvents(ctx context.Context, retention time.Duration, limit int) (int, error) {
	n, err := s.store.PruneEvents(ctx, s.now().Add(-retention), limit)
	if err != nil {
		return n, storeError("prune events", err)
	}
	return n, nil
}

// Event retention pruning: EventPruneBatch bounds the events one statement
// deletes and EventPruneInterval is the time between two passes (shorter
// when the retention is); eventPrunePause is the pause between two batches
// of a pass, which leaves the database to the writes.
const (
	EventPruneBatch    = 500
	EventPruneInterval = time.Minute
	eventPrunePause    = 20 * time.Millisecond
)

// PruneEventsPass deletes every event older than retention (by the
// service's clock), at most batch a statement with pause between two
// statements, so that no write waits long behind it; it returns how many
// it deleted. It stops at the first error.
func (s *EventService) PruneEventsPass(ctx context.Context, retention time.Duration, batch int, pause time.Duration) (int, error) {
	return prune.Pass(ctx, batch, pause, func(ctx context.Context, limit int) (int, error) {
		return s.PruneEvents(ctx, retention, limit)
	})
}

// RunPruner prunes the events older than retention off the request path:
// a pass (PruneEventsPass, EventPruneBatch rows a statement) at once and
// then every EventPruneInterval (or retention, if shorter), until ctx ends.
// A failed pass is tried again at the next; failing passes are logged as
// an outage (internal/outage): when they start and when they end.
// retention 0 keeps everything: it returns at once.
func (s *EventService) RunPruner(ctx context.Context, retention time.Duration, logger *slog.Logger) {
	runPruner(ctx, retention, logger, "events", func(ctx context.Context) (int, error) {
		return s.PruneEventsPass(ctx, retention, EventPruneBatch, eventPrunePause)
	})
}

// runPruner runs pass (one pruning pass over what, "events" or "tokens")
// at once and then every EventPruneInterval (or retention, if shorter),
// until ctx ends; a failed pass is tried again at the next, and failing
// passes are logged as an outage (internal/outage). retention 0 keeps
// everything: it returns at once.
func runPruner(ctx context.Context, retention time.Duration, logger *slog.Logger, what string, pass func(context.Context) (int, error)) {
	if retention <= 0 {
		return
	}
	failures := outage.New(logger, slog.LevelWarn, what+": prune")
	prune.Loop(ctx, min(EventPruneInterval, retention), func(ctx context.Context) {
		n, err := pass(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			failures.Fail(ctx, err, "deleted", n)
		case err == nil:
			failures.OK(ctx)
		}
		if n > 0 {
			logger.Info(what+": pruned", what, n, "retention", retention)
		}
	})
}
