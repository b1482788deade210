// Package portable is the portable schema: every table that holds data, as
// both backends have it (same names, same columns, same keys), with values
// in one Go form, and the interface through which a backend's tables are
// read and written as such rows (TableStore). It is what plantstore copy
// (dbcopy) moves between backends, what export (plantlines) reads and what a
// backup counts; the row stores implement TableStore in their copy.go.
package portable

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"iter"
	"time"

	"github.com/plantstore/plantstore"
)

// Tables, the schema: derived tables are not in it (PostgreSQL's
// webhook_owners, which a backend rebuilds from webhook_subscriptions), nor
// the migration tables. storetest checks it against each backend's real
// columns, so a migration that adds a column must add it here too.

// ColumnType is the Go form of a column's values.
type ColumnType uint8

// Column types.
const (
	TypeText  ColumnType = iota + 1 // string
	TypeInt                         // int64
	TypeBytes                       // []byte
	// TypeTime is a time.Time in UTC cut to whole microseconds, the
	// precision both backends keep (PostgreSQL's timestamptz; SQLite
	// stores integer nanoseconds).
	TypeTime
)

// String names the type: text, int, bytes or time.
func (t ColumnType) String() string {
	switch t {
	case TypeText:
		return "text"
	case TypeInt:
		return "int"
	case TypeBytes:
		return "bytes"
	case TypeTime:
		return "time"
	}
	return fmt.Sprintf("ColumnType(%d)", uint8(t))
}

// Column is one column of a Table.
type Column struct {
	Name string
	Type ColumnType
	Null bool // whether the value may be nil (SQL NULL)
}

// Table is a table of the portable schema. Its first Key columns are its
// primary key (columns are in that order, which need not be the database's); rows are read in key order: text by bytes (UTF-8 byte order,
// SQLite's BINARY and PostgreSQL's "C" collation), integers by value.
type Table struct {
	Name    string
	Columns []Column
	Key     int
}

// Row is one row of a Table: its values in column order, each a string, an
// int64, a []byte, a time.Time or nil (NULL), as the column's type says.
type Row []any

func text(name string) Column     { return Column{Name: name, Type: TypeText} }
func textNull(name string) Column { return Column{Name: name, Type: TypeText, Null: true} }
func integer(name string) Column  { return Column{Name: name, Type: TypeInt} }
func intNull(name string) Column  { return Column{Name: name, Type: TypeInt, Null: true} }
func blob(name string) Column     { return Column{Name: name, Type: TypeBytes} }
func blobNull(name string) Column { return Column{Name: name, Type: TypeBytes, Null: true} }
func stamp(name string) Column    { return Column{Name: name, Type: TypeTime} }
func stampNull(name string) Column {
	return Column{Name: name, Type: TypeTime, Null: true}
}

// Tables is the portable schema, in the order a copy writes it (a
// subscription before its deliveries, for readers of a copy in progress).
var Tables = []*Table{
	{Name: "plants", Key: 2, Columns: []Column{
		text("owner"), integer("id"), text("name"), textNull("tag"), stamp("created_at"), stamp("updated_at"),
	}},
	{Name: "tokens", Key: 1, Columns: []Column{
		text("id"), blob("hash"), text("owner"), text("scopes"),
		stamp("created_at"), stampNull("expires_at"), stampNull("revoked_at"), textNull("last4"),
	}},
	{Name: "webhook_subscriptions", Key: 1, Columns: []Column{
		text("id"), text("owner"), text("url"), text("description"), text("secret"),
		textNull("previous_secret"), stampNull("previous_secret_until"), stamp("created_at"),
		stampNull("disabled_at"), textNull("disabled_reason"), stampNull("failing_since"), integer("event_mask"),
	}},
	{Name: "webhook_deliveries", Key: 2, Columns: []Column{
		text("message_id"), text("subscription_id"), text("owner"), integer("plant_id"),
		text("event_type"), intNull("seq"), text("name"), textNull("tag"), integer("typed"), blobNull("stored_body"),
		text("state"), integer("attempts"), stampNull("next_attempt_at"), stampNull("lease_until"),
		stamp("created_at"), stampNull("recovered_at"), stampNull("plant_created_at"), stampNull("plant_updated_at"),
	}},
	{Name: "webhook_attempts", Key: 3, Columns: []Column{
		text("subscription_id"), text("message_id"), integer("attempt"), integer("plant_id"),
		stamp("attempted_at"), intNull("status_code"), textNull("error"), integer("duration_us"),
		text("state"), stampNull("next_attempt_at"), textNull("response_body"),
	}},
	{Name: "events", Key: 2, Columns: []Column{
		text("owner"), integer("seq"), text("id"), text("type"), integer("plant_id"), text("name"), textNull("tag"), stamp("created_at"),
		stampNull("plant_created_at"), stampNull("plant_updated_at"),
	}},
	{Name: "event_sequences", Key: 1, Columns: []Column{
		text("owner"), integer("last"),
	}},
}

