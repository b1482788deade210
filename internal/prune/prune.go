// Package prune runs retention deletes off the request path: passes of
// small batches with a pause between two, so that no write waits long
// behind them, a pass at start and then at an interval. The webhook
// dispatcher (delivery history) and the event service (events) use it.
package prune

import (
	"context"
	"time"
)

// Pass calls del with limit batch until it deletes fewer than batch rows
// (none is left), pausing pause between two calls; it returns how many rows
// it deleted. It stops at the first error, or with ctx's when ctx ends
// during a pause.
func Pass(ctx context.Context, batch int, pause time.Duration, del func(ctx context.Context, limit int) (int, error)) (int, error) {
	total := 0
	for {
		n, err := del(ctx, batch)
		total += n
		if err != nil || n < batch {
			return total, err
		}
		if !sleep(ctx, pause) {
			return total, ctx.Err()
		}
	}
}

// Loop runs pass at once and then every interval after the end of the
// previous one, until ctx ends.
func Loop(ctx context.Context, interval time.Duration, pass func(ctx context.Context)) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pass(ctx)
		t.Reset(interval)
	}
}

// sleep waits d, or less if ctx ends first; it reports whether ctx is
// still alive.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
