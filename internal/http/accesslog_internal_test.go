package http

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/plantstore/plantstore/internal/slogbuf"
)

// syncWriter records what is written, safely for concurrent writers; it
// counts the Write calls, and block, if set, holds every Write until it
// is closed.
type syncWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
	block  chan struct{}
}

func (w *syncWriter) Write(p []byte) (int, error) {
	if w.block != nil {
		<-w.block
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes++
	return w.buf.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func (w *syncWriter) Writes() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writes
}

var testTime = time.Date(2026, 5, 1, 10, 0, 0, 123456789, time.UTC)

// TestAccessLogJSON: the request log line formatted by the server is the
// one slog's JSON handler writes, byte for byte.
func TestAccessLogJSON(t *testing.T) {
	t.Parallel()
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		paris = time.FixedZone("CET", 3600)
	}
	for _, rec := range []accessRecord{
		{time: testTime, duration: 1840 * time.Microsecond, method: "POST", route: "/plants", owner: "alice", id: "5f2c0e9a7b1d4c3e", status: 200},
		{time: testTime.Add(-123456789), duration: 0, method: "GET", route: "unmatched", status: 404},
		{time: testTime.In(paris), duration: time.Nanosecond, method: "DELETE", route: "/plants/{id}", owner: "bob", id: "x", status: 204},
		{time: time.Now(), duration: time.Microsecond, method: "OPTIONS", route: "/healthz", status: 405},
		{time: testTime, duration: 12*time.Second + 345678*time.Microsecond, method: "PATCH", route: "/webhooks/{id}", owner: `q"uote\back`, id: `a"b\c{}<>&`, status: 500},
		{time: testTime, duration: 100 * time.Hour, method: "BREW", route: "unmatched", owner: "tab\tnl\ncr\rbell\x07del\x7f", id: "~!", status: 429},
		{time: testTime, duration: 999 * time.Microsecond, method: "GET", route: "/plants", owner: "plänt 🌱 \u2028\u2029 \xff\xfe end", id: "id", status: 200},
		{time: testTime, duration: 1<<63 - 1, method: "GET", route: "/plants", owner: strings.Repeat("é", 64), id: strings.Repeat("z", 128), status: 999},
	} {
		if got, want := string(appendAccessJSON(nil, &rec)), slogJSON(t, &rec); got != want {
			t.Errorf("appendAccessJSON:\n got %s\nwant %s", got, want)
		}
	}
}

// FuzzAccessLogJSON: any owner, request id, method and duration are
// written as slog writes them.
func FuzzAccessLogJSON(f *testing.F) {
	f.Add("alice", "5f2c0e9a7b1d4c3e", "POST", int64(1840000), int64(0))
	f.Add("\"\\\x00\u2028\xff", "", "GET", int64(0), int64(1))
	f.Add("é", "~", "BREW", int64(1<<62), int64(-1))
	f.Fuzz(func(t *testing.T, owner, id, method string, d, nanos int64) {
		if d < 0 {
			d = -d // durations are measured, never negative
		}
		rec := accessRecord{time: testTime.Add(time.Duration(nanos % 1e15)), duration: time.Duration(d), method: method, route: "/plants", owner: owner, id: id, status: 200}
		if got, want := string(appendAccessJSON(nil, &rec)), slogJSON(t, &rec); got != want {
			t.Errorf("appendAccessJSON:\n got %s\nwant %s", got, want)
		}
	})
}

// slogJSON is rec's line as slog's JSON handler writes it.
func slogJSON(t *testing.T, rec *accessRecord) string {
	t.Helper()
	var buf bytes.Buffer
	if err := slog.NewJSONHandler(&buf, nil).Handle(context.Background(), rec.record()); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// TestAccessLogConcurrent: lines logged from many goroutines at once all
// come out, each goroutine's in its order, in few writes; the slog path
// (a handler other than a slogbuf.Handler) writes the same lines.
func TestAccessLogConcurrent(t *testing.T) {
	t.Parallel()
	const goroutines, lines = 8, 1000
	for _, tt := range []struct {
		name string
		fast bool
	}{{"LogHandler", true}, {"SlogHandler", false}} {
		t.Run(tt.name, func(t *testing.T) {
			w := &syncWriter{}
			var h slog.Handler = slogbuf.New(w, false, nil)
			if !tt.fast {
				h = slog.NewJSONHandler(w, nil)
			}
			l := newAccessLog(h)
			if got, want := l.fast != nil, tt.fast; got != want {
				t.Fatalf("fast path = %v, want %v", got, want)
			}
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Go(func() {
					for i := range lines {
						l.log(&accessRecord{time: time.Now(), method: "GET", route: "/plants", id: fmt.Sprintf("%d-%d", g, i), status: 200})
					}
				})
			}
			wg.Wait()
			l.close()
			if f, ok := h.(interface{ Flush() error }); ok {
				f.Flush()
			}
			next := make([]int, goroutines)
			sc := bufio.NewScanner(strings.NewReader(w.String()))
			n := 0
			for sc.Scan() {
				var m map[string]any
				if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
					t.Fatalf("line %q: %v", sc.Text(), err)
				}
				var g, i int
				if _, err := fmt.Sscanf(m["request_id"].(string), "%d-%d", &g, &i); err != nil {
					t.Fatal(err)
				}
				if i != next[g] {
					t.Fatalf("goroutine %d: line %d after %d", g, i, next[g]-1)
				}
				next[g]++
				n++
			}
			if n != goroutines*lines {
				t.Fatalf("%d lines, want %d", n, goroutines*lines)
			}
			if tt.fast && w.Writes() > n/100 {
				t.Errorf("%d writes for %d lines: not buffered", w.Writes(), n)
			}
		})
	}
}

