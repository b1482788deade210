package postgres

import (
	"errors"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/groupcommit"
)

// TracerName is the instrumentation scope of the batch spans.
const TracerName = "github.com/plantstore/plantstore/postgres"

// traced adds the batch spans to c when db.TracerProvider is set: one span
// per batch, "postgres commit", with its number of writes, linked to the
// requests' spans, an error when a write failed for the storage (not for a
// missing row or a contended key).
func (db *DB) traced(c groupcommit.Config[*writeOp]) groupcommit.Config[*writeOp] {
	if db.TracerProvider == nil {
		return c
	}
	c.Tracer = db.TracerProvider.Tracer(TracerName)
	c.SpanName = "postgres commit"
	c.Attributes = []attribute.KeyValue{semconv.DBSystemNamePostgreSQL}
	c.Failed = func(op *writeOp) bool {
		return op.err != nil && !errors.Is(op.err, plantstore.ErrNotFound) && !errors.Is(op.err, plantstore.ErrContended)
	}
	return c
}
