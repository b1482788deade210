// Package plantstore holds the domain of the Plant Store service: plants,
// tokens, webhook subscriptions and events; the service interfaces the
// transport calls; the row-store interfaces and Backend that each storage
// backend implements; and the errors. It imports the standard library only
// (docs/architecture.md).
package plantstore

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits on plant fields, in Unicode code points, as the contract states them.
const (
	MaxNameLength = 256
	MaxTagLength  = 64
)

// Pagination limits for FindPlants.
const (
	DefaultPageSize = 100
	MaxPageSize     = 1000
)

// EstimateExactUpTo is how many matching plants an estimated count counts
// one by one before it estimates.
const EstimateExactUpTo = 1000

// Plant is a plant of one owner. Its key is (Owner, ID): ids are per owner.
type Plant struct {
	Owner     string
	ID        int64
	Name      string
	Tag       *string   // nil when the plant has no tag
	CreatedAt time.Time // microseconds, UTC (TruncateTime)
	UpdatedAt time.Time // the last change of name or tag; CreatedAt until one
}

// SameContent reports whether p and q carry the same id, name and tag: the
// test of an idempotent replay (else a conflict).
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
	// PostgreSQL cannot store U+0000 in text: neither backend takes it.
	if strings.IndexByte(p.Name, 0) >= 0 {
		return Errorf(CodeInvalidBody, `invalid NewPlant: name: must not contain U+0000 (\u0000)`)
	}
	if p.Tag != nil && strings.IndexByte(*p.Tag, 0) >= 0 {
		return Errorf(CodeInvalidBody, `invalid NewPlant: tag: must not contain U+0000 (\u0000)`)
	}
	return nil
}

// PlantService is what clients can do with plants, scoped to one owner;
// errors a client may see are *Error values.
type PlantService interface {
	// CreatePlant validates and stores p with its plant.created event. If
	// the owner has a plant with p.ID and the same content, it returns that
	// plant and created=false (replay); other content is CodeConflict.
	CreatePlant(ctx context.Context, p *Plant) (stored *Plant, created bool, err error)
	// CreatePlants validates and stores a batch of one owner's plants,
	// each as CreatePlant would, in one transaction: all or none. An
	// invalid item, an id given twice or a conflict fails the batch with
	// an *Error whose Index names the item. It returns the plants as
	// stored (or replayed), in the batch's order.
	CreatePlants(ctx context.Context, plants []*Plant) ([]*Plant, error)
	// FindPlantByID returns the owner's plant or a CodeNotFound error.
	FindPlantByID(ctx context.Context, owner string, id int64) (*Plant, error)
	// FindPlants returns a page of plants matching f and whether more follow.
	FindPlants(ctx context.Context, f PlantFilter) (plants []*Plant, more bool, err error)
	// CountPlants returns how many plants match f (its page aside: After
	// and Limit are not read), as mode asks (CountExact or CountEstimated).
	CountPlants(ctx context.Context, f PlantFilter, mode CountMode) (int64, error)
	// DeletePlant deletes the owner's plant or returns a CodeNotFound error.
	DeletePlant(ctx context.Context, owner string, id int64) error
	// DeletePlantIf deletes the owner's plant only while ifMatch (an
	// If-Match value) lists its ETag, by strong comparison, else
	// CodePreconditionFailed. No such plant is CodeNotFound.
	DeletePlantIf(ctx context.Context, owner string, id int64, ifMatch string) error
	// UpdatePlant applies upd (validated like a new plant's fields) to the
	// owner's plant with its plant.updated event, and returns the plant as
	// stored. With ifMatch non-empty it changes the plant only while
	// ifMatch lists its ETag, else CodePreconditionFailed. A patch that
	// changes nothing writes neither row nor event. No such plant is
	// CodeNotFound.
	UpdatePlant(ctx context.Context, owner string, id int64, upd PlantUpdate, ifMatch string) (*Plant, error)
	// ImportPlants validates every plant, then stores them in one
	// transaction, skipping ids the owner has, with no events, and returns
	// how many it stored.
	ImportPlants(ctx context.Context, plants []*Plant) (stored int, err error)
}

