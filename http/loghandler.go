package http

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"
)

// Log output buffering. A log line costs a write(2) when it goes straight to
// stderr; the server's log goes through a buffer instead, written out in
// large writes.
const (
	// LogFlushInterval bounds how long a log line waits in the buffer of a
	// LogHandler, and a request log line in the server's queue (so a
	// request's line is out at most twice this after its answer).
	LogFlushInterval = 50 * time.Millisecond

	// logBufferSize is the buffer size: a write that would overflow it
	// writes the buffer out first.
	logBufferSize = 64 << 10
)

// LogHandler is the server's slog.Handler: slog's JSON handler (or text
// handler) writing into a buffer that goes to the underlying writer in
// large writes, at the latest LogFlushInterval after a line entered it,
// at once for a line at level WARN or above, and on Flush. Server.Close
// flushes it (when it is its Logger's handler), and so must the program
// after its last log line. Safe for concurrent use.
//
// Given a LogHandler in JSON mode, with neither ReplaceAttr nor AddSource
// and no attributes or groups added, the Server formats its request log
// lines itself, in the same form as slog's JSON handler, which is several
// times faster (see accesslog.go).
type LogHandler struct {
	h     slog.Handler // slog's handler, writing into out
	out   *logBuffer
	plain bool // JSON, no ReplaceAttr, no AddSource, no With: lines may be appended to out directly
}

var _ slog.Handler = (*LogHandler)(nil)

// NewLogHandler returns a LogHandler writing to w: JSON lines, or
// slog's text format when text is true. opts may be nil.
func NewLogHandler(w io.Writer, text bool, opts *slog.HandlerOptions) *LogHandler {
	if opts == nil {
		opts = &slog.HandlerOptions{}
	}
	out := &logBuffer{w: w}
	h := &LogHandler{out: out}
	if text {
		h.h = slog.NewTextHandler(out, opts)
	} else {
		h.h = slog.NewJSONHandler(out, opts)
		h.plain = opts.ReplaceAttr == nil && !opts.AddSource
	}
	return h
}

// Enabled reports whether the handler handles records at level l.
func (h *LogHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

// Handle formats r into the buffer and, when r is a warning or an error,
// writes the buffer out.
func (h *LogHandler) Handle(ctx context.Context, r slog.Record) error {
	err := h.h.Handle(ctx, r)
	if r.Level >= slog.LevelWarn {
		if ferr := h.out.flush(); err == nil {
			err = ferr
		}
	}
	return err
}

// WithAttrs returns a LogHandler whose records carry attrs too, writing
// into the same buffer.
func (h *LogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &LogHandler{h: h.h.WithAttrs(attrs), out: h.out}
}

// WithGroup returns a LogHandler whose attributes are in the group name,
// writing into the same buffer.
func (h *LogHandler) WithGroup(name string) slog.Handler {
	return &LogHandler{h: h.h.WithGroup(name), out: h.out}
}

// Flush writes out what the buffer holds.
func (h *LogHandler) Flush() error { return h.out.flush() }

// logBuffer buffers log lines for w.
type logBuffer struct {
	w io.Writer

	mu    sync.Mutex
	buf   []byte
	timer *time.Timer // flushes the buffer; armed when the buffer stops being empty
}

// Write appends p to the buffer (p holds whole lines). A full buffer is
// written out first, under the lock: a slow writer holds back the loggers.
func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.buf)+len(p) > logBufferSize {
		if err := b.flushLocked(); err != nil {
			return 0, err
		}
		if len(p) >= logBufferSize {
			return b.w.Write(p)
		}
	}
	if len(b.buf) == 0 {
		if b.timer == nil {
			b.timer = time.AfterFunc(LogFlushInterval, func() { b.flush() })
		} else {
			b.timer.Reset(LogFlushInterval)
		}
	}
	b.buf = append(b.buf, p...)
	return len(p), nil
}

// flush writes the buffer out.
func (b *logBuffer) flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.flushLocked()
}

// flushLocked writes the buffer out; on an error its content is dropped,
// as an unbuffered write's would be.
func (b *logBuffer) flushLocked() error {
	if len(b.buf) == 0 {
		return nil
	}
	_, err := b.w.Write(b.buf)
	b.buf = b.buf[:0]
	return err
}
