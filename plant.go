// Package plantstore holds the domain of the Plant Store service: plants,
// tokens, the service interfaces that storage backends implement and the
// errors that the transport maps to responses. Subpackages import it, never
// each other (see docs/architecture.md).
package plantstore

import (
	"context"
	"time"
	"unicode/utf8"
)

// Limits on plant fields, in Unicode code points. The OpenAPI document states
// the same numbers (minLength/maxLength) and the generated decoder enforces them.
const (
	MaxNameLength = 256
	MaxTagLength  = 64
)

// Pagination limits for FindPlants.
const (
	DefaultPageSize = 100
	MaxPageSize     = 1000
)

// Plant is a plant of one owner. Its key is (Owner, ID): ids are per owner.
type Plant struct {
	Owner     string
	ID        int64
	Name      string
	Tag       *string // nil when the plant has no tag
	CreatedAt time.Time
}

// SameContent reports whether p and q carry the same id, name and tag: a
// create that repeats a stored plant with the same content is an idempotent
// replay; any difference is a conflict.
func (p *Plant) SameContent(q *Plant) bool {
	if p.ID != q.ID || p.Name != q.Name || (p.Tag == nil) != (q.Tag == nil) {
		return false
	}
	return p.Tag == nil || *p.Tag == *q.Tag
}

// PlantFilter selects a page of one owner's plants, by id ascending.
type PlantFilter struct {
	Owner string
	Tag   *string // only plants with exactly this tag
	After *int64  // only ids greater than this one (keyset pagination)
	Limit int     // page size, 1..MaxPageSize
}

// PlantService stores plants. Every method is scoped to one owner.
type PlantService interface {
	// CreatePlant stores p. If the owner already has a plant with p.ID and the
	// same content, it returns the stored plant and created=false (idempotent
	// replay); with different content it returns a CodeConflict error.
	CreatePlant(ctx context.Context, p *Plant) (stored *Plant, created bool, err error)
	// FindPlantByID returns the owner's plant or a CodeNotFound error.
	FindPlantByID(ctx context.Context, owner string, id int64) (*Plant, error)
	// FindPlants returns a page of plants matching f and whether more follow.
	FindPlants(ctx context.Context, f PlantFilter) (plants []*Plant, more bool, err error)
	// DeletePlant deletes the owner's plant or returns a CodeNotFound error.
	DeletePlant(ctx context.Context, owner string, id int64) error
}

// Validate checks p's fields against the limits of the contract.
func (p *Plant) Validate() error {
	switch n := utf8.RuneCountInString(p.Name); {
	case n == 0:
		return Errorf(CodeInvalidBody, "invalid NewPlant: name: must have at least 1 character")
	case n > MaxNameLength:
		return Errorf(CodeInvalidBody, "invalid NewPlant: name: must have at most %d characters", MaxNameLength)
	}
	if p.Tag != nil && utf8.RuneCountInString(*p.Tag) > MaxTagLength {
		return Errorf(CodeInvalidBody, "invalid NewPlant: tag: must have at most %d characters", MaxTagLength)
	}
	if !utf8.ValidString(p.Name) || (p.Tag != nil && !utf8.ValidString(*p.Tag)) {
		return Errorf(CodeInvalidBody, "invalid NewPlant: name and tag must be valid UTF-8")
	}
	return nil
}

// Store is a storage backend: both services and its lifecycle. The sqlite
// and postgres packages implement it; storetest holds the conformance suite
// every implementation passes.
type Store interface {
	PlantService
	TokenService
	WebhookService
	OutboxService
	// Ping checks that the storage answers.
	Ping(ctx context.Context) error
	// Close releases the storage's resources.
	Close() error
}