// PlantStore is a backend's plants: rows in, rows out, sentinel errors and
// result values; it decides nothing a client sees and never changes its
// arguments.
//
// The writes take the change's event as the service made it (ev; nil: no
// event, for tests and tools) and write it in the change's transaction: the
// event row with the owner's next Seq, and one pending delivery, due at
// ev.CreatedAt, per enabled subscription of the owner whose EventMask takes
// ev.Type.
type PlantStore interface {
	// InsertPlant stores p with its plant.created event ev, or, when the
	// owner has a plant with p.ID, writes nothing and returns it as
	// Existing, atomically: of concurrent inserts of one key, one stores.
	// ErrContended: the key kept changing under it.
	InsertPlant(ctx context.Context, p *Plant, ev *Event) (InsertResult, error)
	// InsertPlants stores plants, each with its plant.created event evs[i]
	// (nil: none), in one transaction: all of them or none. The plants
	// are of one owner, each id once. A plant whose key the owner already
	// has with the same content (Plant.SameContent) is not written again:
	// its InsertResult.Existing is the stored plant. When a key is taken
	// by a plant of other content nothing is stored and the error is a
	// *ConflictError naming the first such plant. The results are in
	// plants' order.
	InsertPlants(ctx context.Context, plants []*Plant, evs []*Event) ([]InsertResult, error)
	// FindPlant returns the owner's plant or ErrNotFound.
	FindPlant(ctx context.Context, owner string, id int64) (*Plant, error)
	// ListPlants returns at most f.Limit plants matching f, in f.Sort's
	// order after f.After.
	ListPlants(ctx context.Context, f PlantFilter) ([]*Plant, error)
	// CountPlants returns how many plants match f, f.After and f.Limit
	// aside. With estimate it does a bounded amount of work: the count is
	// exact while at most EstimateExactUpTo plants match, and beyond that
	// an estimate (from the planner, an index or a sample) of at least
	// EstimateExactUpTo+1.
	CountPlants(ctx context.Context, f PlantFilter, estimate bool) (int64, error)
	// DeletePlant deletes the owner's plant with its plant.deleted event ev
	// and returns the plant deleted, or ErrNotFound.
	DeletePlant(ctx context.Context, owner string, id int64, ev *Event) (WriteResult, error)
	// UpdatePlant applies upd to the owner's plant with its plant.updated
	// event ev and returns the plant as stored, or ErrNotFound. With expect
	// non-nil it writes only while name and tag are expect's (else
	// ErrChanged). A patch that changes nothing writes neither row nor
	// event (Seq 0); each is decided in the write's transaction.
	UpdatePlant(ctx context.Context, owner string, id int64, upd PlantUpdate, expect *Plant, ev *Event) (WriteResult, error)
	// DeletePlantIf is DeletePlant while name and tag are expect's, atomically
	// (else ErrChanged).
	DeletePlantIf(ctx context.Context, owner string, id int64, expect *Plant, ev *Event) (WriteResult, error)
	// BulkInsertPlants stores plants in one transaction, skipping existing
	// keys, with no events, and returns how many it stored.
	BulkInsertPlants(ctx context.Context, plants []*Plant) (stored int, err error)
}

// InsertResult is what PlantStore.InsertPlant did.
type InsertResult struct {
	Existing   *Plant // the plant that had the key (nothing written); nil: stored
	Seq        int64  // the event's; 0: no event written
	Deliveries int    // the event's outbox rows
}

// ConflictError is PlantStore.InsertPlants's refusal of a batch: the
// plant at Index has the key of Existing, a plant of other content.
type ConflictError struct {
	Index    int
	Existing *Plant
}

// Error implements the error interface.
func (e *ConflictError) Error() string {
	return fmt.Sprintf("plant %d (item %d) exists with other content", e.Existing.ID, e.Index)
}

// WriteResult is what a plant update or delete did.
type WriteResult struct {
	Plant      *Plant // as stored (an update), or as it was (a delete)
	Seq        int64  // the event's; 0: no event written
	Deliveries int    // the event's outbox rows
}

// PlantUpdate is a change of a plant's fields (a JSON merge patch of name and
// tag): a nil Name keeps the name; SetTag false keeps the tag, SetTag true
// sets it to Tag (nil removes it).
type PlantUpdate struct {
	Name   *string
	Tag    *string
	SetTag bool
	At     time.Time // the plant's UpdatedAt if it changes (the service sets it)
}

// Empty reports whether u changes nothing by itself (an empty patch).
func (u *PlantUpdate) Empty() bool { return u.Name == nil && !u.SetTag }