// TableNamed returns the table of Tables with that name, or nil.
func TableNamed(name string) *Table {
	for _, t := range Tables {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// ColumnNames returns t's column names.
func (t *Table) ColumnNames() []string {
	names := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		names[i] = c.Name
	}
	return names
}

// Index returns the position of t's column of that name, or -1.
func (t *Table) Index(name string) int {
	for i, c := range t.Columns {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// Normalize converts a value as a driver returned it to the Go form of the
// column's type (a []byte of a text column to a string, a time to UTC cut to
// microseconds; SQLite's integer nanoseconds to a time), or fails.
func (c *Column) Normalize(v any) (any, error) {
	if v == nil {
		if !c.Null {
			return nil, fmt.Errorf("column %s: NULL in a NOT NULL column", c.Name)
		}
		return nil, nil
	}
	switch c.Type {
	case TypeText:
		switch v := v.(type) {
		case string:
			return v, nil
		case []byte:
			return string(v), nil
		}
	case TypeInt:
		switch v := v.(type) {
		case int64:
			return v, nil
		case int32:
			return int64(v), nil
		case int:
			return int64(v), nil
		}
	case TypeBytes:
		switch v := v.(type) {
		case []byte:
			return bytes.Clone(v), nil
		case string:
			return []byte(v), nil
		}
	case TypeTime:
		switch v := v.(type) {
		case time.Time:
			return v.UTC().Truncate(time.Microsecond), nil
		case int64: // SQLite: Unix nanoseconds
			return time.Unix(0, v).UTC().Truncate(time.Microsecond), nil
		}
	}
	return nil, fmt.Errorf("column %s: unexpected value of type %T", c.Name, v)
}

// Cursor is a driver's result rows, as Table.Scan reads them.
type Cursor interface {
	Next() bool
	// Values returns the current row's values as the driver gives them.
	Values() ([]any, error)
	Err() error
}

// Scan returns an iterator over the rows of c, t's columns in order,
// normalized (Column.Normalize); wrap adds the backend's context to an
// error. The caller closes c once the iterator is done.
func (t *Table) Scan(c Cursor, wrap func(error) error) iter.Seq2[Row, error] {
	return func(yield func(Row, error) bool) {
		for c.Next() {
			vals, err := c.Values()
			if err != nil {
				yield(nil, wrap(err))
				return
			}
			row := make(Row, len(vals))
			for i, v := range vals {
				if row[i], err = t.Columns[i].Normalize(v); err != nil {
					yield(nil, wrap(err))
					return
				}
			}
			if !yield(row, nil) {
				return
			}
		}
		if err := c.Err(); err != nil {
			yield(nil, wrap(err))
		}
	}
}

// CompareKeys orders a and b, rows of t, by t's key: -1, 0 or +1.
func (t *Table) CompareKeys(a, b Row) int {
	for i := range t.Key {
		if c := compareValues(a[i], b[i]); c != 0 {
			return c
		}
	}
	return 0
}

// EqualRows reports whether a and b, rows of t, hold the same values.
func (t *Table) EqualRows(a, b Row) bool {
	for i := range t.Columns {
		if compareValues(a[i], b[i]) != 0 {
			return false
		}
	}
	return true
}

// compareValues orders two values of one column: nil first, then by value
// (strings and bytes by bytes).
func compareValues(a, b any) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	switch a := a.(type) {
	case string:
		b, _ := b.(string)
		return cmp.Compare(a, b)
	case int64:
		b, _ := b.(int64)
		return cmp.Compare(a, b)
	case []byte:
		b, _ := b.([]byte)
		return bytes.Compare(a, b)
	case time.Time:
		b, _ := b.(time.Time)
		return a.Compare(b)
	}
	panic(fmt.Sprintf("portable: a row value of type %T", a))
}

// TableChecksum is a running checksum of a table's rows, taken in key order:
// SHA-256 over an encoding of each value that tells types, NULLs and
// lengths apart (times as Unix microseconds). Equal rows in equal order give
// equal sums on every backend.
type TableChecksum struct {
	h    hash.Hash
	buf  []byte
	Rows int64
}

// NewTableChecksum returns an empty checksum.
func NewTableChecksum() *TableChecksum { return &TableChecksum{h: sha256.New()} }

// Add adds row to the sum.
func (s *TableChecksum) Add(row Row) {
	b := s.buf[:0]
	for _, v := range row {
		switch v := v.(type) {
		case nil:
			b = append(b, 0)
		case string:
			b = append(b, 1)
			b = binary.AppendUvarint(b, uint64(len(v)))
			b = append(b, v...)
		case int64:
			b = append(b, 2)
			b = binary.BigEndian.AppendUint64(b, uint64(v))
		case []byte:
			b = append(b, 3)
			b = binary.AppendUvarint(b, uint64(len(v)))
			b = append(b, v...)
		case time.Time:
			b = append(b, 4)
			b = binary.BigEndian.AppendUint64(b, uint64(v.UnixMicro()))
		default:
			panic(fmt.Sprintf("portable: a row value of type %T", v))
		}
	}
	s.h.Write(b)
	s.buf = b
	s.Rows++
}

// Sum returns the checksum, "sha256:" and 64 hex digits.
func (s *TableChecksum) Sum() string { return fmt.Sprintf("sha256:%x", s.h.Sum(nil)) }

// TableStore is a backend's tables as portable rows: what plantstore copy
// and export read and write, under no business rule (a copy moves rows as
// they are).
type TableStore interface {
	// Snapshot starts a read of every table as of one instant, consistent
	// while writers go on; Close releases it.
	Snapshot(ctx context.Context) (Snapshot, error)
	// ReplaceRows deletes t's rows with the keys of del (rows of which only
	// the key is read) and inserts ins, in one transaction; a row of ins
	// whose key exists after the deletes fails the call (plantstore.ErrExists).
	ReplaceRows(ctx context.Context, t *Table, del, ins []Row) error
}

// Snapshot is a consistent read of a backend's tables (TableStore).
type Snapshot interface {
	// Rows yields t's rows in key order, normalized (Column.Normalize);
	// each row is the caller's to keep. It stops at the first error.
	Rows(ctx context.Context, t *Table) iter.Seq2[Row, error]
	// Count returns how many rows t has.
	Count(ctx context.Context, t *Table) (int64, error)
	Close() error
}

// Database is a backend whose tables can also be read and written as portable
// rows: what copy, export, backups and the conformance suite open.
type Database interface {
	plantstore.Backend
	TableStore
}
