// Package plantstore holds the domain of the Plant Store service: plants,
// tokens and webhook subscriptions; the service interfaces the transport
// calls (implemented once, in package service); the narrow row-store
// interfaces and Backend that each storage backend implements (sqlite,
// postgres); and the errors. Subpackages import it, never each other (see
// docs/architecture.md).
package plantstore

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
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
// (the query parser's too). No plant has such a tag,
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
	// DeletePlantIf deletes the owner's plant only while its ETag is one
	// that ifMatch (an If-Match value: entity tags, or "*") lists, by strong
	// comparison; otherwise it deletes nothing and returns a
	// CodePreconditionFailed error. No such plant is a CodeNotFound error.
	DeletePlantIf(ctx context.Context, owner string, id int64, ifMatch string) error
	// UpdatePlant applies upd (validated like a new plant's fields) to the
	// owner's plant and returns the plant as stored. With ifMatch non-empty
	// it changes the plant only while its ETag is one that ifMatch lists
	// (strong comparison), else a CodePreconditionFailed error. An empty upd
	// changes nothing. It writes no webhook event: events announce new
	// plants. No such plant is a CodeNotFound error.
	UpdatePlant(ctx context.Context, owner string, id int64, upd PlantUpdate, ifMatch string) (*Plant, error)
	// ImportPlants validates every plant, then stores them in one
	// transaction, skipping those whose (owner, id) exists, and returns how
	// many it stored. It is for loading data (benchmarks, moves from
	// elsewhere): no replay or conflict answers and no webhook events.
	ImportPlants(ctx context.Context, plants []*Plant) (stored int, err error)
}

// PlantStore is a backend's plants: rows in, rows out. It decides nothing a
// client sees (replay, conflict, messages): it reports with sentinel errors
// (ErrNotFound, ErrUnavailable, ErrContended, ErrChanged) and result
// values, and never changes its arguments.
//
// The writes take the change's event as the service made it (ev: its ID,
// Type and CreatedAt; nil: no event, for tests and tools) and write it in
// the change's transaction: the event row, with the owner's next Seq and the
// plant as the change left it, and its outbox rows, one pending delivery
// per enabled subscription of the owner whose EventMask takes ev.Type, due
// at ev.CreatedAt, holding the facts its body is rendered from when it is
// sent. Their results say what was written.
type PlantStore interface {
	// InsertPlant stores p (CreatedAt set by the caller) with its
	// plant.created event ev. When the owner has a plant with p.ID already
	// it writes nothing and returns that plant as Existing. The lookup and
	// the insert are atomic: of concurrent inserts of one key, one stores
	// and the others get its row. It returns ErrContended when the key kept
	// changing under it (created and deleted concurrently).
	InsertPlant(ctx context.Context, p *Plant, ev *Event) (InsertResult, error)
	// FindPlant returns the owner's plant or ErrNotFound.
	FindPlant(ctx context.Context, owner string, id int64) (*Plant, error)
	// ListPlants returns at most f.Limit plants matching f, by id ascending.
	ListPlants(ctx context.Context, f PlantFilter) ([]*Plant, error)
	// DeletePlant deletes the owner's plant, with its plant.deleted event
	// ev (the plant as it was), and returns the plant deleted, or
	// ErrNotFound.
	DeletePlant(ctx context.Context, owner string, id int64, ev *Event) (WriteResult, error)
	// UpdatePlant applies upd to the owner's plant, with its plant.updated
	// event ev (the plant as stored), and returns the plant as stored, or
	// ErrNotFound. With expect non-nil it changes the plant only while its
	// name and tag are expect's, atomically, and returns ErrChanged
	// (writing nothing) when they are not. A patch that leaves the plant's
	// name and tag as they are writes nothing, neither the row nor the
	// event (Seq 0), and returns the plant: decided in the write's
	// transaction, so atomically with and without expect.
	UpdatePlant(ctx context.Context, owner string, id int64, upd PlantUpdate, expect *Plant, ev *Event) (WriteResult, error)
	// DeletePlantIf deletes the owner's plant only while its name and tag
	// are expect's, atomically: ErrChanged (deleting nothing) when they are
	// not, ErrNotFound when there is no such plant. ev as DeletePlant's.
	DeletePlantIf(ctx context.Context, owner string, id int64, expect *Plant, ev *Event) (WriteResult, error)
	// BulkInsertPlants stores plants (CreatedAt set by the caller) in one
	// transaction, skipping those whose (owner, id) exists, writing no
	// events, and returns how many it stored.
	BulkInsertPlants(ctx context.Context, plants []*Plant) (stored int, err error)
}

// InsertResult is what PlantStore.InsertPlant did.
type InsertResult struct {
	// Existing is the owner's plant that had the key (nothing was
	// written); nil when the plant was stored.
	Existing *Plant
	// Seq is the event's (0: no event was written) and Deliveries how many
	// outbox rows it got.
	Seq        int64
	Deliveries int
}

// WriteResult is what a plant update or delete did.
type WriteResult struct {
	// Plant is the plant as the write left it: as stored (an update; the
	// plant as it is when the patch changed nothing), or as it was (a
	// delete).
	Plant *Plant
	// Seq is the event's (0: no event was written) and Deliveries how many
	// outbox rows it got.
	Seq        int64
	Deliveries int
}

// PlantUpdate is a change of a plant's fields (a JSON merge patch of name and
// tag): a nil Name keeps the name; SetTag false keeps the tag, SetTag true
// sets it to Tag (nil removes it).
type PlantUpdate struct {
	Name   *string
	Tag    *string
	SetTag bool
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
	return &out
}

// Validate checks the fields u sets against the limits of a new plant's,
// naming the contract's PlantPatch schema in its messages.
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

// ETag returns p's strong entity tag (RFC 9110 §8.8.3), quoted: 128 bits of
// a SHA-256 over its id, name and tag (length-prefixed, so no two contents
// share an input), so it changes exactly when the content does. The owner is
// not part of it: a tag is only ever compared for one owner's plant.
func (p *Plant) ETag() string {
	// The hashed bytes: the id (8 bytes, big-endian), the name's length
	// (uvarint) and bytes, then 0 (no tag) or 1 and the tag's length and
	// bytes. Built on the stack for usual sizes: the string is the one
	// allocation.
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
	sum := sha256.Sum256(b)
	var out [2 + 2*16]byte
	out[0], out[len(out)-1] = '"', '"'
	hex.Encode(out[1:len(out)-1], sum[:16])
	return string(out[:])
}

// MatchETag reports whether list, the value of an If-Match or If-None-Match
// header (RFC 9110 §13.1: "*" or #entity-tag), names etag (a quoted strong
// tag): "*" alone names any; otherwise one of its entity tags must equal
// etag. With weak false (strong comparison, for If-Match) a weak tag
// (W/"...") never matches; with weak true (If-None-Match) its opaque part is
// compared.
//
// The list is parsed whole and strictly: entity tags (W/ optional, then
// etagc characters, %x21 / %x23-7E / %x80-FF, between double quotes)
// separated by commas with optional spaces and tabs around them (empty
// elements are allowed, RFC 9110 §5.6.1). A value that is not such a list,
// such as junk after a tag (`"abc"x`), two tags without a comma, a quote
// that does not close or a character outside etagc, names nothing, whatever
// it lists before or after the fault. RFC 9110 §13.2 then evaluates the
// precondition as for a list with no matching tag: If-Match is false (412)
// and If-None-Match true (the full answer), as Go's net/http and nginx do for
// a value they cannot read; a 400 would refuse what the RFC asks to
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
