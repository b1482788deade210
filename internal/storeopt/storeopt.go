// Package storeopt holds the options both row stores (sqlite, postgres)
// take, with one meaning on both: each DB embeds Options, so a caller sets
// db.OpTimeout, db.MaxBatch, db.OnCommit and db.TracerProvider the same way
// whatever the backend.
package storeopt

import (
	"time"

	"go.opentelemetry.io/otel/trace"
)

// DefaultOpTimeout bounds one call when Options.OpTimeout is zero, on every
// backend (serve's --db-timeout has the same default).
const DefaultOpTimeout = 10 * time.Second

// Options are a row store's settings that are not its driver's.
type Options struct {
	// OpTimeout bounds one call: a read, or a write's wait for its group
	// commit (and on SQLite for the file's write lock; on PostgreSQL for a
	// connection and the transaction). Past it the call fails with
	// plantstore.ErrUnavailable. Zero means DefaultOpTimeout; there is no
	// unbounded call.
	OpTimeout time.Duration
	// MaxBatch bounds how many writes share one commit (0: the group
	// commit's default, 256).
	MaxBatch int
	// OnCommit, if set, is called after each group commit with its number
	// of writes and how long it took (for metrics and tests). Set it
	// before Open.
	OnCommit func(writes int, took time.Duration)
	// TracerProvider, if set, gets an OpenTelemetry span of each group
	// commit batch; nil: none, at no cost. Set it before Open.
	TracerProvider trace.TracerProvider
}

// Timeout returns the bound of one call: OpTimeout, or DefaultOpTimeout
// when it is zero (or negative).
func (o *Options) Timeout() time.Duration {
	if o.OpTimeout > 0 {
		return o.OpTimeout
	}
	return DefaultOpTimeout
}
