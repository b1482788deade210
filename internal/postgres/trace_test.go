package postgres_test

import (
	"errors"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/postgres"
	"github.com/plantstore/plantstore/internal/testkit/pgtest"
)

// With a TracerProvider each group commit is a "postgres commit" span with
// its number of writes, linked to the caller's span; a delete of a missing
// row is an answer, not a failed batch.
func TestBatchSpans(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	db := postgres.NewDB(pgtest.NewDatabase(t))
	db.TracerProvider = tp
	db = postgres.OpenMigrated(t, db)

	ctx, request := tp.Tracer("test").Start(t.Context(), "request")
	if _, _, err := insert3(db.InsertPlant(ctx, &plantstore.Plant{Owner: "alice", ID: 1, Name: "Fern", CreatedAt: fixedNow}, nil)); err != nil {
		t.Fatal(err)
	}
	if err := errOnly(db.DeletePlant(ctx, "alice", 2, nil)); !errors.Is(err, plantstore.ErrNotFound) {
		t.Fatalf("delete of a missing plant: %v, want ErrNotFound", err)
	}
	request.End()

	var batches []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "postgres commit" {
			batches = append(batches, s)
		}
	}
	if got, want := len(batches), 2; got != want {
		t.Fatalf("%d postgres commit spans, want %d", got, want)
	}
	for i, s := range batches {
		attrs := map[string]string{}
		for _, kv := range s.Attributes() {
			attrs[string(kv.Key)] = kv.Value.Emit()
		}
		if attrs["db.operation.batch.size"] != "1" || attrs["db.system.name"] != "postgresql" {
			t.Errorf("batch %d: attributes %v, want batch size 1 and db.system.name postgresql", i, attrs)
		}
		if links := s.Links(); len(links) != 1 || links[0].SpanContext.SpanID() != request.SpanContext().SpanID() {
			t.Errorf("batch %d: links %v, want the request's span", i, links)
		}
		if s.Status().Code == codes.Error {
			t.Errorf("batch %d: status %v, want unset", i, s.Status())
		}
	}
}
