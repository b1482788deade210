package http

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// The request log. A request goroutine only appends a small record to a
// queue (a mutex, a copy, no allocation); the lines are formatted and
// written by whoever empties the queue: a goroutine started when it holds
// accessLogBatch records or LogFlushInterval after it stopped being empty,
// Server.FlushLogs and Server.Close, or (past accessLogMax records: the
// writer cannot keep up) the request goroutine itself, which so waits its
// turn rather than dropping a line.
const (
	// LogFlushInterval bounds how long a request log line waits in the
	// server's queue before it is formatted and handed to the Logger's
	// handler (which may buffer it in turn: slogbuf.FlushInterval).
	LogFlushInterval = 50 * time.Millisecond

	accessLogBatch = 256
	accessLogMax   = 4096

	// accessLogChunk bounds a write of preformatted lines (jsonLines): half
	// the buffer of the slogbuf handler serve uses (slogbuf.BufferSize), so
	// that a batch's lines go into that buffer rather than past it.
	accessLogChunk = 32 << 10
)

// jsonLines is a slog.Handler that takes request log lines formatted here
// (appendAccessJSON), as slog's JSON handler would write them, when its
// JSONLines is not nil: slogbuf.Handler, the handler serve uses.
type jsonLines interface {
	JSONLines() io.Writer
}

// accessRecord is what a request log line says.
type accessRecord struct {
	time     time.Time
	duration time.Duration
	method   string
	route    string
	owner    string
	id       string
	status   int
}

// accessLog queues request log lines for a slog handler.
type accessLog struct {
	handler slog.Handler
	fast    io.Writer // the handler's JSONLines when it has them: lines are formatted here into it

	mu     sync.Mutex
	queue  []accessRecord
	timer  *time.Timer // empties the queue; armed when it stops being empty
	closed bool        // after close, lines are written at once

	writeMu sync.Mutex // held while a batch is written: batches go out in order
	spare   []accessRecord
	buf     []byte
}

func newAccessLog(h slog.Handler) *accessLog {
	l := &accessLog{handler: h}
	if jl, ok := h.(jsonLines); ok {
		l.fast = jl.JSONLines()
	}
	l.timer = time.AfterFunc(time.Hour, l.flush)
	l.timer.Stop()
	return l
}

// enabled reports whether request lines are logged at all (the handler's
// level).
func (l *accessLog) enabled(ctx context.Context) bool {
	return l.handler.Enabled(ctx, slog.LevelInfo)
}

// log queues one line.
func (l *accessLog) log(rec *accessRecord) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		l.writeMu.Lock()
		l.write([]accessRecord{*rec})
		l.writeMu.Unlock()
		if f, ok := l.handler.(interface{ Flush() error }); ok {
			f.Flush()
		}
		return
	}
	l.queue = append(l.queue, *rec)
	n := len(l.queue)
	if n == 1 {
		l.timer.Reset(LogFlushInterval)
	}
	l.mu.Unlock()
	switch {
	case n >= accessLogMax:
		l.flush()
	case n == accessLogBatch:
		go l.flush()
	}
}

// flush writes every queued line.
func (l *accessLog) flush() {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	l.mu.Lock()
	batch := l.queue
	l.queue = l.spare[:0]
	l.mu.Unlock()
	if len(batch) == 0 {
		l.spare = batch
		return
	}
	l.write(batch)
	clear(batch) // let the strings go
	l.spare = batch[:0]
}

// close writes every queued line; lines logged later are written at once.
func (l *accessLog) close() {
	l.mu.Lock()
	l.closed = true
	l.timer.Stop()
	l.mu.Unlock()
	l.flush()
}

// write formats and writes batch; the caller holds writeMu.
func (l *accessLog) write(batch []accessRecord) {
	if l.fast != nil {
		buf := l.buf[:0]
		for i := range batch {
			buf = appendAccessJSON(buf, &batch[i])
			if len(buf) >= accessLogChunk {
				l.fast.Write(buf)
				buf = buf[:0]
			}
		}
		if len(buf) > 0 {
			l.fast.Write(buf)
		}
		l.buf = buf[:0]
		return
	}
	ctx := context.Background()
	for i := range batch {
		l.handler.Handle(ctx, batch[i].record())
	}
}

// record is rec as a slog record: message "request" at level INFO with
// the attributes method, route, status, duration_ms, owner and request_id.
func (rec *accessRecord) record() slog.Record {
	r := slog.NewRecord(rec.time, slog.LevelInfo, "request", 0)
	r.AddAttrs(
		slog.String("method", rec.method),
		slog.String("route", rec.route),
		slog.Int("status", rec.status),
		slog.Float64("duration_ms", durationMS(rec.duration)),
		slog.String("owner", rec.owner),
		slog.String("request_id", rec.id),
	)
	return r
}

// durationMS is d in milliseconds with microsecond precision.
func durationMS(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// appendAccessJSON appends rec's line as slog's JSON handler writes
// rec.record() (TestAccessLogJSON checks they are the same bytes).
func appendAccessJSON(b []byte, rec *accessRecord) []byte {
	b = append(b, `{"time":"`...)
	b = rec.time.Round(0).AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","level":"INFO","msg":"request","method":`...)
	b = appendJSONString(b, rec.method)
	b = append(b, `,"route":`...)
	b = appendJSONString(b, rec.route)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(rec.status), 10)
	b = append(b, `,"duration_ms":`...)
	b = appendJSONFloat(b, durationMS(rec.duration))
	b = append(b, `,"owner":`...)
	b = appendJSONString(b, rec.owner)
	b = append(b, `,"request_id":`...)
	b = appendJSONString(b, rec.id)
	return append(b, "}\n"...)
}

// appendJSONFloat appends f as encoding/json (and so slog) writes it,
// for 0 and 1e-6 <= |f| < 1e21 (every duration in milliseconds with
// microsecond precision is one of them): the shortest 'f' format.
func appendJSONFloat(b []byte, f float64) []byte {
	return strconv.AppendFloat(b, f, 'f', -1, 64)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s quoted as slog's JSON handler does: ", \ and
// control characters escaped, invalid UTF-8 as \ufffd, U+2028 and U+2029
// escaped.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= ' ' && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
