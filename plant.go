// Package plantstore holds the domain of the Plant Store service: plants,
// tokens and webhook subscriptions; the service interfaces the transport
// calls (implemented once, in package service); the narrow row-store
// interfaces and Backend that each storage backend implements (sqlite,
// postgres); and the errors. Subpackages import it, never each other (see
// docs/architecture.md).
package plantstore

import (
	"context"
	"strings"
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
	// PostgreSQL cannot store U+0000 in text, and C tools cut a string
	// there: neither backend takes it, whoever calls.
	if strings.IndexByte(p.Name, 0) >= 0 {
		return Errorf(CodeInvalidBody, `invalid NewPlant: name: must not contain U+0000 (\u0000)`)
	}
	if p.Tag != nil && strings.IndexByte(*p.Tag, 0) >= 0 {
		return Errorf(CodeInvalidBody, `invalid NewPlant: tag: must not contain U+0000 (\u0000)`)
	}
	return nil
}

// Validate checks f's fields other than the page size (which FindPlants
// defaults and bounds): a tag that is not UTF-8 or holds U+0000 is refused
// with CodeInvalidBody, the code of those string faults wherever they are
// (issue 12 names 40002 for the query parser too). No plant has such a tag,
// and PostgreSQL cannot compare one (it fails instead of finding nothing).
func (f *PlantFilter) Validate() error {
	switch {
	case f.Tag == nil:
	case !utf8.ValidString(*f.Tag):
		return Errorf(CodeInvalidBody, `invalid query parameter "tag": must be valid UTF-8`)
	case strings.IndexByte(*f.Tag, 0) >= 0:
		return Errorf(CodeInvalidBody, `invalid query parameter "tag": must not contain U+0000`)
	}
	return nil
}

// PlantFilter selects a page of one owner's plants, by id ascending.
type PlantFilter struct {
	Owner string
	Tag   *string // only plants with exactly this tag
	After *int64  // only ids greater than this one (keyset pagination)
	Limit int     // page size, 1..MaxPageSize (PlantService: 0 means DefaultPageSize)
}

// PlantService is what clients can do with plants. Every method is scoped to
// one owner; errors a client may see are *Error values.
type PlantService interface {
	// CreatePlant validates and stores p, and with it the webhook event of
	// the new plant. If the owner already has a plant with p.ID and the same
	// content, it returns the stored plant and created=false (idempotent
	// replay); with different content it returns a CodeConflict error.
	CreatePlant(ctx context.Context, p *Plant) (stored *Plant, created bool, err error)
	// FindPlantByID returns the owner's plant or a CodeNotFound error.
	FindPlantByID(ctx context.Context, owner string, id int64) (*Plant, error)
	// FindPlants returns a page of plants matching f and whether more follow.
	FindPlants(ctx context.Context, f PlantFilter) (plants []*Plant, more bool, err error)
	// DeletePlant deletes the owner's plant or returns a CodeNotFound error.
	DeletePlant(ctx context.Context, owner string, id int64) error
	// ImportPlants validates every plant, then stores them in one
	// transaction, skipping those whose (owner, id) exists, and returns how
	// many it stored. It is for loading data (benchmarks, moves from
	// elsewhere): no replay or conflict answers and no webhook events.
	ImportPlants(ctx context.Context, plants []*Plant) (stored int, err error)
}

// PlantStore is a backend's plants: rows in, rows out. It decides nothing a
// client sees (replay, conflict, messages): it reports with sentinel errors
// (ErrNotFound, ErrUnavailable, ErrContended).
type PlantStore interface {
	// InsertPlant stores p (CreatedAt set by the caller) and, in the same
	// transaction, ev's outbox rows: one pending delivery per enabled
	// subscription of p.Owner; it returns how many it wrote. When the owner
	// has a plant with p.ID already it writes nothing and returns that
	// plant. The lookup and the insert are atomic: of concurrent inserts of
	// one key, one stores and the others get its row. It returns
	// ErrContended when the key kept changing under it (created and
	// deleted concurrently).
	InsertPlant(ctx context.Context, p *Plant, ev *Event) (existing *Plant, deliveries int, err error)
	// FindPlant returns the owner's plant or ErrNotFound.
	FindPlant(ctx context.Context, owner string, id int64) (*Plant, error)
	// ListPlants returns at most f.Limit plants matching f, by id ascending.
	ListPlants(ctx context.Context, f PlantFilter) ([]*Plant, error)
	// DeletePlant deletes the owner's plant or returns ErrNotFound.
	DeletePlant(ctx context.Context, owner string, id int64) error
	// BulkInsertPlants stores plants (CreatedAt set by the caller) in one
	// transaction, skipping those whose (owner, id) exists, writing no
	// outbox rows, and returns how many it stored.
	BulkInsertPlants(ctx context.Context, plants []*Plant) (stored int, err error)
}