// TestAccessLogFlushInterval: a line is out exactly LogFlushInterval (the
// queue's) plus slogbuf.FlushInterval (the buffer's) after it was logged,
// with no flush, and not a moment before. The bubble's clock is fake: the
// test waits for no real time.
func TestAccessLogFlushInterval(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		w := &syncWriter{}
		l := newAccessLog(slogbuf.New(w, false, nil))
		l.log(&accessRecord{time: time.Now(), method: "GET", route: "/plants", status: 200})
		bound := LogFlushInterval + slogbuf.FlushInterval
		time.Sleep(bound - time.Nanosecond)
		synctest.Wait()
		if w.Writes() != 0 {
			t.Fatalf("the line was written before %v", bound)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if w.Writes() == 0 {
			t.Fatalf("the line is not written %v after", bound)
		}
		if !strings.Contains(w.String(), `"msg":"request"`) {
			t.Fatalf("wrote %q", w.String())
		}
	})
}

// TestAccessLogBackpressure: when the output blocks, a logger past
// accessLogMax queued lines waits instead of dropping lines.
func TestAccessLogBackpressure(t *testing.T) {
	t.Parallel()
	w := &syncWriter{block: make(chan struct{})}
	l := newAccessLog(slogbuf.New(w, false, nil))
	const n = 3 * accessLogMax
	var logged atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			l.log(&accessRecord{time: time.Now(), method: "GET", route: "/plants", id: strconv.Itoa(i), status: 200})
			logged.Add(1)
		}
	}()
	select {
	case <-done:
		t.Fatal("logged every line while the output was blocked")
	case <-time.After(300 * time.Millisecond):
	}
	if got := logged.Load(); got < accessLogBatch || got >= n {
		t.Fatalf("%d lines logged while blocked, want past %d and held back", got, accessLogBatch)
	}
	close(w.block)
	<-done
	l.close()
	l.handler.(*slogbuf.Handler).Flush()
	if got := strings.Count(w.String(), `"msg":"request"`); got != n {
		t.Fatalf("%d lines written, want %d", got, n)
	}
}

// TestAccessLogAfterClose: a line logged after close (a request that
// outlived Shutdown) is written at once.
func TestAccessLogAfterClose(t *testing.T) {
	t.Parallel()
	w := &syncWriter{}
	l := newAccessLog(slogbuf.New(w, false, nil))
	l.close()
	l.log(&accessRecord{time: time.Now(), method: "GET", route: "/plants", status: 200})
	if !strings.Contains(w.String(), `"msg":"request"`) {
		t.Fatal("the line is not written at once")
	}
}

// The hand-off and formatting of the request log line, then and now.
func BenchmarkAccessLog(b *testing.B) {
	rec := accessRecord{time: time.Now(), duration: 1840 * time.Microsecond, method: "POST", route: "/plants", owner: "alice", id: "5f2c0e9a7b1d4c3e", status: 200}
	attrs := func(l *slog.Logger) {
		l.LogAttrs(context.Background(), slog.LevelInfo, "request",
			slog.String("method", rec.method),
			slog.String("route", rec.route),
			slog.Int("status", rec.status),
			slog.Float64("duration_ms", durationMS(rec.duration)),
			slog.String("owner", rec.owner),
			slog.String("request_id", rec.id),
		)
	}
	// Before: slog's JSON handler on the request goroutine, discarded...
	b.Run("slog_sync_discard", func(b *testing.B) {
		l := slog.New(slog.NewJSONHandler(io.Discard, nil))
		b.ReportAllocs()
		for b.Loop() {
			attrs(l)
		}
	})
	// ... or with its write(2), to /dev/null.
	b.Run("slog_sync_devnull", func(b *testing.B) {
		f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		l := slog.New(slog.NewJSONHandler(f, nil))
		b.ReportAllocs()
		for b.Loop() {
			attrs(l)
		}
	})
	// Now: what the request goroutine does, queue a record. The batches
	// are written (to /dev/null) with the timer stopped, as another
	// goroutine writes them; "queue_and_write" counts them in.
	for _, write := range []bool{false, true} {
		name := "queue"
		if write {
			name = "queue_and_write"
		}
		b.Run(name, func(b *testing.B) {
			f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			l := newAccessLog(slogbuf.New(f, false, nil))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				l.log(&rec)
				if i++; i%(accessLogBatch-1) == 0 { // before log starts a goroutine
					if !write {
						b.StopTimer()
					}
					l.flush()
					if !write {
						b.StartTimer()
					}
				}
			}
			l.close()
		})
	}
	// The formatting of one line, off the request goroutine.
	b.Run("format", func(b *testing.B) {
		var buf []byte
		b.ReportAllocs()
		for b.Loop() {
			buf = appendAccessJSON(buf[:0], &rec)
		}
	})
}

// Recording a request's metrics, then (label values hashed and looked up
// per request) and now (children made once).
func BenchmarkRouteMetrics(b *testing.B) {
	b.Run("vec", func(b *testing.B) {
		m := newMetrics(prometheus.NewRegistry(), contractOperations)
		b.ReportAllocs()
		for b.Loop() {
			m.requests.WithLabelValues("/plants", "POST", strconv.Itoa(200)).Inc()
			m.duration.WithLabelValues("/plants", "POST").Observe(0.00184)
		}
	})
	b.Run("table", func(b *testing.B) {
		m := newMetrics(prometheus.NewRegistry(), contractOperations)
		rs := m.byOp["AddPlant"]
		b.ReportAllocs()
		for b.Loop() {
			rs.observe("POST", 200, 1840*time.Microsecond)
		}
	})
}
