package plantstore

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits on a plant search and its filters.
const (
	MaxQueryLength = 200 // q, in characters
	MaxQueryWords  = 16  // q's words
	MaxFilterTags  = 64  // tag values in one query
)

// PlantSort is the order of a plant list: a key and a direction, ties
// broken by id in the same direction.
type PlantSort uint8

// The orders of a plant list; the zero value is by id ascending.
const (
	SortID PlantSort = iota
	SortIDDesc
	SortName
	SortNameDesc
	SortCreatedAt
	SortCreatedAtDesc
)

var sortNames = [...]string{"id", "-id", "name", "-name", "created_at", "-created_at"}

// SortNames lists the values of the sort parameter.
func SortNames() []string { return slices.Clone(sortNames[:]) }

// ParsePlantSort reads a sort parameter: one of SortNames.
func ParsePlantSort(s string) (PlantSort, error) {
	if i := slices.Index(sortNames[:], s); i >= 0 {
		return PlantSort(i), nil
	}
	return 0, Errorf(CodeInvalidQuery, `invalid query parameter "sort": must be one of %s`, strings.Join(sortNames[:], ", "))
}

// String returns the sort parameter's value for s ("-name").
func (s PlantSort) String() string {
	if int(s) < len(sortNames) {
		return sortNames[s]
	}
	return "sort(" + strconv.Itoa(int(s)) + ")"
}

// Key returns the field s orders by: "id", "name" or "created_at".
func (s PlantSort) Key() string { return strings.TrimPrefix(s.String(), "-") }

// Desc reports whether s orders descending.
func (s PlantSort) Desc() bool { return s%2 == 1 }

// PlantKey is a plant's position in a sort order: the page after it starts
// with the next plant in that order. Only the sort's field and ID are read.
type PlantKey struct {
	ID        int64
	Name      string    // SortName, SortNameDesc
	CreatedAt time.Time // SortCreatedAt, SortCreatedAtDesc (microseconds)
}

// KeyOf returns p's position in any order.
func KeyOf(p *Plant) *PlantKey {
	return &PlantKey{ID: p.ID, Name: p.Name, CreatedAt: p.CreatedAt}
}

// PlantFilter selects a page of one owner's plants: those that match every
// filter set, in Sort's order, after After.
type PlantFilter struct {
	Owner string
	// Tags: only plants whose tag is one of these (exactly); none: any.
	Tags []string
	// Words (textsearch.Words of the query): only plants whose name or tag
	// has, for each of these, a word that it is a prefix of.
	Words []string
	// Only plants created strictly after CreatedAfter and strictly before
	// CreatedBefore; a zero time is no bound.
	CreatedAfter, CreatedBefore time.Time
	Sort                        PlantSort
	After                       *PlantKey // keyset: only plants after this position in Sort's order
	Limit                       int       // page size, 1..MaxPageSize (PlantService: 0 means DefaultPageSize)
}

// Validate refuses a filter no plant could match for a reason the client
// should hear: a tag that is not UTF-8 or holds U+0000 (CodeInvalidBody, as
// everywhere: no plant has one, and PostgreSQL fails comparing one), too many
// tags or words, or bounds of creation time that leave nothing between them.
func (f *PlantFilter) Validate() error {
	if len(f.Tags) > MaxFilterTags {
		return Errorf(CodeInvalidQuery, `invalid query parameter "tag": at most %d values`, MaxFilterTags)
	}
	for _, tag := range f.Tags {
		switch {
		case !utf8.ValidString(tag):
			return Errorf(CodeInvalidBody, `invalid query parameter "tag": must be valid UTF-8`)
		case strings.IndexByte(tag, 0) >= 0:
			return Errorf(CodeInvalidBody, `invalid query parameter "tag": must not contain U+0000`)
		}
	}
	if len(f.Words) > MaxQueryWords {
		return Errorf(CodeInvalidQuery, `invalid query parameter "q": must have at most %d words`, MaxQueryWords)
	}
	if !f.CreatedAfter.IsZero() && !f.CreatedBefore.IsZero() && !f.CreatedAfter.Before(f.CreatedBefore) {
		return Errorf(CodeInvalidQuery, `invalid query parameters "created_after" and "created_before": created_after must be before created_before (both bounds are exclusive)`)
	}
	if int(f.Sort) >= len(sortNames) {
		return Errorf(CodeInvalidQuery, `invalid query parameter "sort": must be one of %s`, strings.Join(sortNames[:], ", "))
	}
	return nil
}

// TruncateTime is the precision plant times are stored and shown in on
// every backend: microseconds, UTC.
func TruncateTime(t time.Time) time.Time { return t.Truncate(time.Microsecond).UTC() }

