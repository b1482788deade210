package postgres

import (
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// Array parameters without reflection. pgx encodes a []string,
// []*string or []time.Time parameter through reflection, boxing every
// element in an interface: one or two allocations per element, about ten
// per create in qCreatePlants. These types give pgx the same arrays, in
// the same binary format, as pgtype.ArrayGetter: each element is a pointer
// into the slice, as a type that pgx encodes through its Valuer interface
// (TextValuer, Int64Valuer, TimestamptzValuer), which boxes nothing. The
// parameters are pointers to these slices (no boxing either), all fields
// of one createArgs.

// oneDim returns the dimensions of a one-dimensional array of n elements
// (nil, NULL, is never what the store sends): for a batch's sizes, one of
// a table made once, which pgx only reads.
func oneDim(n int) []pgtype.ArrayDimension {
	if n < len(dims) {
		return dims[n : n+1 : n+1]
	}
	return []pgtype.ArrayDimension{{Length: int32(n), LowerBound: 1}}
}

// dims[n] is the dimension of an array of n elements.
var dims = func() []pgtype.ArrayDimension {
	d := make([]pgtype.ArrayDimension, 1024)
	for n := range d {
		d[n] = pgtype.ArrayDimension{Length: int32(n), LowerBound: 1}
	}
	return d
}()

// textArray is a TEXT[] parameter.
type textArray []string

func (a textArray) Dimensions() []pgtype.ArrayDimension { return oneDim(len(a)) }
func (a textArray) Index(i int) any                     { return (*textElem)(&a[i]) }
func (a textArray) IndexType() any                      { return (*textElem)(nil) }

// nullTextArray is a TEXT[] parameter whose nil elements are NULL.
type nullTextArray []*string

func (a nullTextArray) Dimensions() []pgtype.ArrayDimension { return oneDim(len(a)) }
func (a nullTextArray) IndexType() any                      { return (*textElem)(nil) }
func (a nullTextArray) Index(i int) any {
	if a[i] == nil {
		return nil
	}
	return (*textElem)(a[i])
}

type textElem string

func (e *textElem) TextValue() (pgtype.Text, error) {
	return pgtype.Text{String: string(*e), Valid: true}, nil
}

// int8Array is a BIGINT[] parameter.
type int8Array []int64

func (a int8Array) Dimensions() []pgtype.ArrayDimension { return oneDim(len(a)) }
func (a int8Array) Index(i int) any                     { return (*int8Elem)(&a[i]) }
func (a int8Array) IndexType() any                      { return (*int8Elem)(nil) }

type int8Elem int64

func (e *int8Elem) Int64Value() (pgtype.Int8, error) {
	return pgtype.Int8{Int64: int64(*e), Valid: true}, nil
}

// timestamptzArray is a TIMESTAMPTZ[] parameter.
type timestamptzArray []time.Time

func (a timestamptzArray) Dimensions() []pgtype.ArrayDimension { return oneDim(len(a)) }
func (a timestamptzArray) Index(i int) any                     { return (*timestamptzElem)(&a[i]) }
func (a timestamptzArray) IndexType() any                      { return (*timestamptzElem)(nil) }

type timestamptzElem time.Time

func (e *timestamptzElem) TimestamptzValue() (pgtype.Timestamptz, error) {
	return pgtype.Timestamptz{Time: time.Time(*e), Valid: true}, nil
}
