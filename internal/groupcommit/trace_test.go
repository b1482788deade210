package groupcommit_test

import (
	"context"
	"runtime"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/plantstore/plantstore/internal/groupcommit"
)

// With a Tracer, each batch is one span with its number of writes, linked
// to the span of each write's context, an error when Failed says so.
func TestQueue_Spans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	entered, release := make(chan struct{}, 2), make(chan struct{})
	q := groupcommit.New(groupcommit.Config[*op]{
		Apply: func(batch []*op) {
			entered <- struct{}{}
			<-release
			for _, o := range batch {
				o.result = o.n
			}
		},
		Tracer:     tp.Tracer("test"),
		SpanName:   "test commit",
		Attributes: []attribute.KeyValue{attribute.String("db.system.name", "test")},
		Failed:     func(o *op) bool { return o.n < 0 },
	})
	defer q.Close()

	// A first write holds the committer; three more, each under its own
	// request span, queue behind it and form the second batch.
	first := make(chan error, 1)
	go func() { first <- q.Do(context.Background(), &op{n: 100}) }()
	<-entered // the committer holds it
	tracer := tp.Tracer("requests")
	var parents []trace.SpanContext
	var wg sync.WaitGroup
	for _, n := range []int{1, 2, -3} {
		ctx, span := tracer.Start(context.Background(), "request")
		parents = append(parents, span.SpanContext())
		wg.Go(func() {
			defer span.End()
			if err := q.Do(ctx, &op{n: n}); err != nil {
				t.Error(err)
			}
		})
	}
	for q.Queued() < 3 { // all three queued behind the held batch
		runtime.Gosched()
	}
	close(release)
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatal(err)
	}

	var batches []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "test commit" {
			batches = append(batches, s)
		}
	}
	if got, want := len(batches), 2; got != want {
		t.Fatalf("%d batch spans, want %d", got, want)
	}
	one, three := batches[0], batches[1]
	if got, want := intAttr(one, "db.operation.batch.size"), int64(1); got != want {
		t.Errorf("first batch: size %d, want %d", got, want)
	}
	if got := len(one.Links()); got != 0 {
		t.Errorf("first batch (no request span): %d links, want 0", got)
	}
	if one.Status().Code == codes.Error {
		t.Errorf("first batch: status %v, want unset", one.Status())
	}
	if got, want := intAttr(three, "db.operation.batch.size"), int64(3); got != want {
		t.Errorf("second batch: size %d, want %d", got, want)
	}
	linked := map[trace.SpanID]bool{}
	for _, l := range three.Links() {
		linked[l.SpanContext.SpanID()] = true
	}
	for i, p := range parents {
		if !linked[p.SpanID()] {
			t.Errorf("second batch: no link to request %d's span", i)
		}
	}
	if got, want := three.Status().Code, codes.Error; got != want {
		t.Errorf("second batch (a write failed): status %v, want %v", got, want)
	}
	if got, want := intAttr(three, "plantstore.failed_writes"), int64(1); got != want {
		t.Errorf("second batch: failed_writes %d, want %d", got, want)
	}
	if got := stringAttr(three, "db.system.name"); got != "test" {
		t.Errorf("second batch: db.system.name %q, want test", got)
	}
}

func intAttr(s sdktrace.ReadOnlySpan, key string) int64 {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.AsInt64()
		}
	}
	return -1
}

func stringAttr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.AsString()
		}
	}
	return ""
}