// Apply returns a copy of p with u applied.
func (u *PlantUpdate) Apply(p *Plant) *Plant {
	out := *p
	if u.Name != nil {
		out.Name = *u.Name
	}
	if u.SetTag {
		out.Tag = u.Tag
	}
	if !u.At.IsZero() && !u.Empty() {
		out.UpdatedAt = u.At
	}
	return &out
}

// Validate checks the fields u sets as a new plant's, naming PlantPatch.
func (u *PlantUpdate) Validate() error {
	p := Plant{Name: "-"} // a kept name is valid already
	if u.Name != nil {
		p.Name = *u.Name
	}
	if u.SetTag {
		p.Tag = u.Tag
	}
	if err := p.Validate(); err != nil {
		var e *Error
		if errors.As(err, &e) {
			return Errorf(e.Code, "%s", strings.Replace(e.Message, "invalid NewPlant:", "invalid PlantPatch:", 1))
		}
		return err
	}
	return nil
}

// LastUpdated returns p's UpdatedAt, or its CreatedAt when UpdatedAt is
// unset (a plant made by its creator, not read back from a store).
func (p *Plant) LastUpdated() time.Time {
	if p.UpdatedAt.IsZero() {
		return p.CreatedAt
	}
	return p.UpdatedAt
}

// ETag returns p's strong entity tag (RFC 9110 §8.8.3), quoted: 128 bits of
// a SHA-256 over its id, name, tag and UpdatedAt (to the microsecond),
// length-prefixed so that no two plants share an input. UpdatedAt is in
// every answer, so a plant renamed and renamed back is a new representation
// with a new tag. Tags are only compared within one owner.
func (p *Plant) ETag() string {
	// Built on the stack for usual sizes: the string is the one allocation.
	var stack [128]byte
	b := binary.BigEndian.AppendUint64(stack[:0], uint64(p.ID))
	b = binary.AppendUvarint(b, uint64(len(p.Name)))
	b = append(b, p.Name...)
	if p.Tag != nil {
		b = append(b, 1)
		b = binary.AppendUvarint(b, uint64(len(*p.Tag)))
		b = append(b, *p.Tag...)
	} else {
		b = append(b, 0)
	}
	b = binary.BigEndian.AppendUint64(b, uint64(p.UpdatedAt.UnixMicro()))
	sum := sha256.Sum256(b)
	var out [2 + 2*16]byte
	out[0], out[len(out)-1] = '"', '"'
	hex.Encode(out[1:len(out)-1], sum[:16])
	return string(out[:])
}

// MatchETag reports whether list, an If-Match or If-None-Match value (RFC
// 9110 §13.1: "*" or #entity-tag), names etag, a quoted strong tag. With
// weak false (If-Match) a weak tag never matches; with weak true
// (If-None-Match) its opaque part is compared.
//
// The list is parsed whole and strictly (RFC 9110 §5.6.1): a value that is
// not such a list names nothing, whatever it lists around the fault, so
// If-Match fails (412) and If-None-Match passes, as net/http and nginx do
// for a value they cannot read; a 400 would refuse what the RFC asks to
// evaluate.
func MatchETag(list, etag string, weak bool) bool {
	s := strings.Trim(list, " \t")
	if s == "*" {
		return true
	}
	matched, afterTag := false, false
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == ' ' || c == '\t':
			i++
		case c == ',':
			afterTag = false
			i++
		case afterTag:
			return false // junk after a tag, or two tags without a comma
		default:
			isWeak := strings.HasPrefix(s[i:], "W/")
			if isWeak {
				i += 2
			}
			if i == len(s) || s[i] != '"' {
				return false
			}
			end := i + 1
			for end < len(s) && s[end] != '"' {
				if !isETagChar(s[end]) {
					return false
				}
				end++
			}
			if end == len(s) {
				return false // the quote does not close
			}
			if s[i:end+1] == etag && (weak || !isWeak) {
				matched = true
			}
			i, afterTag = end+1, true
		}
	}
	return matched
}

// isETagChar reports whether c is an etagc of RFC 9110 §8.8.3: any visible
// character but the double quote, or obs-text.
func isETagChar(c byte) bool {
	return c == 0x21 || 0x23 <= c && c <= 0x7e || c >= 0x80
}
