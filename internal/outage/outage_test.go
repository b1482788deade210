package outage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestLog: an outage is two lines at the Log's levels, however many
// attempts fail in it (each at debug level); a success without failures
// logs nothing; a second outage is two more lines.
func TestLog(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewJSONHandler(&lockedWriter{&buf, &mu}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	l := New(logger, slog.LevelError, "webhook: claim tasks")
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l.now = func() time.Time { return clock }
	ctx := context.Background()

	l.OK(ctx)
	for i := range 47 {
		l.Fail(ctx, errors.New("connection refused"), "attempt", i)
		clock = clock.Add(500 * time.Millisecond)
	}
	if !l.Failing() {
		t.Fatal("Failing = false during the outage")
	}
	l.OK(ctx)
	l.OK(ctx)
	l.Fail(ctx, errors.New("again"))
	l.OK(ctx)

	type line struct {
		Level, Msg, Err string
		FailedAttempts  int           `json:"failed_attempts"`
		Duration        time.Duration `json:"duration"`
	}
	var got []line
	for s := range strings.Lines(buf.String()) {
		var l line
		if err := json.Unmarshal([]byte(s), &l); err != nil {
			t.Fatal(err)
		}
		got = append(got, l)
	}
	want := []line{
		{Level: "ERROR", Msg: "webhook: claim tasks: outage started", Err: "connection refused"},
		{Level: "WARN", Msg: "webhook: claim tasks: outage ended", FailedAttempts: 47, Duration: 23500 * time.Millisecond},
		{Level: "ERROR", Msg: "webhook: claim tasks: outage started", Err: "again"},
		{Level: "WARN", Msg: "webhook: claim tasks: outage ended", FailedAttempts: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(got), len(want), buf.String())
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if l.Failing() {
		t.Error("Failing = true after a success")
	}
}

// TestLogDebug: at debug level each failed attempt of an outage is a line.
func TestLogDebug(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	l := New(slog.New(slog.NewTextHandler(&lockedWriter{&buf, &mu}, &slog.HandlerOptions{Level: slog.LevelDebug})), slog.LevelWarn, "events: prune")
	for range 3 {
		l.Fail(context.Background(), errors.New("down"))
	}
	if got := strings.Count(buf.String(), "events: prune: failed again"); got != 2 {
		t.Errorf("%d debug lines, want 2:\n%s", got, buf.String())
	}
	if !strings.Contains(buf.String(), "failed_attempts=3") {
		t.Errorf("the last debug line does not count 3 attempts:\n%s", buf.String())
	}
}

// TestLogConcurrent: failures from several goroutines make one outage.
func TestLogConcurrent(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	l := New(slog.New(slog.NewJSONHandler(&lockedWriter{&buf, &mu}, nil)), slog.LevelError, "webhook: record attempt")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				l.Fail(context.Background(), errors.New("down"))
			}
		})
	}
	wg.Wait()
	l.OK(context.Background())
	if got := strings.Count(buf.String(), "outage started"); got != 1 {
		t.Errorf("%d outage started lines, want 1", got)
	}
	if !strings.Contains(buf.String(), `"failed_attempts":800`) {
		t.Errorf("the end does not count 800 attempts:\n%s", buf.String())
	}
}

type lockedWriter struct {
	buf *bytes.Buffer
	mu  *sync.Mutex
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}
