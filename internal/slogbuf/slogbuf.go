// Package slogbuf is the process's log handler: log/slog's JSON (or text)
// handler writing through a buffer, so that a log line costs an append
// rather than a write(2) to stderr. It is named for what it wraps, slog,
// and what it adds, a buffer; it knows nothing of HTTP (the server's request
// log writes its preformatted lines into it through JSONLines).
package slogbuf

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"
)

// Log output buffering.
const (
	// FlushInterval bounds how long a log line waits in a Handler's
	// buffer.
	FlushInterval = 50 * time.Millisecond

	// BufferSize is the buffer size: a write that would overflow it
	// writes the buffer out first.
	BufferSize = 64 << 10
)

// Handler is the process's slog.Handler: slog's JSON handler (or text
// handler) writing into a buffer that goes to the underlying writer in
// large writes, at the latest FlushInterval after a line entered it, at
// once for a line at level WARN or above, and on Flush. The HTTP server
// flushes it at Close (when it is its Logger's handler: any handler with a
// Flush method), and so must the program after its last log line. Safe for
// concurrent use.
//
// Given a Handler in JSON mode, with neither ReplaceAttr nor AddSource and
// no attributes or groups added, JSONLines lets a caller append lines it
// formatted itself in the same form as slog's JSON handler (the server's
// request log does, several times faster).
type Handler struct {
	h     slog.Handler // slog's handler, writing into out
	out   *buffer
	plain bool // JSON, no ReplaceAttr, no AddSource, no With: lines may be appended to out directly
}

var _ slog.Handler = (*Handler)(nil)

// New returns a Handler writing to w: JSON lines, or slog's text format
// when text is true. opts may be nil.
func New(w io.Writer, text bool, opts *slog.HandlerOptions) *Handler {
	if opts == nil {
		opts = &slog.HandlerOptions{}
	}
	out := &buffer{w: w}
	h := &Handler{out: out}
	if text {
		h.h = slog.NewTextHandler(out, opts)
	} else {
		h.h = slog.NewJSONHandler(out, opts)
		h.plain = opts.ReplaceAttr == nil && !opts.AddSource
	}
	return h
}

// Enabled reports whether the handler handles records at level l.
func (h *Handler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

// Handle formats r into the buffer and, when r is a warning or an error,
// writes the buffer out.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	err := h.h.Handle(ctx, r)
	if r.Level >= slog.LevelWarn {
		if ferr := h.out.flush(); err == nil {
			err = ferr
		}
	}
	return err
}

// WithAttrs returns a Handler whose records carry attrs too, writing
// into the same buffer.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &Handler{h: h.h.WithAttrs(attrs), out: h.out}
}

// WithGroup returns a Handler whose attributes are in the group name,
// writing into the same buffer.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{h: h.h.WithGroup(name), out: h.out}
}

// Flush writes out what the buffer holds.
func (h *Handler) Flush() error { return h.out.flush() }

// JSONLines returns the writer behind the handler's buffer when the handler
// writes records exactly as slog's JSON handler does with no options (JSON,
// no ReplaceAttr, no AddSource, no attributes or groups added), so that whole
// lines formatted the same way may be written there directly, each Write
// holding whole lines (at most BufferSize/2 bytes keeps them in the buffer);
// otherwise nil.
func (h *Handler) JSONLines() io.Writer {
	if !h.plain {
		return nil
	}
	return h.out
}

// buffer buffers log lines for w.
type buffer struct {
	w io.Writer

	mu    sync.Mutex
	buf   []byte
	timer *time.Timer // flushes the buffer; armed when the buffer stops being empty
}

// Write appends p to the buffer (p holds whole lines). A full buffer is
// written out first, under the lock: a slow writer holds back the loggers.
func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.buf)+len(p) > BufferSize {
		if err := b.flushLocked(); err != nil {
			return 0, err
		}
		if len(p) >= BufferSize {
			return b.w.Write(p)
		}
	}
	if len(b.buf) == 0 {
		if b.timer == nil {
			b.timer = time.AfterFunc(FlushInterval, func() { b.flush() })
		} else {
			b.timer.Reset(FlushInterval)
		}
	}
	b.buf = append(b.buf, p...)
	return len(p), nil
}

// flush writes the buffer out.
func (b *buffer) flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.flushLocked()
}

// flushLocked writes the buffer out; on an error its content is dropped,
// as an unbuffered write's would be.
func (b *buffer) flushLocked() error {
	if len(b.buf) == 0 {
		return nil
	}
	_, err := b.w.Write(b.buf)
	b.buf = b.buf[:0]
	return err
}
