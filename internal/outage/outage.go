// Package outage logs the failures of a repeated operation (a claim loop, a
// pruning pass, a readiness probe) as outages: one line when the operation
// starts failing, one when it succeeds again, with how many attempts
// failed and for how long, instead of a line per failed attempt (a
// claim loop retrying every half second would log dozens a minute).
// Each failed attempt in between is logged at debug level. The dispatcher,
// the event pruner and /readyz use it, one Log per operation.
package outage

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Log tracks one operation's outage. Its methods may be called from
// several goroutines.
type Log struct {
	logger *slog.Logger
	level  slog.Level
	op     string
	now    func() time.Time

	mu       sync.Mutex
	failing  bool
	since    time.Time
	failures int
}

// New returns the Log of the operation op (e.g. "webhook: claim tasks"),
// whose outages start with a line at level (their end is logged at
// warning level, so that whoever sees the start sees the end); a nil
// logger discards.
func New(logger *slog.Logger, level slog.Level, op string) *Log {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Log{logger: logger, level: level, op: op, now: time.Now}
}

// Fail records a failed attempt with its error and attributes: the first
// one of an outage logs "OP: outage started" at the Log's level, the
// others log "OP: failed again" at debug level.
func (l *Log) Fail(ctx context.Context, err error, attrs ...any) {
	l.mu.Lock()
	l.failures++
	first := !l.failing
	if first {
		l.failing, l.since = true, l.now()
	}
	n := l.failures
	l.mu.Unlock()
	args := append([]any{"err", err}, attrs...)
	if first {
		l.logger.Log(ctx, l.level, l.op+": outage started", args...)
		return
	}
	l.logger.Log(ctx, slog.LevelDebug, l.op+": failed again", append(args, "failed_attempts", n)...)
}

// OK records a successful attempt: after failures it logs "OP: outage
// ended" with failed_attempts and the outage's duration.
func (l *Log) OK(ctx context.Context) {
	l.mu.Lock()
	if !l.failing {
		l.mu.Unlock()
		return
	}
	n, took := l.failures, l.now().Sub(l.since)
	l.failing, l.failures = false, 0
	l.mu.Unlock()
	l.logger.Log(ctx, slog.LevelWarn, l.op+": outage ended",
		"failed_attempts", n, "duration", took.Round(time.Millisecond))
}

// Failing reports whether the operation's last attempt failed.
func (l *Log) Failing() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failing
}
