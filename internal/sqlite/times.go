package sqlite

import (
	"database/sql"
	"time"
)

// Every time is stored as integer Unix nanoseconds (UTC, sortable, no
// parsing per row); NULL where the domain has a nil *time.Time.

func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }

func nullNanos(t *time.Time) sql.NullInt64 {
	if t == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixNano(), Valid: true}
}

func nanosPtr(n sql.NullInt64) *time.Time {
	if !n.Valid {
		return nil
	}
	t := fromNanos(n.Int64)
	return &t
}

// nullString stores a nil *string as NULL.
func nullString(s *string) sql.NullString {
	if s == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: *s, Valid: true}
}

// nullEmpty stores "" as NULL.
func nullEmpty(s string) sql.NullString {
	return sql.NullString{String: s, Valid: s != ""}
}