// fingerprint returns 8 bytes that stand for f's query: what it selects and
// in which order, without the page (After, Limit) or the owner. Tags and
// words are a set: their order does not change the answer.
func (f *PlantFilter) fingerprint() [8]byte {
	h := sha256.New()
	var b []byte
	b = append(b, byte(f.Sort))
	put := func(list []string) {
		list = slices.Clone(list)
		slices.Sort(list)
		list = slices.Compact(list)
		b = binary.AppendUvarint(b, uint64(len(list)))
		for _, s := range list {
			b = binary.AppendUvarint(b, uint64(len(s)))
			b = append(b, s...)
		}
	}
	put(f.Tags)
	put(f.Words)
	for _, t := range []time.Time{f.CreatedAfter, f.CreatedBefore} {
		if t.IsZero() {
			b = append(b, 0)
		} else {
			b = append(b, 1)
			b = binary.AppendVarint(b, t.UnixMicro())
		}
	}
	h.Write(b)
	var out [8]byte
	copy(out[:], h.Sum(nil))
	return out
}

// cursorVersion is the first byte of every cursor this code makes.
const cursorVersion = 1

// Cursor returns the opaque after parameter of the page that follows last
// in f's query: the query's fingerprint and last's position in f.Sort's
// order, base64url.
func (f *PlantFilter) Cursor(last *Plant) string {
	fp := f.fingerprint()
	b := make([]byte, 0, 32+len(last.Name))
	b = append(b, cursorVersion, byte(f.Sort))
	b = append(b, fp[:]...)
	b = binary.AppendVarint(b, last.ID)
	switch f.Sort {
	case SortName, SortNameDesc:
		b = append(b, last.Name...)
	case SortCreatedAt, SortCreatedAtDesc:
		b = binary.AppendVarint(b, last.CreatedAt.UnixMicro())
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// errCursor is the message of a cursor that is not one.
var errCursor = errors.New(`invalid query parameter "after": not a cursor of this API (take it from the Link header of the previous page)`)

// SetCursor sets f.After from after, a Cursor of f's query. A plain id
// (digits, as the links of older servers carry) is the position after that
// id, by id ascending only. A cursor of another query (sort, q or a
// filter) is refused with a message saying so.
func (f *PlantFilter) SetCursor(after string) error {
	if id, err := strconv.ParseInt(after, 10, 64); err == nil {
		if f.Sort != SortID {
			return Errorf(CodeInvalidQuery, `invalid query parameter "after": a plant id is a position only with sort=id; take the cursor from the Link header of the previous page`)
		}
		f.After = &PlantKey{ID: id}
		return nil
	}
	b, err := base64.RawURLEncoding.DecodeString(after)
	if err != nil || len(b) < 11 || b[0] != cursorVersion {
		return &Error{Code: CodeInvalidQuery, Message: errCursor.Error()}
	}
	sort := PlantSort(b[1])
	fp := f.fingerprint()
	if sort != f.Sort || !bytes.Equal(b[2:10], fp[:]) {
		return Errorf(CodeInvalidQuery, `invalid query parameter "after": the cursor belongs to another query (its sort, q or filters differ); start again from the first page`)
	}
	rest := b[10:]
	id, n := binary.Varint(rest)
	if n <= 0 {
		return &Error{Code: CodeInvalidQuery, Message: errCursor.Error()}
	}
	rest = rest[n:]
	key := &PlantKey{ID: id}
	switch sort {
	case SortName, SortNameDesc:
		if !utf8.Valid(rest) {
			return &Error{Code: CodeInvalidQuery, Message: errCursor.Error()}
		}
		key.Name = string(rest)
	case SortCreatedAt, SortCreatedAtDesc:
		us, n := binary.Varint(rest)
		if n <= 0 || n != len(rest) {
			return &Error{Code: CodeInvalidQuery, Message: errCursor.Error()}
		}
		key.CreatedAt = time.UnixMicro(us).UTC()
	default:
		if len(rest) != 0 {
			return &Error{Code: CodeInvalidQuery, Message: errCursor.Error()}
		}
	}
	f.After = key
	return nil
}

// CountMode is what a client asked to be told about the number of plants a
// query matches (the Prefer header's count preference).
type CountMode uint8

// Count modes.
const (
	CountNone      CountMode = iota // no count: none is computed
	CountExact                      // every matching plant counted
	CountEstimated                  // a cheap figure, exact while small
)

// String returns the Prefer value of m ("exact", "estimated"; "" for none).
func (m CountMode) String() string {
	switch m {
	case CountExact:
		return "exact"
	case CountEstimated:
		return "estimated"
	}
	return ""
}
